//go:build !linux && !darwin

package cli

// echoOff does nothing where termios is not reached this way;
// term.ReadPassword still turns echo off while it reads.
func echoOff(int) (func(), error) { return func() {}, nil }
