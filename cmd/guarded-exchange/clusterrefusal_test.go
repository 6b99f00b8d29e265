package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A member refuses to start, before it touches etcd, on the paper venue
// (a simulator inside one process cannot be shared) and on a
// --cluster-data that is not a directory (an unmounted shared volume).
func TestClusterMemberRefusesPaperAndMissingData(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	args := func(data string) []string {
		return []string{"serve", "--transport", "http", "--listen", "127.0.0.1:0", "--cluster", "c", "--cluster-etcd", "127.0.0.1:9",
			"--cluster-advertise", "127.0.0.1:9", "--cluster-data", data}
	}
	r := run(t, in.env(), "", args(t.TempDir())...)
	if r.code != 2 || !strings.Contains(r.stderr, "the members of a cluster cannot share it") || r.stdout != "" {
		t.Fatalf("paper: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	demo := in.env("GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=http://127.0.0.1:9", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true")
	missing := filepath.Join(t.TempDir(), "not-mounted")
	r = run(t, demo, "", args(missing)...)
	if r.code != 2 || !strings.Contains(r.stderr, "--cluster-data "+missing+" is not a directory") || r.stdout != "" {
		t.Fatalf("missing data dir: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}
