//go:build linux || darwin

package cli

import "golang.org/x/sys/unix"

// echoOff turns the terminal's echo off until restore is called. It is
// called before a prompt is printed, so that what the user types right
// after the prompt appears is never shown: term.ReadPassword alone turns
// echo off only once it starts reading, after the prompt.
func echoOff(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}
