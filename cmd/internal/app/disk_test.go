package app

import (
	"strings"
	"testing"
)

// GX_DISK_RESERVE_BYTES: default 256 MiB, a whole number of bytes, and
// anything else refuses start without echoing the value.
func TestDiskMarginFromEnvironment(t *testing.T) {
	t.Setenv("GX_DISK_RESERVE_BYTES", "")
	if v, err := diskMargin(); err != nil || v != DefaultDiskMargin {
		t.Fatalf("unset: %d %v", v, err)
	}
	t.Setenv("GX_DISK_RESERVE_BYTES", "1048576")
	if v, err := diskMargin(); err != nil || v != 1<<20 {
		t.Fatalf("1 MiB: %d %v", v, err)
	}
	for _, bad := range []string{"-1", "1e9", "64MiB", " 5"} {
		t.Setenv("GX_DISK_RESERVE_BYTES", bad)
		if _, err := diskMargin(); err == nil || !strings.Contains(err.Error(), "GX_DISK_RESERVE_BYTES") || strings.Contains(err.Error(), bad) {
			t.Fatalf("%q: want a refusal naming the variable, not the value: %v", bad, err)
		}
	}
}
