package cli

import (
	"os"
	"testing"
)

// TestPeerCredOfLinux checks SO_PEERCRED: uid and pid are both reported.
func TestPeerCredOfLinux(t *testing.T) {
	checkPeerCredIsThisProcess(t)
	listener, dialer := peerCredBothEnds(t)
	if listener.PID != int32(os.Getpid()) || dialer.PID != int32(os.Getpid()) {
		t.Fatalf("pids = %d, %d; SO_PEERCRED reports the pid, want %d", listener.PID, dialer.PID, os.Getpid())
	}
}
