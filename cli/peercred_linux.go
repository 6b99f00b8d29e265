package cli

import "golang.org/x/sys/unix"

// peerCredFD reads SO_PEERCRED: the uid and pid the kernel recorded when
// the peer connected (or listened).
func peerCredFD(fd int) (PeerCred, error) {
	u, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return PeerCred{}, err
	}
	return PeerCred{UID: u.Uid, PID: u.Pid}, nil
}
