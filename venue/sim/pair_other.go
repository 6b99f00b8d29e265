//go:build !unix

package sim

import "net"

// connPair returns the two ends of a synchronous in-memory pipe where Unix
// socket pairs do not exist.
func connPair() (net.Conn, net.Conn, error) {
	a, b := net.Pipe()
	return a, b, nil
}
