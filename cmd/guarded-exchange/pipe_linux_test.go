package main

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// shrinkPipe makes the pipe of f (either end) hold one page, and returns
// its capacity: a writer that finds the page in use must wait for a
// reader, whatever the machine's load.
func shrinkPipe(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	var ioErr error
	if err := rc.Control(func(fd uintptr) { size, ioErr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, os.Getpagesize()) }); err != nil {
		t.Fatal(err)
	}
	if ioErr != nil {
		t.Fatal(ioErr)
	}
	return size
}

// pipeFill reports how many bytes wait in the pipe of f (either end) and
// the pipe's capacity, so a test can tell a full pipe (a writer that
// must wait) from a slow one without timing it.
func pipeFill(t *testing.T, f *os.File) (queued, capacity int) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		// TIOCINQ is FIONREAD: the bytes waiting in the pipe.
		if queued, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ); ioErr != nil {
			return
		}
		capacity, ioErr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
	}); err != nil {
		t.Fatal(err)
	}
	if ioErr != nil {
		t.Fatal(ioErr)
	}
	return queued, capacity
}
