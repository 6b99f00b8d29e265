//go:build !linux && !darwin

package cli

import "errors"

// peerCredFD has no implementation on this system: every peer check
// refuses, so the control and relay sockets accept no one.
func peerCredFD(int) (PeerCred, error) {
	return PeerCred{}, errors.New("peer credentials are not supported on this system (Linux and macOS are)")
}
