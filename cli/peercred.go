package cli

import (
	"errors"
	"net"
)

// PeerCred is who is on the other end of a Unix socket, as the kernel
// recorded it: the peer's effective uid and, where the platform reports
// it, its pid (0 when unknown).
type PeerCred struct {
	UID uint32
	PID int32
}

// PeerCredOf asks the kernel who is on conn's other end: for a connecting
// client, the process that connected; for a dialer, the process that
// called listen. It uses each platform's own call (SO_PEERCRED on Linux,
// LOCAL_PEERCRED and LOCAL_PEERPID on macOS); elsewhere it fails, so every
// check built on it refuses (see docs/decisions.md, D102).
func PeerCredOf(conn net.Conn) (PeerCred, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return PeerCred{}, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return PeerCred{}, err
	}
	var cred PeerCred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = peerCredFD(int(fd)) }); err != nil {
		return PeerCred{}, err
	}
	return cred, cerr
}
