package cli

import "golang.org/x/sys/unix"

// The termios ioctls of echoOff (noecho_termios.go) on Linux.
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)
