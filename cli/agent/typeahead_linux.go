package agent

import "golang.org/x/sys/unix"

// discardInput drops what was typed on the terminal fd but not yet read.
func discardInput(fd int) error { return unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH) }
