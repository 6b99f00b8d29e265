package agent

import "golang.org/x/sys/unix"

// discardInput drops what was typed on the terminal fd but not yet read
// (TIOCFLUSH with FREAD, 1 in <sys/file.h>).
func discardInput(fd int) error { return unix.IoctlSetPointerInt(fd, unix.TIOCFLUSH, 1) }
