package cli

import "golang.org/x/sys/unix"

// peerCredFD reads LOCAL_PEERCRED (the peer's effective uid, what
// getpeereid returns) and LOCAL_PEERPID. A pid the kernel does not give
// is 0; the uid is required.
func peerCredFD(fd int) (PeerCred, error) {
	x, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return PeerCred{}, err
	}
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		pid = 0
	}
	return PeerCred{UID: x.Uid, PID: int32(pid)}, nil
}
