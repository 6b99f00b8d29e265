package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

// The first member creates the shard count and the master key id in one
// transaction; later members read them. A member that names another
// count, or holds another master key, refuses to start naming both.
func TestClusterShardCount(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, 32)
	id := masterKeyID(key)
	first := &cli.ClusterOptions{Name: "c1", Etcd: []string{srv.Endpoint()}, Shards: 8, ShardsGiven: true}
	if n, err := clusterShardCount(ctx, etcd, first, id); err != nil || n != 8 {
		t.Fatalf("create: %d %v", n, err)
	}
	resp, err := etcd.Get(ctx, "/guarded-exchange/c1/shards/count")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "8" {
		t.Fatalf("count key: %v %v", resp, err)
	}
	// The default count (not given) joins whatever the cluster has.
	if n, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c1", Shards: cli.DefaultClusterShards}, id); err != nil || n != 8 {
		t.Fatalf("join: %d %v", n, err)
	}
	// The same count given explicitly joins too.
	if n, err := clusterShardCount(ctx, etcd, first, id); err != nil || n != 8 {
		t.Fatalf("join with the same count: %d %v", n, err)
	}
	_, err = clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c1", Shards: 16, ShardsGiven: true}, id)
	if err == nil || !strings.Contains(err.Error(), "has 8 shards, not the 16 of --cluster-shards") {
		t.Fatalf("other count: %v", err)
	}
	other := masterKeyID(bytes.Repeat([]byte{9}, 32))
	_, err = clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c1", Shards: 16}, other)
	if err == nil || !strings.Contains(err.Error(), "master key is not the one cluster \"c1\" was created with") || strings.Contains(err.Error(), id) {
		t.Fatalf("other key: %v", err)
	}
	// Another cluster on the same etcd is its own.
	if n, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c2", Shards: 3}, other); err != nil || n != 3 {
		t.Fatalf("second cluster: %d %v", n, err)
	}
	// A count etcd holds that is not one refuses.
	if _, err := etcd.Put(ctx, "/guarded-exchange/c3/shards/count", "lots"); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c3", Shards: 16}, id); err == nil || !strings.Contains(err.Error(), "not a shard count") {
		t.Fatalf("bad count: %v", err)
	}
}

// --cluster-data keeps the cluster's identity: the first member writes
// it, a member of another cluster, count or master key is refused.
func TestClusterDataIdentity(t *testing.T) {
	dir := t.TempDir()
	want := clusterIdentity{Name: "c1", Shards: 8, MasterKeyID: "abc"}
	if err := checkClusterData(dir, want); err != nil {
		t.Fatal(err)
	}
	if err := checkClusterData(dir, want); err != nil {
		t.Fatalf("second member: %v", err)
	}
	for _, bad := range []clusterIdentity{{"c2", 8, "abc"}, {"c1", 16, "abc"}, {"c1", 8, "def"}} {
		if err := checkClusterData(dir, bad); err == nil || !strings.Contains(err.Error(), "a data directory serves one cluster") {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != clusterFileName {
		t.Fatalf("data dir holds %v", entries)
	}
	if err := os.WriteFile(filepath.Join(dir, clusterFileName), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkClusterData(dir, want); err == nil || !strings.Contains(err.Error(), "not a cluster identity") {
		t.Fatalf("damaged: %v", err)
	}
}
