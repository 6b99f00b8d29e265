//go:build !linux

package main

import (
	"os"
	"testing"
)

// pipeFill needs Linux (FIONREAD and F_GETPIPE_SZ on a pipe); elsewhere
// the test that asks is skipped.
func pipeFill(t *testing.T, _ *os.File) (queued, capacity int) {
	t.Skip("needs Linux to read a pipe's fill")
	return 0, 0
}

// shrinkPipe needs Linux (F_SETPIPE_SZ); elsewhere the test is skipped.
func shrinkPipe(t *testing.T, _ *os.File) int {
	t.Skip("needs Linux to size a pipe")
	return 0
}
