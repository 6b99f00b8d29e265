package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/fence"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

const prefix = "/guarded-exchange/test/shards/3/lock/"

func client(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func acquire(t *testing.T, cli *clientv3.Client, o fence.Options, within time.Duration) (*fence.Lock, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	l, err := fence.Acquire(ctx, cli, prefix, o)
	if err == nil {
		t.Cleanup(l.Release)
	}
	return l, err
}

// One owner at a time: a second Acquire waits while the first holds the
// lock, gets it once the first releases, with a greater epoch.
func TestOneOwnerAtATime(t *testing.T) {
	srv := etcdtest.Start(t)
	o := fence.Options{TTL: 2 * time.Second}
	a, err := acquire(t, client(t, srv.Endpoint()), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Held() || a.Epoch() == 0 {
		t.Fatalf("first owner: held %v epoch %d", a.Held(), a.Epoch())
	}
	cliB := client(t, srv.Endpoint())
	if _, err := acquire(t, cliB, o, 1500*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Acquire while the first holds: err %v, want a timeout", err)
	}
	got := make(chan *fence.Lock, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		b, err := fence.Acquire(ctx, cliB, prefix, o)
		if err != nil {
			t.Error(err)
			b = nil
		}
		got <- b
	}()
	// The waiter keeps its lease alive longer than a TTL while it waits.
	time.Sleep(3 * time.Second)
	select {
	case <-got:
		t.Fatal("second owner got the lock while the first held it")
	default:
	}
	if !a.Held() {
		t.Fatalf("first owner lost its lock while renewing: %v", a.Err())
	}
	a.Release()
	select {
	case <-a.Lost():
	default:
		t.Fatal("Release did not close Lost")
	}
	if a.Held() || !errors.Is(a.Err(), fence.ErrReleased) {
		t.Fatalf("after Release: held %v err %v", a.Held(), a.Err())
	}
	b := <-got
	if b == nil {
		t.FailNow()
	}
	defer b.Release()
	if b.Epoch() <= a.Epoch() {
		t.Fatalf("epoch did not grow: first %d, second %d", a.Epoch(), b.Epoch())
	}
	// A third owner after the second's session ends, epoch still growing.
	b.Release()
	c, err := acquire(t, client(t, srv.Endpoint()), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.Epoch() <= b.Epoch() {
		t.Fatalf("epoch did not grow: second %d, third %d", b.Epoch(), c.Epoch())
	}
}

// A holder cut off from etcd closes Lost before its lease can expire on
// the server, so before anyone else can own the shard: the waiter, which
// still reaches etcd, gets the lock only after the server expired the
// cut-off holder's lease, and Lost had closed by then.
func TestCutOffHolderStopsBeforeTakeover(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, srv.Endpoint())
	o := fence.Options{TTL: 2 * time.Second}
	a, err := acquire(t, client(t, proxy.Endpoint()), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	type taken struct {
		l  *fence.Lock
		at time.Time
	}
	got := make(chan taken, 1)
	cliB := client(t, srv.Endpoint())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := fence.Acquire(ctx, cliB, prefix, o)
		if err != nil {
			t.Error(err)
		}
		got <- taken{b, time.Now()}
	}()
	time.Sleep(1 * time.Second) // the waiter is queued, the holder renewing
	if !a.Held() {
		t.Fatalf("holder lost its lock before the cut: %v", a.Err())
	}
	cutAt := time.Now()
	proxy.Cut()
	var lostAt time.Time
	select {
	case <-a.Lost():
		lostAt = time.Now()
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not close after the holder was cut off from etcd")
	}
	// Cut off, the holder's own deadline passes (ErrExpired); on a loaded
	// machine the client's session may end first and report the lease
	// gone (ErrLeaseGone). Either way it is lost, and not later than the
	// deadline checked below.
	if err := a.Err(); !errors.Is(err, fence.ErrExpired) && !errors.Is(err, fence.ErrLeaseGone) {
		t.Fatalf("lost with %v, want ErrExpired or ErrLeaseGone", err)
	}
	if a.Held() {
		t.Fatal("Held after Lost")
	}
	// The last renewal was sent before the cut, so the deadline (the
	// instant Held turns false) is at most TTL - Margin after the cut.
	// The lock's own deadline is compared, not the moment this goroutine
	// woke, which a loaded machine can delay.
	stoppedAt := a.Deadline()
	if d := stoppedAt.Sub(cutAt); d > o.TTL {
		t.Fatalf("the holder counted itself held until %v after the cut, later than the TTL", d)
	}
	tk := <-got
	if tk.l == nil {
		t.FailNow()
	}
	defer tk.l.Release()
	if !stoppedAt.Before(tk.at) {
		t.Fatalf("the new owner took the lock at %v, before the cut-off holder stopped at %v", tk.at.Sub(cutAt), stoppedAt.Sub(cutAt))
	}
	if tk.l.Epoch() <= a.Epoch() {
		t.Fatalf("epoch did not grow: %d then %d", a.Epoch(), tk.l.Epoch())
	}
	t.Logf("cut at 0, holder stopped at %v (Lost seen at %v), new owner at %v", stoppedAt.Sub(cutAt), lostAt.Sub(cutAt), tk.at.Sub(cutAt))
}

// A lease that etcd no longer has (revoked behind the holder's back) is
// lost at the next renewal, and the lock key went with it.
func TestLeaseGoneIsLost(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := client(t, srv.Endpoint())
	a, err := acquire(t, cli, fence.Options{TTL: 3 * time.Second}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(context.Background(), a.Key())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("lock key: %v %v", resp, err)
	}
	if _, err := cli.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Lost():
	case <-time.After(3 * time.Second):
		t.Fatal("Lost did not close after the lease was revoked")
	}
	if !errors.Is(a.Err(), fence.ErrLeaseGone) {
		t.Fatalf("lost with %v, want ErrLeaseGone", a.Err())
	}
}

// etcd stopping for everyone: the holder loses its lock within TTL -
// Margin of its last renewal, so within the TTL of the stop.
func TestEtcdStoppedIsLost(t *testing.T) {
	srv := etcdtest.Start(t)
	o := fence.Options{TTL: 2 * time.Second}
	a, err := acquire(t, client(t, srv.Endpoint()), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a renewal or two
	stopAt := time.Now()
	stopped := make(chan time.Time, 1)
	go func() { srv.Stop(); stopped <- time.Now() }()
	select {
	case <-a.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("Lost did not close after etcd stopped")
	}
	lostAt := time.Now()
	stopEnd := <-stopped
	t.Logf("stop began at 0, Lost at %v, stop returned at %v", lostAt.Sub(stopAt), stopEnd.Sub(stopAt))
	if d := lostAt.Sub(stopAt); d > o.TTL {
		t.Fatalf("Lost closed %v after etcd began to stop, later than the TTL", d)
	}
	if a.Held() || !errors.Is(a.Err(), fence.ErrExpired) {
		t.Fatalf("after etcd stopped: held %v err %v", a.Held(), a.Err())
	}
}

// With Options.Owner the lock key holds the owner's address, and writing
// it keeps the key's create revision: the epoch a reader of etcd derives
// from the key is the lock's.
func TestOwnerIsTheLockKeyValue(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := client(t, srv.Endpoint())
	l, err := acquire(t, cli, fence.Options{TTL: 2 * time.Second, Owner: "127.0.0.1:7001"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%d keys under the lock prefix, want 1", len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	if string(kv.Key) != l.Key() || string(kv.Value) != "127.0.0.1:7001" || uint64(kv.CreateRevision) != l.Epoch() {
		t.Fatalf("lock key %s = %q (create revision %d), want %s = 127.0.0.1:7001 (epoch %d)", kv.Key, kv.Value, kv.CreateRevision, l.Key(), l.Epoch())
	}
	if !l.Held() {
		t.Fatalf("not held after writing the owner: %v", l.Err())
	}
	l.Release()
	resp, err = cli.Get(context.Background(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("%d keys left after Release", len(resp.Kvs))
	}
}
