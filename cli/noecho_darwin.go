package cli

import "golang.org/x/sys/unix"

// The termios ioctls of echoOff (noecho_termios.go) on macOS.
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
