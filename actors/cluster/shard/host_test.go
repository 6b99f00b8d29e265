package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/fence"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

const hostCluster = "hosttest"

var adminOrigin = messages.Origin{Role: messages.RoleAdmin, Channel: messages.ChannelSocket, PeerUID: 1000, PeerPID: 1}

// userOn returns a user name with prefix that routes to shard n of count.
func userOn(n, count int, prefix string) string {
	for i := 0; ; i++ {
		u := prefix + strconv.Itoa(i)
		if route.OfUser(u, count) == n {
			return u
		}
	}
}

func submit(cl *Client, cmd messages.Command, timeout time.Duration) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return cl.Submit(ctx, cmd, adminOrigin)
}

func mustSubmit(t *testing.T, cl *Client, cmd messages.Command) any {
	t.Helper()
	res, err := submit(cl, cmd, 15*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", cmd.CommandName(), err)
	}
	return res
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func etcdClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// systems records the System each shard activation started, so a test can
// reach behind the transport.
type systems struct {
	mu   sync.Mutex
	sys  map[int]*actors.System
	hold chan struct{} // when set, Running.Stop waits for it to close
	stop chan int      // when set, told which shard's Stop began
}

func (s *systems) start(ctx context.Context, slot route.Slot, log *wal.Log, replay *actors.UserReplay) (*Running, error) {
	sys, err := actors.Start(actors.Config{Journal: log, Users: replay, Shard: slot})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sys[slot.Index] = sys
	hold, stop := s.hold, s.stop
	s.mu.Unlock()
	return &Running{Target: sys, Stop: func() {
		if stop != nil {
			stop <- slot.Index
		}
		if hold != nil {
			<-hold
		}
		sys.Stop()
	}}, nil
}

func (s *systems) get(n int) *actors.System {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sys[n]
}

// testMember is one cluster member hosting the shard kind.
type testMember struct {
	*member.Member
	addr  string
	count int
	sys   *systems
	once  sync.Once
}

func (m *testMember) stop() { m.once.Do(m.Member.Stop) }

func (m *testMember) client() *Client {
	return NewClient(m.count, ClusterTransport(m.Cluster()), WithCallKey(testCallKey))
}

// testCallKey is the call key of the test cluster's members.
var testCallKey = bytes.Repeat([]byte{7}, MinCallKeySize)

// startMember starts a member on etcd endpoint; its shard locks are taken
// through lockEtcd (a proxy, to cut) when not empty.
func startMember(t *testing.T, endpoint, lockEtcd, data string, count int, sys *systems) *testMember {
	t.Helper()
	if lockEtcd == "" {
		lockEtcd = endpoint
	}
	if sys == nil {
		sys = &systems{}
	}
	sys.sys = map[int]*actors.System{}
	addr := freeAddr(t)
	kind := NewKind(HostConfig{Cluster: hostCluster, Count: count, DataDir: data, Member: addr,
		Etcd: etcdClient(t, lockEtcd), LockTTL: 2 * time.Second, CallKey: testCallKey, Start: sys.start})
	m, err := member.Start(member.Config{Name: hostCluster, Etcd: []string{endpoint}, Advertise: addr, Kinds: []*cluster.Kind{kind}})
	if err != nil {
		t.Fatal(err)
	}
	tm := &testMember{Member: m, addr: addr, count: count, sys: sys}
	t.Cleanup(tm.stop)
	return tm
}

func waitMembers(t *testing.T, ms ...*testMember) {
	t.Helper()
	var want []string
	for _, m := range ms {
		want = append(want, m.addr)
	}
	slices.Sort(want)
	deadline := time.Now().Add(15 * time.Second)
	for _, m := range ms {
		for !slices.Equal(m.Members(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %v, want %v", m.addr, m.Members(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// owners returns the shard_owner records of a shard's journal, in order.
func owners(t *testing.T, dir string) []OwnerPayload {
	t.Helper()
	var out []OwnerPayload
	for _, r := range rig.Records(t, dir) {
		if r.Type != uint16(messages.RecordShardOwner) {
			continue
		}
		var p OwnerPayload
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Epoch != r.Epoch {
			t.Fatalf("owner record of epoch %d in a frame of epoch %d", p.Epoch, r.Epoch)
		}
		out = append(out, p)
	}
	return out
}

func verifyShard(t *testing.T, dir string) wal.VerifyResult {
	t.Helper()
	res, err := wal.VerifyWith(dir, wal.VerifyOptions{OwnerType: uint16(messages.RecordShardOwner)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("%s does not verify: %v", dir, res.Problems)
	}
	return res
}

// waitNoActivation waits until m's placement has no shard activation
// left (it counts them down as they terminate).
func waitNoActivation(t *testing.T, m *testMember) {
	t.Helper()
	kind := m.Cluster().GetClusterKind(KindName)
	for deadline := time.Now().Add(10 * time.Second); kind.Count() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d shard activations still running", kind.Count())
		}
	}
}

func isReason(err error, code messages.Code, reason string) bool {
	var me *messages.Error
	return errors.As(err, &me) && me != nil && me.Code == code && me.Details["reason"] == reason
}

// A call activates its shard: the activation takes the shard's lock, its
// journal starts with a shard_owner record of the lock's epoch, and the
// System's records follow with that epoch.
func TestShardActivatesWithItsLockAndJournal(t *testing.T) {
	srv := etcdtest.Start(t)
	data := t.TempDir()
	m := startMember(t, srv.Endpoint(), "", data, 4, nil)
	waitMembers(t, m)

	alice := userOn(2, 4, "alice")
	mustSubmit(t, m.client(), &messages.CreateUserRequest{User: alice})
	mustSubmit(t, m.client(), &messages.ShowPolicyRequest{User: alice})

	kv, err := etcdClient(t, srv.Endpoint()).Get(context.Background(), LockPrefix(hostCluster, 2), clientv3.WithPrefix())
	if err != nil || len(kv.Kvs) != 1 {
		t.Fatalf("shard 2's lock keys: %v, %v", kv, err)
	}
	epoch := uint64(kv.Kvs[0].CreateRevision)
	dir := JournalDir(data, 2)
	recs := rig.Records(t, dir)
	if len(recs) < 2 || recs[0].Type != uint16(messages.RecordShardOwner) {
		t.Fatalf("shard 2's journal: %d records, the first of type %d", len(recs), recs[0].Type)
	}
	if got := owners(t, dir); len(got) != 1 || got[0] != (OwnerPayload{Shard: 2, Epoch: epoch, Member: m.addr}) {
		t.Fatalf("owner records %+v, lock epoch %d", got, epoch)
	}
	created := false
	for _, r := range recs {
		if r.Epoch != epoch {
			t.Fatalf("record %d has epoch %d, the lock's is %d", r.Seq, r.Epoch, epoch)
		}
		created = created || (r.Type == uint16(messages.RecordUserCreated) && r.User == alice)
	}
	if !created {
		t.Fatal("no user_created record in the shard's journal")
	}
	verifyShard(t, dir)
}

// A member that leaves gracefully hands its shards over: the other member
// takes each one with a greater epoch, finds the users created before the
// move with their kill switch and posture causes as they were (issue 23,
// "the venue follows the shard"), and each shard's journal verifies with
// its two owners in order.
func TestGracefulLeaveHandsShardsOver(t *testing.T) {
	srv := etcdtest.Start(t)
	data := t.TempDir()
	const count = 4
	a := startMember(t, srv.Endpoint(), "", data, count, nil)
	b := startMember(t, srv.Endpoint(), "", data, count, nil)
	waitMembers(t, a, b)

	users := make([]string, count)
	for n := range count {
		users[n] = userOn(n, count, "user")
		mustSubmit(t, a.client(), &messages.CreateUserRequest{User: users[n]})
		// Even shards' users are halted by the kill switch, odd ones
		// reduced by a human: both must hold on the new owner.
		if n%2 == 0 {
			mustSubmit(t, a.client(), &messages.SetKillSwitchRequest{User: users[n], On: true, Level: messages.KillSwitchAdmin})
		} else {
			mustSubmit(t, a.client(), &messages.SetPostureRequest{User: users[n], Reduce: true})
		}
	}
	// The member hosting shard 0 leaves; the other stays.
	leaving, staying := a, b
	if o := owners(t, JournalDir(data, 0)); o[0].Member == b.addr {
		leaving, staying = b, a
	}
	var moved []int
	for n := range count {
		if owners(t, JournalDir(data, n))[0].Member == leaving.addr {
			moved = append(moved, n)
		}
	}
	leaving.stop()
	// The leaving member released its locks (a lock it kept would be
	// renewed as long as its process lives).
	cli := etcdClient(t, srv.Endpoint())
	for _, n := range moved {
		kv, err := cli.Get(context.Background(), LockPrefix(hostCluster, n), clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kv.Kvs {
			if uint64(k.CreateRevision) == owners(t, JournalDir(data, n))[0].Epoch {
				t.Fatalf("shard %d: the leaving member's lock key is still there", n)
			}
		}
	}

	cl := staying.client()
	for _, n := range moved {
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, err := submit(cl, &messages.ShowPolicyRequest{User: users[n]}, 5*time.Second)
			if err == nil {
				break
			}
			if messages.CodeOf(err) == messages.CodeNotFound || time.Now().After(deadline) {
				t.Fatalf("shard %d after the leave: %v", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		res := mustSubmit(t, cl, &messages.ShowPostureRequest{User: users[n]})
		pv, ok := res.(*messages.PostureView)
		switch {
		case !ok:
			t.Fatalf("shard %d: posture answer %T", n, res)
		case n%2 == 0 && (pv.State != messages.PostureHalted || pv.KillSwitch != messages.KillSwitchAdmin):
			t.Fatalf("shard %d after the move: %s, kill switch %s; want HALTED by the admin's kill switch", n, pv.State, pv.KillSwitch)
		case n%2 == 1 && (pv.State != messages.PostureReducing || pv.KillSwitch != messages.KillSwitchNone || !slices.Contains(pv.Why, messages.CauseHuman)):
			t.Fatalf("shard %d after the move: %s, kill switch %s, why %v; want REDUCING by a human", n, pv.State, pv.KillSwitch, pv.Why)
		}
		dir := JournalDir(data, n)
		o := owners(t, dir)
		if len(o) != 2 || o[0].Member != leaving.addr || o[1].Member != staying.addr || o[1].Epoch <= o[0].Epoch {
			t.Fatalf("shard %d owners %+v", n, o)
		}
		verifyShard(t, dir)
	}
	if len(moved) == 0 {
		t.Fatal("no shard moved")
	}
}

// A member cut off from etcd loses its shard's lock: the System's writes
// are refused shard_fenced (nothing more is journaled), calls are answered
// shard_fenced, and the activation stops.
func TestLockLostFencesAndStops(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, srv.Endpoint())
	data := t.TempDir()
	sys := &systems{hold: make(chan struct{}), stop: make(chan int, 1)}
	m := startMember(t, srv.Endpoint(), proxy.Endpoint(), data, 2, sys)
	waitMembers(t, m)
	mustSubmit(t, m.client(), &messages.CreateUserRequest{User: userOn(1, 2, "ann")})
	shardSys := sys.get(1)
	dir := JournalDir(data, 1)
	before := verifyShard(t, dir).Records

	proxy.Cut()
	select {
	case n := <-sys.stop: // the lock is lost and the host is stopping the system
		if n != 1 {
			t.Fatalf("shard %d stopped", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shard was not stopped after its lock was lost")
	}
	// While the system is held running, a write reaches its journal and is
	// refused there.
	bob := userOn(1, 2, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := shardSys.Submit(ctx, &messages.CreateUserRequest{User: bob}, adminOrigin)
	if !isReason(err, messages.CodeInternalError, messages.ReasonShardFenced) {
		t.Fatalf("a write after the lock was lost: %v, want internal_error reason shard_fenced", err)
	}
	// A call through the cluster is answered the same way.
	_, err = submit(m.client(), &messages.CreateUserRequest{User: bob}, 10*time.Second)
	if !isReason(err, messages.CodeInternalError, messages.ReasonShardFenced) {
		t.Fatalf("a call after the lock was lost: %v, want shard_fenced", err)
	}
	close(sys.hold)
	waitNoActivation(t, m)
	if after := verifyShard(t, dir).Records; after != before {
		t.Fatalf("the fenced shard wrote: %d records, then %d", before, after)
	}
}

// A call that arrives while another holder has the shard's lock waits for
// the shard to be ready and is then served; one whose deadline passes
// first is not served.
func TestCallWaitsForReadiness(t *testing.T) {
	srv := etcdtest.Start(t)
	data := t.TempDir()
	m := startMember(t, srv.Endpoint(), "", data, 2, nil)
	waitMembers(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held, err := fence.Acquire(ctx, etcdClient(t, srv.Endpoint()), LockPrefix(hostCluster, 0), fence.Options{TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()

	cl := m.client()
	early, waiter := userOn(0, 2, "early"), userOn(0, 2, "waiter")
	if _, err := submit(cl, &messages.CreateUserRequest{User: early}, 500*time.Millisecond); err == nil {
		t.Fatal("a call was served while another holder had the shard's lock")
	}
	// The host itself answers a call whose deadline passed before
	// readiness: not served, safe to send again.
	sealed := SealCall(testCallKey, 0, []byte(`{}`))
	out := (&host{cfg: HostConfig{CallKey: testCallKey}, id: "0", ready: make(chan struct{}), gone: make(chan struct{})}).serve(expired(), sealed)
	out, ok := OpenAnswer(testCallKey, sealed[len(sealMagic):len(sealMagic)+macSize], out)
	var a struct{ Error *messages.Error }
	if !ok || json.Unmarshal(out, &a) != nil || !isReason(a.Error, messages.CodeExchangeUnavailable, ReasonUnavailable) {
		t.Fatalf("not ready within the deadline: %s", out)
	}

	done := make(chan error, 1)
	go func() {
		_, err := cl.Submit(ctx, &messages.CreateUserRequest{User: waiter}, adminOrigin)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the call was answered while the shard could not be ready: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	held.Release()
	if err := <-done; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	mustSubmit(t, cl, &messages.ShowPolicyRequest{User: waiter})
	if _, err := submit(cl, &messages.ShowPolicyRequest{User: early}, 10*time.Second); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("the early call's user: %v, want not_found (it must not have been served)", err)
	}
}

func expired() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	cancel()
	return ctx
}

// An identity that is not a shard number is refused and its activation
// stops.
func TestBadIdentityRefused(t *testing.T) {
	srv := etcdtest.Start(t)
	m := startMember(t, srv.Endpoint(), "", t.TempDir(), 2, nil)
	waitMembers(t, m)
	tr := ClusterTransport(m.Cluster())
	for _, n := range []int{2, -1} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		sealed := SealCall(testCallKey, n, []byte(`{}`))
		out, err := tr(ctx, n, sealed)
		cancel()
		out, ok := OpenAnswer(testCallKey, sealed[len(sealMagic):len(sealMagic)+macSize], out)
		var a struct{ Error *messages.Error }
		if err != nil || !ok || json.Unmarshal(out, &a) != nil || a.Error == nil || a.Error.Details["reason"] != "no_such_shard" {
			t.Fatalf("shard %d of 2: %s, %v", n, out, err)
		}
	}
}

// The transport sends a call once: one that timed out (it may have been
// served) is not sent again, while one that met a dead activation (it
// reached no shard) is sent once more after a fresh lookup.
func TestTransportRetriesOnlyUnservedCalls(t *testing.T) {
	srv := etcdtest.Start(t)
	m := startMember(t, srv.Endpoint(), "", t.TempDir(), 2, nil)
	waitMembers(t, m)
	cl := m.client()
	ann, slow := userOn(1, 2, "ann"), userOn(1, 2, "slow")
	mustSubmit(t, cl, &messages.CreateUserRequest{User: ann})

	// A call for slow is held until its deadline, then answered.
	var slowCalls atomic.Int64
	serveCall = func(ctx context.Context, tg Target, b []byte) []byte {
		if bytes.Contains(b, []byte(`"`+slow+`"`)) {
			slowCalls.Add(1)
			<-ctx.Done()
			return EncodeError(messages.Internal(ctx.Err()))
		}
		return Serve(ctx, tg, b)
	}
	t.Cleanup(func() { serveCall = Serve })
	if _, err := submit(cl, &messages.CreateUserRequest{User: slow}, 500*time.Millisecond); err == nil {
		t.Fatal("a call that outlived its deadline succeeded")
	}
	if n := slowCalls.Load(); n != 1 {
		t.Fatalf("the timed-out call was served %d times, want once", n)
	}

	// A cached PID of an activation that is gone: the call dead-letters
	// and is sent again to a new activation.
	c := m.Cluster()
	pid, ok := c.PidCache.Get("1", KindName)
	if !ok {
		t.Fatal("no cached PID for shard 1")
	}
	if _, err := c.ActorSystem.Root.PoisonFuture(pid).Result(); err != nil {
		t.Fatal(err)
	}
	waitNoActivation(t, m)
	c.PidCache.Set("1", KindName, pid)
	mustSubmit(t, cl, &messages.ShowPolicyRequest{User: ann})
	if now, _ := c.PidCache.Get("1", KindName); now == nil || now.Equal(pid) {
		t.Fatal("the dead PID is still cached")
	}
}
