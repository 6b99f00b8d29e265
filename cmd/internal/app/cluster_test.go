package app

import (
	"bytes"
	"context"
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
	if j, err := clusterShardCount(ctx, etcd, first, id); err != nil || j.Count != 8 || j.Claim == clientv3.NoLease || j.EtcdClusterID == "" {
		t.Fatalf("create: %+v %v", j, err)
	}
	resp, err := etcd.Get(ctx, "/guarded-exchange/c1/shards/count")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "8" {
		t.Fatalf("count key: %v %v", resp, err)
	}
	// The default count (not given) joins whatever the cluster has.
	if j, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c1", Shards: cli.DefaultClusterShards}, id); err != nil || j.Count != 8 || j.Claim != clientv3.NoLease {
		t.Fatalf("join: %+v %v", j, err)
	}
	// The same count given explicitly joins too.
	if j, err := clusterShardCount(ctx, etcd, first, id); err != nil || j.Count != 8 {
		t.Fatalf("join with the same count: %+v %v", j, err)
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
	if j, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c2", Shards: 3}, other); err != nil || j.Count != 3 {
		t.Fatalf("second cluster: %+v %v", j, err)
	}
	// A count etcd holds that is not one refuses.
	if _, err := etcd.Put(ctx, "/guarded-exchange/c3/shards/count", "lots"); err != nil {
		t.Fatal(err)
	}
	if _, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c3", Shards: 16}, id); err == nil || !strings.Contains(err.Error(), "not a shard count") {
		t.Fatalf("bad count: %v", err)
	}
}
