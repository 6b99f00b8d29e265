package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/fence"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/shard"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

func etcdClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// registerMember writes a member key as protoactor's etcd provider does:
// <members>/<cluster>/<cluster>@<id>, the provider's Node as JSON.
func registerMember(t *testing.T, c *clientv3.Client, cluster, id, host string, port int) {
	t.Helper()
	n := etcd.NewNode(cluster+"@"+id, host, port, []string{shard.KindName})
	b, err := n.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(context.Background(), "/guarded-exchange/members/"+cluster+"/"+n.ID, string(b)); err != nil {
		t.Fatal(err)
	}
}

func takeShard(t *testing.T, c *clientv3.Client, cluster string, n int, owner string) *fence.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := fence.Acquire(ctx, c, fmt.Sprintf("/guarded-exchange/%s/shards/%d/lock/", cluster, n), fence.Options{TTL: 5 * time.Second, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	return l
}

// writeShardJournal writes shard n's journal under data as its owner of
// l's epoch would: version 2 frames of the epoch, opened by the
// shard_owner record, then recs.
func writeShardJournal(t *testing.T, l *fence.Lock, data string, n int, member string, recs ...wal.Entry) {
	t.Helper()
	log, _, err := wal.Open(shardJournalDir(data, n), wal.Options{Epoch: l.Epoch()})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	owner, err := json.Marshal(shard.OwnerPayload{Shard: n, Epoch: l.Epoch(), Member: member})
	if err != nil {
		t.Fatal(err)
	}
	entries := append([]wal.Entry{{Type: uint16(messages.RecordShardOwner), Actor: messages.ActorSystem, Payload: owner}}, recs...)
	if _, err := log.Append(entries); err != nil {
		t.Fatal(err)
	}
	res, err := wal.VerifyWith(shardJournalDir(data, n), wal.VerifyOptions{OwnerType: uint16(messages.RecordShardOwner)})
	if err != nil || len(res.Problems) > 0 {
		t.Fatalf("the shard journal does not verify: %v %v", err, res.Problems)
	}
}

func userRecord(t *testing.T, typ messages.RecordType, user string) wal.Entry {
	t.Helper()
	var payload any = messages.UserCreatedEvent{User: user}
	if typ == messages.RecordUserDisabled {
		payload = messages.UserDisabledEvent{User: user}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return wal.Entry{Type: uint16(typ), User: user, Actor: messages.ActorCLIAdmin, Payload: b}
}

func clusterStatusOut(t *testing.T, o cli.ClusterStatusOptions) (string, error) {
	t.Helper()
	var out, errb strings.Builder
	r := &Runtime{}
	err := r.ClusterStatus(context.Background(), &cli.Globals{}, o, cli.IO{Out: &out, Err: &errb})
	return out.String(), err
}

// cluster status reads members in the provider's format, the shard count,
// each shard's holder and epoch from its lock keys, and users from the
// shard journals: as JSON and as a table; without --cluster-data the
// users are unknown.
func TestClusterStatus(t *testing.T) {
	srv := etcdtest.Start(t)
	c := etcdClient(t, srv.Endpoint())
	registerMember(t, c, "demo", "a1", "127.0.0.1", 7001)
	registerMember(t, c, "demo", "b2", "127.0.0.1", 7002)
	// Another cluster whose name starts with this one's: not a member.
	registerMember(t, c, "demo2", "c3", "127.0.0.1", 7003)
	if _, err := c.Put(context.Background(), "/guarded-exchange/demo/shards/count", "4"); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	// Shard 0: the lock names its owner; two users, one of them disabled.
	l0 := takeShard(t, etcdClient(t, srv.Endpoint()), "demo", 0, "127.0.0.1:7001")
	writeShardJournal(t, l0, data, 0, "127.0.0.1:7001",
		userRecord(t, messages.RecordUserCreated, "ann"), userRecord(t, messages.RecordUserCreated, "bob"),
		userRecord(t, messages.RecordUserDisabled, "bob"))
	// Shard 2: a lock with no owner in it; the journal's shard_owner of
	// the lock's epoch names the member.
	l2 := takeShard(t, etcdClient(t, srv.Endpoint()), "demo", 2, "")
	writeShardJournal(t, l2, data, 2, "127.0.0.1:7002", userRecord(t, messages.RecordUserCreated, "cid"))
	// Shard 1 and 3: no lock, no journal.

	out, err := clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "demo", Etcd: []string{"http://" + srv.Endpoint()}, Data: data, Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var got clusterStatus
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Cluster != "demo" || got.ShardCount == nil || *got.ShardCount != 4 {
		t.Fatalf("cluster %q count %v\n%s", got.Cluster, got.ShardCount, out)
	}
	if len(got.Members) != 2 ||
		got.Members[0].Address != "127.0.0.1:7001" || got.Members[0].ID != "demo@a1" || fmt.Sprint(got.Members[0].Shards) != "[0]" || fmt.Sprint(got.Members[0].Kinds) != "[shard]" ||
		got.Members[1].Address != "127.0.0.1:7002" || fmt.Sprint(got.Members[1].Shards) != "[2]" {
		t.Fatalf("members %+v", got.Members)
	}
	type want struct {
		owned           bool
		owner           string
		epoch           uint64
		users, disabled int
	}
	wants := []want{{true, "127.0.0.1:7001", l0.Epoch(), 2, 1}, {false, "", 0, 0, 0}, {true, "127.0.0.1:7002", l2.Epoch(), 1, 0}, {false, "", 0, 0, 0}}
	if len(got.Shards) != len(wants) {
		t.Fatalf("%d shards, want %d\n%s", len(got.Shards), len(wants), out)
	}
	for i, w := range wants {
		s := got.Shards[i]
		if s.Shard != i || s.Owned != w.owned || s.Owner != w.owner || s.Epoch != w.epoch || s.Waiting != 0 ||
			s.Users == nil || *s.Users != w.users || s.Disabled == nil || *s.Disabled != w.disabled || s.JournalError != "" {
			t.Fatalf("shard %d: %+v, want %+v\n%s", i, s, w, out)
		}
	}

	table, err := clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "demo", Etcd: []string{srv.Endpoint()}, Data: data, Format: "table"})
	if err != nil {
		t.Fatal(err)
	}
	wantRows := [][]string{
		{"cluster", "demo:", "2", "members,", "4", "shards", "(2", "owned)"},
		{"MEMBER", "SHARDS", "OWNS", "ID"},
		{"127.0.0.1:7001", "1", "0", "demo@a1"},
		{"127.0.0.1:7002", "1", "2", "demo@b2"},
		{"SHARD", "OWNER", "EPOCH", "WAITING", "USERS"},
		{"0", "127.0.0.1:7001", fmt.Sprint(l0.Epoch()), "0", "2", "(1", "disabled)"},
		{"1", "unowned", "-", "0", "0"},
		{"2", "127.0.0.1:7002", fmt.Sprint(l2.Epoch()), "0", "1"},
		{"3", "unowned", "-", "0", "0"},
	}
	checkRows(t, table, wantRows)

	// Without --cluster-data: the same owners, users unknown; the shard 2
	// owner is only in its journal.
	table, err = clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "demo", Etcd: []string{srv.Endpoint()}, Format: "table"})
	if err != nil {
		t.Fatal(err)
	}
	wantRows[3] = []string{"127.0.0.1:7002", "0", "-", "demo@b2"}
	wantRows[5] = []string{"0", "127.0.0.1:7001", fmt.Sprint(l0.Epoch()), "0", "unknown"}
	wantRows[6] = []string{"1", "unowned", "-", "0", "unknown"}
	wantRows[7] = []string{"2", "unknown", fmt.Sprint(l2.Epoch()), "0", "unknown"}
	wantRows[8] = []string{"3", "unowned", "-", "0", "unknown"}
	wantRows[0] = []string{"cluster", "demo:", "2", "members,", "4", "shards", "(2", "owned)"}
	checkRows(t, table, wantRows)
	out, err = clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "demo", Etcd: []string{srv.Endpoint()}, Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"users": null`) || strings.Contains(out, `"users": 0`) {
		t.Fatalf("users without --cluster-data:\n%s", out)
	}

	// A member queued behind the holder counts as waiting.
	waitCtx, cancelWait := context.WithCancel(context.Background())
	defer cancelWait()
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		l, err := fence.Acquire(waitCtx, etcdClient(t, srv.Endpoint()), "/guarded-exchange/demo/shards/0/lock/", fence.Options{TTL: 5 * time.Second, Owner: "127.0.0.1:7002"})
		if err == nil {
			l.Release()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err = clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "demo", Etcd: []string{srv.Endpoint()}, Format: "json"})
		if err != nil {
			t.Fatal(err)
		}
		var st clusterStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if st.Shards[0].Waiting == 1 {
			if st.Shards[0].Owner != "127.0.0.1:7001" || st.Shards[0].Epoch != l0.Epoch() {
				t.Fatalf("with a member queued, shard 0 is %+v", st.Shards[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued member never showed:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancelWait()
	<-queued
}

// checkRows compares the non-empty lines of table, split into fields,
// with want.
func checkRows(t *testing.T, table string, want [][]string) {
	t.Helper()
	var got [][]string
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			got = append(got, f)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("table:\n%s\nwant rows %v", table, want)
	}
}

// An unknown cluster name is refused (exit 1) naming it; an etcd that does
// not answer is a cannot-start (exit 2) within the bounded wait.
func TestClusterStatusErrors(t *testing.T) {
	srv := etcdtest.Start(t)
	registerMember(t, etcdClient(t, srv.Endpoint()), "demo", "a1", "127.0.0.1", 7001)
	_, err := clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "dmeo", Etcd: []string{srv.Endpoint()}, Format: "table"})
	if cli.CodeOf(err) != cli.ExitRefused || !strings.Contains(err.Error(), `no cluster named "dmeo"`) {
		t.Fatalf("unknown cluster: exit %d: %v", cli.CodeOf(err), err)
	}

	// A name that cannot be a cluster's is a usage error, before etcd.
	if _, err := clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "de/mo", Etcd: []string{srv.Endpoint()}, Format: "table"}); cli.CodeOf(err) != cli.ExitCannot {
		t.Fatalf("a name with a slash: exit %d: %v", cli.CodeOf(err), err)
	}

	// A loopback port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	old := clusterEtcdTimeout
	clusterEtcdTimeout = 500 * time.Millisecond
	defer func() { clusterEtcdTimeout = old }()
	_, err = clusterStatusOut(t, cli.ClusterStatusOptions{Cluster: "demo", Etcd: []string{dead}, Format: "table"})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.ExitCannot || !strings.Contains(err.Error(), "etcd at "+dead+" did not answer") {
		t.Fatalf("unreachable etcd: %v", err)
	}
}
