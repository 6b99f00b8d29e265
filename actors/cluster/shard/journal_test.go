package shard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/fence"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/shard"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

const lockPrefix = "/guarded-exchange/test/shards/3/lock/"

func client(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func lock(t *testing.T, cli *clientv3.Client) *fence.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := fence.Acquire(ctx, cli, lockPrefix, fence.Options{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	return l
}

func entry(user string, i int) wal.Entry {
	return wal.Entry{Type: uint16(messages.RecordToolCall), User: user, Actor: messages.ActorAgent,
		Payload: fmt.Appendf(nil, `{"n":%d}`, i)}
}

func verify(t *testing.T, dir string) wal.VerifyResult {
	t.Helper()
	res, err := wal.VerifyWith(dir, wal.VerifyOptions{OwnerType: uint16(messages.RecordShardOwner)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkFenced(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, wal.ErrFenced) {
		t.Fatalf("append after the lock was lost: %v, want wal.ErrFenced", err)
	}
}

// Each owner opens its turn with a shard_owner record of its epoch, the
// next owner replays the chain, and a clean handover verifies.
func TestOwnerRecordAndHandover(t *testing.T) {
	srv := etcdtest.Start(t)
	dir := filepath.Join(t.TempDir(), "shards", "3", "journal")

	a := lock(t, client(t, srv.Endpoint()))
	ja, own, _, err := shard.Open(dir, a, shard.Options{Shard: 3, Member: "127.0.0.1:7001"})
	if err != nil {
		t.Fatal(err)
	}
	var p shard.OwnerPayload
	if err := json.Unmarshal(own.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if own.Seq != 1 || own.Type != uint16(messages.RecordShardOwner) || own.Epoch != a.Epoch() ||
		p != (shard.OwnerPayload{Shard: 3, Epoch: a.Epoch(), Member: "127.0.0.1:7001"}) {
		t.Fatalf("owner record %+v payload %+v, lock epoch %d", own, p, a.Epoch())
	}
	for i := range 3 {
		recs, err := ja.Append([]wal.Entry{entry("alice", i)})
		if err != nil {
			t.Fatal(err)
		}
		if recs[0].Epoch != a.Epoch() {
			t.Fatalf("record epoch %d, lock's %d", recs[0].Epoch, a.Epoch())
		}
	}
	ja.Close()
	a.Release()

	b := lock(t, client(t, srv.Endpoint()))
	var replayed []wal.Record
	jb, ownB, _, err := shard.Open(dir, b, shard.Options{Shard: 3, Member: "127.0.0.1:7002",
		OnRecord: func(r wal.Record) error { replayed = append(replayed, r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(replayed) != 4 || replayed[3].Epoch != a.Epoch() {
		t.Fatalf("the new owner replayed %d records", len(replayed))
	}
	if ownB.Seq != 5 || ownB.Epoch != b.Epoch() || b.Epoch() <= a.Epoch() {
		t.Fatalf("second owner record %+v, epochs %d then %d", ownB, a.Epoch(), b.Epoch())
	}
	if _, err := jb.Append([]wal.Entry{entry("bob", 0)}); err != nil {
		t.Fatal(err)
	}
	jb.Close()
	if res := verify(t, dir); !res.OK() || res.Records != 6 {
		t.Fatalf("handover: %d records, %v", res.Records, res.Problems)
	}
}

// A member cut off from etcd stops appending once its lock is lost:
// every append after that is refused with shard_fenced and writes
// nothing, the next owner takes the shard over, and the chain verifies.
func TestNoAppendAfterLeaseLost(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, srv.Endpoint())
	dir := t.TempDir()

	a := lock(t, client(t, proxy.Endpoint()))
	ja, _, _, err := shard.Open(dir, a, shard.Options{Shard: 3, Member: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ja.Close()
	if _, err := ja.Append([]wal.Entry{entry("alice", 0)}); err != nil {
		t.Fatal(err)
	}

	// The writer keeps appending while the proxy is cut; count what it
	// was told is durable.
	var acked atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			_, err := ja.Append([]wal.Entry{entry("alice", i)})
			if err != nil {
				done <- err
				return
			}
			acked.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	proxy.Cut()
	<-a.Lost()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		close(stop)
		<-done
		t.Fatal("appends still succeed after the lock was lost")
	}
	checkFenced(t, err)
	ackedBefore := acked.Load()
	if ackedBefore == 0 {
		t.Fatal("no append succeeded before the cut")
	}
	// Nothing more is written, however often it is asked.
	before := verify(t, dir).Records
	for i := range 5 {
		_, err := ja.Append([]wal.Entry{entry("alice", 1000+i)})
		checkFenced(t, err)
	}
	if after := verify(t, dir).Records; after != before {
		t.Fatalf("a fenced journal wrote: %d records, then %d", before, after)
	}

	// The next owner, which still reaches etcd, takes over and writes on.
	b := lock(t, client(t, srv.Endpoint()))
	var n uint64
	jb, _, _, err := shard.Open(dir, b, shard.Options{Shard: 3, Member: "m2",
		OnRecord: func(wal.Record) error { n++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer jb.Close()
	// Every acknowledged append is in the chain the new owner replayed:
	// the owner record, the first append and each acknowledged one (a
	// batch refused after its fsync may be there too).
	if n < uint64(2+ackedBefore) {
		t.Fatalf("replayed %d records, %d were acknowledged", n, 2+ackedBefore)
	}
	if _, err := jb.Append([]wal.Entry{entry("bob", 0)}); err != nil {
		t.Fatal(err)
	}
	_, err = ja.Append([]wal.Entry{entry("alice", 9999)})
	checkFenced(t, err)
	if res := verify(t, dir); !res.OK() {
		t.Fatalf("after the takeover: %v", res.Problems)
	}
}

// flipFence is held for its first n checks only.
type flipFence struct {
	epoch uint64
	left  atomic.Int64
}

func (f *flipFence) Epoch() uint64 { return f.epoch }
func (f *flipFence) Held() bool    { return f.left.Add(-1) >= 0 }

// A batch whose lock was lost during its write is not acknowledged, and
// nothing after it is written.
func TestLostDuringWriteNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	f := &flipFence{epoch: 7}
	f.left.Store(4) // Open: before opening and around the owner record; then one
	j, _, _, err := shard.Open(dir, f, shard.Options{Shard: 1, Member: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = j.Append([]wal.Entry{entry("alice", 0)}) // held before, lost after
	checkFenced(t, err)
	if !errors.Is(j.Err(), wal.ErrFenced) {
		t.Fatal("not fenced after a refused append")
	}
	f.left.Store(100) // a renewed lock does not revive the journal
	_, err = j.Append([]wal.Entry{entry("alice", 1)})
	checkFenced(t, err)
	if res := verify(t, dir); !res.OK() || res.Records != 2 {
		t.Fatalf("%d records (want the owner record and the unacknowledged batch), %v", res.Records, res.Problems)
	}
}

// Open refuses a member that does not hold the lock, and a stale owner
// whose epoch is lower than the chain's.
func TestOpenRefusesWithoutTheLockOrStale(t *testing.T) {
	dir := t.TempDir()
	f := &flipFence{epoch: 9}
	f.left.Store(100)
	j, _, _, err := shard.Open(dir, f, shard.Options{Shard: 1, Member: "new"})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	stale := &flipFence{epoch: 5}
	stale.left.Store(100)
	if _, _, _, err := shard.Open(dir, stale, shard.Options{Shard: 1, Member: "old"}); !errors.Is(err, wal.ErrStaleEpoch) {
		t.Fatalf("stale owner: %v, want wal.ErrStaleEpoch", err)
	}
	if _, _, _, err := shard.Open(dir, &flipFence{epoch: 11}, shard.Options{Shard: 1}); !errors.Is(err, shard.ErrFenced) {
		t.Fatalf("not holding the lock: %v, want ErrFenced", err)
	}
}
