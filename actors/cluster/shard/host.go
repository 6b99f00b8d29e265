package shard

// The shard virtual actor: one activation per shard, placed by the
// cluster's identity lookup, owning the shard's lock, journal and
// running system while it lives (docs/cluster.md "A shard's activation").

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/remote"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/fence"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// KindName is the virtual actor kind of a shard; its identity is the
// shard's number in decimal.
const KindName = "shard"

// DefaultCallTimeout bounds a call whose context has no deadline (the
// transport) or that arrives without one (the host).
const DefaultCallTimeout = 2 * time.Minute

// DefaultLockTTL is the shard lock's lease TTL when HostConfig.LockTTL is
// zero.
const DefaultLockTTL = 5 * time.Second

// headerTimeout is the message header that carries a call's remaining
// time, in milliseconds, from the transport to the shard: a relative
// bound, since members share no clock (docs/cluster.md "Failure model").
const headerTimeout = "gx-timeout-ms"

// badIdentityLinger is how long an activation whose identity is not a
// shard number stays to refuse calls before it stops.
const badIdentityLinger = time.Second

// Running is one shard's running system, as the member's StartFunc built
// it on the shard's opened journal.
type Running struct {
	// Target serves the shard's calls.
	Target Target
	// Stop stops the system (its user actors, streams and journal
	// writer). The host closes the journal after it.
	Stop func()
}

// StartFunc builds a shard's system on its journal, opened (its records
// replayed into replay) and with the shard_owner record appended. slot is
// the shard (actors.Config.Shard), so that tokens are drawn to route home
// and users of other shards are refused. It reconciles open order
// attempts before it returns or in the background; the host serves calls
// as soon as it returns.
type StartFunc func(ctx context.Context, slot route.Slot, log *wal.Log, replay *actors.UserReplay) (*Running, error)

// HostConfig is what a member needs to host shards.
type HostConfig struct {
	// Cluster is the cluster's name (keys under member.KeyPrefix+Cluster).
	Cluster string
	// Count is the cluster's fixed number of shards.
	Count int
	// DataDir is --cluster-data: shard n's journal is
	// DataDir/shards/<n>/journal.
	DataDir string
	// Member is this member's advertised address (in shard_owner).
	Member string
	// Etcd is the client the shard locks are taken with.
	Etcd *clientv3.Client
	// LockTTL is the shard lock's lease TTL (default 5 s).
	LockTTL time.Duration
	// CallKey is the cluster's call key (docs/cluster.md "Security"): the
	// host serves only calls sealed with it (the Client's WithCallKey) and
	// seals its answers with it. Without one (or one shorter than
	// MinCallKeySize) every call is refused.
	CallKey []byte
	// Start builds the shard's system.
	Start StartFunc
	// Logger receives the host's logs (nil: discarded).
	Logger *slog.Logger
}

// LockPrefix is the etcd prefix of shard n's lock in cluster name.
func LockPrefix(name string, n int) string {
	return member.KeyPrefix + name + "/shards/" + strconv.Itoa(n) + "/lock/"
}

// JournalDir is shard n's journal directory under the cluster's data
// directory.
func JournalDir(dataDir string, n int) string {
	return filepath.Join(dataDir, "shards", strconv.Itoa(n), "journal")
}

// serveCall runs one call on a shard's target: Serve, replaced in the
// package's own tests.
var serveCall = Serve

// NewKind returns the shard kind to register with the member.
//
// An activation whose identity is a shard number in [0, Count) takes the
// shard's lock in the background, opens the journal with the lock's
// epoch (replaying it), starts the shard's system with cfg.Start and then
// serves. Each call (a *wrapperspb.BytesValue holding Serve's bytes) is
// served on its own goroutine and answered to its sender; a call that
// arrives before the shard is ready waits for it within its own deadline.
// When the lock is lost the system is stopped, the journal closed and the
// activation stops, so the next call activates the shard again; when the
// activation stops (the shard moved, the member leaves) the lock is
// released too, so the next owner need not wait for its lease to expire.
func NewKind(cfg HostConfig) *cluster.Kind {
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = DefaultLockTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cluster.NewKind(KindName, actor.PropsFromProducer(func() actor.Actor {
		return &host{cfg: cfg, ready: make(chan struct{}), gone: make(chan struct{}), started: make(chan struct{})}
	}))
}

// host is one shard activation.
type host struct {
	cfg    HostConfig
	n      int    // the shard; -1 for an identity that is not one
	id     string // the activation's identity (calls are sealed for it)
	logger *slog.Logger
	root   *actor.RootContext
	self   *actor.PID

	// cancel ends the background start (nil: never started); started is
	// closed when it has returned.
	cancel  context.CancelFunc
	started chan struct{}
	// ready is closed once the shard serves (or its start failed: then
	// target is nil); gone when it stops serving for good.
	ready, gone chan struct{}

	mu       sync.Mutex
	target   Target
	running  *Running
	log      *wal.Log
	lock     *fence.Lock
	refusal  *messages.Error // the answer once there is no target
	tornDown bool
}

// Receive handles the activation's messages.
func (h *host) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		h.root, h.self = ctx.ActorSystem().Root, ctx.Self()
		h.n = -1
	case *cluster.ClusterInit:
		h.init(ctx, msg.Identity)
	case *wrapperspb.BytesValue:
		h.call(ctx, msg.Value)
	case *actor.Stopping:
		h.stop()
	}
}

// init checks the identity and starts the shard in the background.
func (h *host) init(ctx actor.Context, id *cluster.ClusterIdentity) {
	identity := ""
	if id != nil {
		identity = id.Identity
	}
	h.id = identity
	if len(h.cfg.CallKey) < MinCallKeySize {
		h.cfg.Logger.Error("shard: no call key; every call is refused (docs/cluster.md \"Security\")")
	}
	n, err := strconv.Atoi(identity)
	if err != nil || strconv.Itoa(n) != identity || n < 0 || n >= h.cfg.Count {
		h.cfg.Logger.Error("shard: refusing an activation whose identity is not a shard number", "count", h.cfg.Count)
		h.refuse(&messages.Error{Code: messages.CodeInternalError, Message: "no such shard",
			NextStep: "check that every member runs with the same shard count", Details: map[string]any{"reason": "no_such_shard"}})
		close(h.ready)
		// It lingers a moment before it stops, so the call that activated
		// it (sent once the placement answered, which may be after this
		// init ran) gets the refusal instead of a dead letter.
		root, self := h.root, h.self
		time.AfterFunc(badIdentityLinger, func() { root.Poison(self) })
		return
	}
	h.n = n
	h.logger = h.cfg.Logger.With("shard", n)
	bg, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go h.start(bg)
}

// refuse sets the answer calls get once there is no target.
func (h *host) refuse(e *messages.Error) {
	h.mu.Lock()
	if h.refusal == nil {
		h.refusal = e
	}
	h.mu.Unlock()
}

// start takes the lock, opens the journal and starts the system; then it
// watches the lock.
func (h *host) start(ctx context.Context) {
	defer close(h.started)
	fail := func(what string, err error) {
		if ctx.Err() == nil {
			h.logger.Error("shard: start failed; the next call activates it again", "step", what, "err", err.Error())
		}
		h.refuse(Unavailable("its start failed"))
		close(h.ready)
		h.teardown()
		h.root.Poison(h.self)
	}
	lock, err := fence.Acquire(ctx, h.cfg.Etcd, LockPrefix(h.cfg.Cluster, h.n), fence.Options{TTL: h.cfg.LockTTL, Owner: h.cfg.Member})
	if err != nil {
		fail("lock", err)
		return
	}
	h.mu.Lock()
	h.lock = lock
	h.mu.Unlock()
	replay := actors.NewUserReplay()
	log, owner, rec, err := Open(JournalDir(h.cfg.DataDir, h.n), lock, Options{Shard: h.n, Member: h.cfg.Member, OnRecord: replay.OnRecord})
	if err != nil {
		fail("journal", err)
		return
	}
	h.mu.Lock()
	h.log = log
	h.mu.Unlock()
	if rec != nil && rec.TornTail {
		h.logger.Warn("journal: cut a torn last record", "segment", rec.Segment, "dropped_bytes", rec.DroppedBytes, "last_good_seq", rec.LastGoodSeq)
		if err := journalTornTail(log, rec); err != nil {
			fail("journal", err)
			return
		}
	}
	running, err := h.cfg.Start(ctx, route.Slot{Index: h.n, Count: h.cfg.Count}, log, replay)
	if err == nil && (running == nil || running.Target == nil) {
		err = errors.New("the start function returned no target")
	}
	if err != nil {
		fail("system", err)
		return
	}
	h.mu.Lock()
	h.running, h.target = running, running.Target
	tornDown := h.tornDown
	h.mu.Unlock()
	if tornDown { // stopped meanwhile: teardown ran before running was set
		running.Stop()
		return
	}
	h.logger.Info("shard: serving", "epoch", lock.Epoch(), "owner_seq", owner.Seq)
	close(h.ready)
	go func() {
		select {
		case <-lock.Lost():
			if ctx.Err() != nil {
				return // released by the activation's stop
			}
			h.logger.Warn("shard: lock lost; stopping the shard", "err", errString(lock.Err()))
			h.refuse(FencedError())
			h.teardown()
			h.root.Poison(h.self)
		case <-ctx.Done():
		}
	}()
}

// journalTornTail records what Open cut off the end of the journal, as a
// local server does at start.
func journalTornTail(log *wal.Log, rec *wal.Recovery) error {
	payload := fmt.Appendf(nil, `{"segment":%q,"dropped_bytes":%d,"last_good_seq":%d,"broken_copy":%q}`,
		rec.Segment, rec.DroppedBytes, rec.LastGoodSeq, rec.BrokenCopy)
	_, err := log.Append([]wal.Entry{{Type: uint16(messages.RecordRecoveredTornTail), Actor: messages.ActorSystem, Payload: payload}})
	return err
}

// teardown stops the system, closes the journal and releases the lock;
// calls that come later are refused. It runs once.
func (h *host) teardown() {
	h.mu.Lock()
	if h.tornDown {
		h.mu.Unlock()
		return
	}
	h.tornDown = true
	h.refusal = cmpOr(h.refusal, Unavailable("its activation is stopping"))
	running, log, lock := h.running, h.log, h.lock
	h.target = nil
	h.mu.Unlock()
	close(h.gone)
	if running != nil {
		running.Stop()
	}
	if log != nil {
		if err := log.Close(); err != nil && !errors.Is(err, wal.ErrClosed) {
			h.logger.Error("shard: close the journal", "err", err.Error())
		}
	}
	if lock != nil {
		lock.Release()
	}
}

// stop runs when the activation stops: the background start ends, then
// everything is torn down.
func (h *host) stop() {
	if h.cancel == nil {
		return // never started: a refused identity
	}
	h.cancel()
	<-h.started
	h.teardown()
	h.logger.Info("shard: stopped; lock released")
}

// call serves one call on its own goroutine and answers its sender
// through the root context.
func (h *host) call(ctx actor.Context, call []byte) {
	sender := ctx.Sender()
	if sender == nil {
		return // nobody to answer: a Send, not a request
	}
	timeout := DefaultCallTimeout
	if hd := ctx.MessageHeader(); hd != nil {
		if ms, err := strconv.ParseInt(hd.Get(headerTimeout), 10, 64); err == nil && ms > 0 {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	go func() {
		cctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		h.root.Send(sender, &wrapperspb.BytesValue{Value: h.serve(cctx, call)})
	}()
}

// serve opens the call, waits for the shard to be ready (within ctx),
// runs the call and seals the answer. A call that does not open is
// refused before anything else, and logged without its bytes.
func (h *host) serve(ctx context.Context, sealed []byte) []byte {
	call, mac, ok := openCall(h.cfg.CallKey, h.id, sealed)
	if !ok {
		h.cfg.Logger.Warn("shard: refused a call without this cluster's authenticator", "shard", h.n, "bytes", len(sealed))
		return EncodeError(NotAuthenticated())
	}
	return SealAnswer(h.cfg.CallKey, mac, h.serveOpened(ctx, call))
}

// serveOpened waits for the shard to be ready (within ctx) and runs the
// opened call.
func (h *host) serveOpened(ctx context.Context, call []byte) []byte {
	select {
	case <-h.ready:
	case <-h.gone:
	case <-ctx.Done():
		return EncodeError(Unavailable("it was not ready within the call's deadline"))
	}
	h.mu.Lock()
	t, refusal := h.target, h.refusal
	h.mu.Unlock()
	if t == nil {
		return EncodeError(cmpOr(refusal, Unavailable("it is not running")))
	}
	return serveCall(ctx, t, call)
}

func cmpOr(a, b *messages.Error) *messages.Error {
	if a != nil {
		return a
	}
	return b
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ClusterTransport carries calls to shards through c: the shard's
// activation is looked up by identity and asked directly, with the
// call's context deadline (default 2 minutes) and no automatic retry.
// Only a call that provably reached no shard is sent once more, after a
// fresh lookup: no member could place the shard, or the activation the
// lookup named was gone (a dead letter). A call that timed out may have
// been served; it is never repeated here. A call whose member goes away
// while it waits (protoactor publishes its endpoint terminated, or the
// topology lists it as left) is answered at once with MemberLeft: the
// call may or may not have taken effect (docs/decisions.md D189).
func ClusterTransport(c *cluster.Cluster) Transport {
	return func(ctx context.Context, shard int, call []byte) ([]byte, error) {
		timeout := DefaultCallTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		if timeout <= 0 || ctx.Err() != nil {
			return nil, cmpErr(ctx.Err(), context.DeadlineExceeded)
		}
		id := strconv.Itoa(shard)
		for attempt := 0; ; attempt++ {
			pid := lookup(c, id, attempt > 0)
			if pid == nil {
				if attempt == 0 {
					continue
				}
				return nil, Unavailable("no member could place it")
			}
			out, err := ask(ctx, c.ActorSystem, pid, call, timeout)
			if err == nil {
				return out, nil
			}
			if attempt == 0 && isDeadLetter(err) {
				c.PidCache.RemoveByValue(id, KindName, pid)
				if dl, ok := ctx.Deadline(); ok {
					timeout = time.Until(dl)
				}
				if timeout > 0 {
					continue
				}
			}
			if isDeadLetter(err) {
				return nil, Unavailable("its activation is gone")
			}
			return nil, err
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// lookup returns the shard's activation: the cached PID unless fresh,
// else the identity lookup's (which activates it on its owner).
func lookup(c *cluster.Cluster, id string, fresh bool) *actor.PID {
	if !fresh {
		if pid, ok := c.PidCache.Get(id, KindName); ok && pid != nil {
			return pid
		}
	}
	pid := c.Get(id, KindName)
	if pid != nil {
		c.PidCache.Set(id, KindName, pid)
	}
	return pid
}

// ask sends one call to pid with its remaining time in a header and waits
// for the answer, or for ctx.
func ask(ctx context.Context, sys *actor.ActorSystem, pid *actor.PID, call []byte, timeout time.Duration) ([]byte, error) {
	f := actor.NewFuture(sys, timeout)
	env := &actor.MessageEnvelope{Message: &wrapperspb.BytesValue{Value: call}, Sender: f.PID()}
	env.SetHeader(headerTimeout, strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
	// The member the call goes to may die while it waits: its answer will
	// never come. protoactor says so on the event stream, when the
	// endpoint's connection fails for good or the member leaves the
	// topology (a killed member's membership expires); the call is then
	// answered at once rather than at its deadline (D189). Subscribed
	// before the send, so no such event is missed.
	left := make(chan struct{})
	var once sync.Once
	sub := sys.EventStream.Subscribe(func(evt any) {
		if memberGone(evt, pid.Address) {
			once.Do(func() { close(left) })
		}
	})
	defer sys.EventStream.Unsubscribe(sub)
	sys.Root.Send(pid, env)
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f.Result()
		done <- result{v, err}
	}()
	select {
	case <-left:
		select {
		case r := <-done: // an answer that came with the news is kept
			return answered(r.v, r.err)
		default:
			return nil, MemberLeft()
		}
	case r := <-done:
		return answered(r.v, r.err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answered reads a future's result as the shard's answer.
func answered(v any, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	b, ok := v.(*wrapperspb.BytesValue)
	if !ok {
		return nil, fmt.Errorf("shard: the shard answered %T", v)
	}
	return b.Value, nil
}

// memberGone reports whether evt says the member at address is gone:
// its endpoint terminated, or it left the cluster's topology.
func memberGone(evt any, address string) bool {
	switch e := evt.(type) {
	case *remote.EndpointTerminatedEvent:
		return e.Address == address
	case *cluster.ClusterTopology:
		for _, m := range e.Left {
			if m.Address() == address {
				return true
			}
		}
	}
	return false
}

// isDeadLetter reports whether err says the message reached no actor.
func isDeadLetter(err error) bool {
	return errors.Is(err, actor.ErrDeadLetter) || errors.Is(err, remote.ErrDeadLetter)
}
