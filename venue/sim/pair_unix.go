//go:build unix

package sim

import (
	"net"
	"os"
	"syscall"
)

// connPair returns the two ends of an anonymous connected Unix socket pair:
// it has no name in any namespace, so only this process holds it, and the
// kernel buffers each direction like a TCP connection would.
func connPair() (net.Conn, net.Conn, error) {
	// The fork lock keeps a concurrent exec from inheriting the pair
	// before close-on-exec is set (the pattern of package net).
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	a, err := fileConn(fds[0], "sim-pair-client")
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	b, err := fileConn(fds[1], "sim-pair-server")
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, b, nil
}

// fileConn turns fd into a net.Conn; net.FileConn duplicates it, so the
// original is closed here.
func fileConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return net.FileConn(f)
}
