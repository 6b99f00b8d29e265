package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

// dataTestEtcd starts an embedded etcd and a client of it.
func dataTestEtcd(t *testing.T) (*etcdtest.Server, *clientv3.Client) {
	t.Helper()
	srv := etcdtest.Start(t)
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	return srv, etcd
}

var dataTestKeyID = masterKeyID(bytes.Repeat([]byte{7}, 32))

// startData is what serveCluster does with etcd and --cluster-data
// before it hosts any shard.
func startData(ctx context.Context, etcd *clientv3.Client, name, dir string) error {
	j, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: name, Shards: 8}, dataTestKeyID)
	if err != nil {
		return err
	}
	return initClusterData(ctx, etcd, name, dir, clusterIdentity{Name: name, Shards: j.Count, MasterKeyID: dataTestKeyID}, j)
}

func readIdentity(t *testing.T, dir string) clusterIdentity {
	t.Helper()
	got, ok, err := readClusterData(dir)
	if err != nil || !ok {
		t.Fatalf("%s: %v %v", dir, ok, err)
	}
	return got
}

func etcdValue(t *testing.T, etcd *clientv3.Client, key string) (string, bool) {
	t.Helper()
	resp, err := etcd.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}

func isEmptyDir(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries) == 0
}

// TestJoiningMemberRefusesEmptyData: a member that joins a cluster which
// already exists in etcd, on a --cluster-data that is an empty directory
// (the shared volume's mount point, not mounted), must refuse to start:
// otherwise it writes a fresh cluster.json there, hosts shards on empty
// journals under a greater epoch, and the users' records split over two
// directories (docs/cluster.md "Running a member"). Only the member
// that created the cluster initialises the directory (D201).
func TestJoiningMemberRefusesEmptyData(t *testing.T) {
	_, etcd := dataTestEtcd(t)
	ctx := context.Background()
	shared, unmounted := t.TempDir(), t.TempDir()
	// The first member creates the cluster and its data directory.
	if err := startData(ctx, etcd, "c1", shared); err != nil {
		t.Fatal(err)
	}
	// A second member joins with the mount point unmounted.
	err := startData(ctx, etcd, "c1", unmounted)
	if err == nil || !strings.Contains(err.Error(), "not the cluster's shared volume") {
		t.Fatalf("a member joining an existing cluster on an empty --cluster-data: %v", err)
	}
	if !isEmptyDir(t, unmounted) {
		t.Fatal("the refused member wrote into its empty --cluster-data")
	}
	// One with the volume mounted joins.
	if err := startData(ctx, etcd, "c1", shared); err != nil {
		t.Fatalf("member on the shared volume: %v", err)
	}
}

// The initialised directory holds the cluster's identity, etcd's
// cluster id and a data id etcd holds too; the claim is gone. A
// directory of another cluster, count, key or data id is refused, as is
// a damaged cluster.json.
func TestClusterDataIdentity(t *testing.T) {
	_, etcd := dataTestEtcd(t)
	ctx := context.Background()
	dir := t.TempDir()
	if err := startData(ctx, etcd, "c1", dir); err != nil {
		t.Fatal(err)
	}
	got := readIdentity(t, dir)
	if got.Name != "c1" || got.Shards != 8 || got.MasterKeyID != dataTestKeyID || len(got.EtcdClusterID) != 16 || len(got.DataID) != 32 {
		t.Fatalf("cluster.json: %+v", got)
	}
	if v, ok := etcdValue(t, etcd, clusterDataInitKey("c1")); !ok || v != got.DataID {
		t.Fatalf("etcd data id %q %v, file %q", v, ok, got.DataID)
	}
	if _, ok := etcdValue(t, etcd, clusterDataClaimKey("c1")); ok {
		t.Fatal("the claim outlived the initialisation")
	}
	// Another cluster on the same etcd cannot take the directory.
	if err := startData(ctx, etcd, "c2", dir); err == nil || !strings.Contains(err.Error(), "a data directory serves one cluster") {
		t.Fatalf("second cluster on one directory: %v", err)
	}
	want := clusterIdentity{Name: "c1", Shards: 8, MasterKeyID: dataTestKeyID, EtcdClusterID: got.EtcdClusterID}
	if err := checkClusterData(dir, want, got.DataID); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []clusterIdentity{
		{"c2", 8, dataTestKeyID, got.EtcdClusterID, ""}, {"c1", 16, dataTestKeyID, got.EtcdClusterID, ""}, {"c1", 8, "def", got.EtcdClusterID, ""},
	} {
		if err := checkClusterData(dir, bad, got.DataID); err == nil || !strings.Contains(err.Error(), "a data directory serves one cluster") {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	if err := checkClusterData(dir, want, "0123"); err == nil || !strings.Contains(err.Error(), "another directory than the one the cluster was initialised on") {
		t.Fatalf("other data id: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != clusterFileName {
		t.Fatalf("data dir holds %v", entries)
	}
	if err := os.WriteFile(filepath.Join(dir, clusterFileName), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := startData(ctx, etcd, "c1", dir); err == nil || !strings.Contains(err.Error(), "not a cluster identity") {
		t.Fatalf("damaged: %v", err)
	}
}

// A creator that dies between etcd's create and cluster.json blocks the
// others only while its claim's lease lasts; then exactly one of the
// members starting at once takes the claim and initialises its
// directory, and the others are refused. A claimant that dies between
// cluster.json and etcd's data id leaves a file the next claimant adopts.
func TestClusterDataRecovery(t *testing.T) {
	_, etcd := dataTestEtcd(t)
	ctx := context.Background()

	// Died after the create, before cluster.json.
	j, err := clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c1", Shards: 8}, dataTestKeyID)
	if err != nil || j.Claim == clientv3.NoLease {
		t.Fatalf("create: %+v %v", j, err)
	}
	waiting := t.TempDir()
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	err = startData(wctx, etcd, "c1", waiting)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "another member is initialising") {
		t.Fatalf("joiner while the creator's claim lasts: %v", err)
	}
	if !isEmptyDir(t, waiting) {
		t.Fatal("a waiting member wrote into its directory")
	}
	revokeClaim(etcd, j.Claim) // the dead creator's lease expires
	dirs := make([]string, 4)
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = startData(ctx, etcd, "c1", dirs[i])
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("members %d and %d both initialised the cluster's data", winner, i)
			}
			winner = i
		case !strings.Contains(err.Error(), "not the cluster's shared volume"):
			t.Fatalf("member %d: %v", i, err)
		case !isEmptyDir(t, dirs[i]):
			t.Fatalf("refused member %d wrote into its directory", i)
		}
	}
	if winner < 0 {
		t.Fatal("no member initialised the cluster's data after the creator's claim expired")
	}
	if v, _ := etcdValue(t, etcd, clusterDataInitKey("c1")); v != readIdentity(t, dirs[winner]).DataID {
		t.Fatalf("etcd data id %q is not the winner's", v)
	}

	// Died after cluster.json, before etcd's data id.
	j, err = clusterShardCount(ctx, etcd, &cli.ClusterOptions{Name: "c2", Shards: 8}, dataTestKeyID)
	if err != nil || j.Claim == clientv3.NoLease {
		t.Fatalf("create: %+v %v", j, err)
	}
	shared := t.TempDir()
	dataID, err := writeClusterData(shared, clusterIdentity{Name: "c2", Shards: 8, MasterKeyID: dataTestKeyID, EtcdClusterID: j.EtcdClusterID})
	if err != nil {
		t.Fatal(err)
	}
	revokeClaim(etcd, j.Claim)
	if _, ok := etcdValue(t, etcd, clusterDataInitKey("c2")); ok {
		t.Fatal("data id in etcd before the claimant wrote it")
	}
	if err := startData(ctx, etcd, "c2", shared); err != nil {
		t.Fatalf("next member on the half-initialised directory: %v", err)
	}
	if v, _ := etcdValue(t, etcd, clusterDataInitKey("c2")); v != dataID || readIdentity(t, shared).DataID != dataID {
		t.Fatalf("etcd data id %q, file %q, written %q", v, readIdentity(t, shared).DataID, dataID)
	}
	if err := startData(ctx, etcd, "c2", t.TempDir()); err == nil || !strings.Contains(err.Error(), "not the cluster's shared volume") {
		t.Fatalf("empty directory after the recovery: %v", err)
	}
}

// A data directory initialised under one etcd cluster is refused by a
// member of another etcd cluster: one where the cluster is created anew,
// and one that holds the same keys (an etcd restored from a backup).
func TestClusterDataOtherEtcd(t *testing.T) {
	_, etcd1 := dataTestEtcd(t)
	_, etcd2 := dataTestEtcd(t)
	ctx := context.Background()
	dir := t.TempDir()
	if err := startData(ctx, etcd1, "c1", dir); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, clusterFileName))
	if err != nil {
		t.Fatal(err)
	}
	// A second etcd on which the cluster does not exist yet.
	err = startData(ctx, etcd2, "c1", dir)
	if err == nil || !strings.Contains(err.Error(), "was initialised under etcd cluster") {
		t.Fatalf("another etcd creating the cluster on the directory: %v", err)
	}
	// The same keys in another etcd cluster, data id included.
	dataID, _ := etcdValue(t, etcd1, clusterDataInitKey("c1"))
	if _, err := etcd2.Put(ctx, clusterDataInitKey("c1"), dataID); err != nil {
		t.Fatal(err)
	}
	err = startData(ctx, etcd2, "c1", dir)
	if err == nil || !strings.Contains(err.Error(), "was initialised under etcd cluster") {
		t.Fatalf("restored etcd: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, clusterFileName))
	if !bytes.Equal(before, after) {
		t.Fatal("a refused member changed cluster.json")
	}
	var id clusterIdentity
	if err := json.Unmarshal(after, &id); err != nil || id.EtcdClusterID == "" {
		t.Fatalf("cluster.json: %s %v", after, err)
	}
	// The first etcd's members still start on it.
	if err := startData(ctx, etcd1, "c1", dir); err != nil {
		t.Fatal(err)
	}
}
