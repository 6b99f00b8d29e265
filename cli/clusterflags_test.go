package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The cluster flags fail closed: each bad combination exits 2 with its
// own message and serves nothing.
func TestClusterFlagsRefused(t *testing.T) {
	full := []string{"serve", "--transport", "http", "--cluster", "c1", "--cluster-etcd", "http://127.0.0.1:2379",
		"--cluster-advertise", "127.0.0.1:7001", "--cluster-data", "/tmp/d"}
	with := func(extra ...string) []string { return append(append([]string{}, full...), extra...) }
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(full); i++ {
			if full[i] == flag {
				i++
				continue
			}
			out = append(out, full[i])
		}
		return out
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--cluster", "c1"}, "--cluster: a cluster member serves remote mode: add --transport http"},
		{[]string{"serve", "--transport", "stdio", "--cluster-data", "/tmp/d"}, "--cluster-data: a cluster member serves remote mode"},
		{without("--cluster"), "--cluster-etcd needs --cluster NAME"},
		{without("--cluster-etcd"), "--cluster needs --cluster-etcd"},
		{without("--cluster-advertise"), "--cluster needs --cluster-advertise"},
		{without("--cluster-data"), "--cluster needs --cluster-data"},
		{[]string{"serve", "--transport", "http", "--cluster", "c1"}, "--cluster needs --cluster-etcd, --cluster-advertise, --cluster-data"},
		{with("--cluster", "a/b"), "--cluster: the name must be"},
		{with("--cluster-etcd", "http://a:1,,http://b:2"), "--cluster-etcd: an empty endpoint"},
		{with("--cluster-advertise", "127.0.0.1"), `--cluster-advertise "127.0.0.1": want HOST:PORT`},
		{with("--cluster-advertise", ":7001"), "want HOST:PORT"},
		{with("--cluster-advertise", "127.0.0.1:0"), "the port must be 1..65535"},
		{with("--cluster-advertise", "127.0.0.1:70000"), "the port must be 1..65535"},
		{with("--cluster-advertise", "0.0.0.0:7001"), "not the wildcard"},
		{with("--cluster-shards", "0"), "--cluster-shards must be 1..1024, got 0"},
		{with("--cluster-shards", "1025"), "--cluster-shards must be 1..1024, got 1025"},
		{with("--cluster-lock-ttl", "10ms"), "--cluster-lock-ttl must be at least 1s"},
	}
	for _, c := range cases {
		rt := &fakeRuntime{}
		code, _, stderr := runCLI(t, rt, "", c.args...)
		if code != ExitCannot || !strings.Contains(stderr, c.want) || len(rt.served) != 0 {
			t.Errorf("%v: exit %d, served %d, stderr %q; want exit 2 with %q", c.args, code, len(rt.served), stderr, c.want)
		}
	}
}

// A complete set of cluster flags reaches the runtime checked; without
// them serve is local mode, as before (Cluster nil).
func TestClusterFlagsAccepted(t *testing.T) {
	rt := &fakeRuntime{}
	code, _, stderr := runCLI(t, rt, "", "serve", "--transport", "http", "--cluster", "prod-1",
		"--cluster-etcd", "http://127.0.0.1:2379, http://127.0.0.1:2479", "--cluster-advertise", "10.0.0.5:7001",
		"--cluster-data", "/srv/gx", "--cluster-lock-ttl", "2s")
	if code != ExitOK || len(rt.served) != 1 {
		t.Fatalf("exit %d, served %d: %s", code, len(rt.served), stderr)
	}
	want := &ClusterOptions{Name: "prod-1", Etcd: []string{"http://127.0.0.1:2379", "http://127.0.0.1:2479"}, Advertise: "10.0.0.5:7001",
		DataDir: "/srv/gx", Shards: DefaultClusterShards, LockTTL: 2 * time.Second}
	if got := rt.served[0].Cluster; !reflect.DeepEqual(got, want) {
		t.Fatalf("cluster options = %+v, want %+v", got, want)
	}
	rt = &fakeRuntime{}
	if code, _, stderr := runCLI(t, rt, "", "serve", "--transport", "http", "--cluster=c", "--cluster-etcd=e:1", "--cluster-advertise=[::1]:9",
		"--cluster-data=d", "--cluster-shards=1024"); code != ExitOK || rt.served[0].Cluster.Shards != 1024 || !rt.served[0].Cluster.ShardsGiven {
		t.Fatalf("explicit shards: exit %d %s %+v", code, stderr, rt.served)
	}
	for _, args := range [][]string{{"serve"}, {"serve", "--transport", "http"}} {
		rt = &fakeRuntime{}
		if code, _, stderr := runCLI(t, rt, "", args...); code != ExitOK || rt.served[0].Cluster != nil {
			t.Fatalf("%v: exit %d %s, cluster %+v", args, code, stderr, rt.served[0].Cluster)
		}
	}
}
