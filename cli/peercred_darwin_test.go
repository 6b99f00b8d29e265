package cli

import "testing"

// TestPeerCredOfDarwin is the macOS twin of TestPeerCredOfLinux: it checks
// LOCAL_PEERCRED (the uid getpeereid returns) and LOCAL_PEERPID.
func TestPeerCredOfDarwin(t *testing.T) {
	checkPeerCredIsThisProcess(t)
}
