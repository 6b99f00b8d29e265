package cli

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// peerCredBothEnds listens on a Unix socket in a temporary directory,
// connects to it from this process and returns what PeerCredOf reports on
// the dialer's end (the listener) and on the accepted end (the dialer).
func peerCredBothEnds(t *testing.T) (listener, dialer PeerCred) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gxpc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer s.Close()
	if listener, err = PeerCredOf(c); err != nil {
		t.Fatalf("PeerCredOf(dialer's end): %v", err)
	}
	if dialer, err = PeerCredOf(s); err != nil {
		t.Fatalf("PeerCredOf(accepted end): %v", err)
	}
	return listener, dialer
}

// checkPeerCredIsThisProcess is the platform test's body: both ends of a
// connection this process made to itself report this process's uid and,
// where the platform gives one, its pid.
func checkPeerCredIsThisProcess(t *testing.T) {
	t.Helper()
	listener, dialer := peerCredBothEnds(t)
	for name, got := range map[string]PeerCred{"listener": listener, "dialer": dialer} {
		if got.UID != uint32(os.Getuid()) {
			t.Errorf("%s uid = %d, want this process's %d", name, got.UID, os.Getuid())
		}
		if got.PID != 0 && got.PID != int32(os.Getpid()) {
			t.Errorf("%s pid = %d, want this process's %d (or 0: not reported)", name, got.PID, os.Getpid())
		}
	}
}

func TestPeerCredOfRefusesANonUnixConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := PeerCredOf(c); err == nil {
		t.Fatal("PeerCredOf on a TCP connection succeeded; a peer check built on it would pass without a kernel answer")
	}
}
