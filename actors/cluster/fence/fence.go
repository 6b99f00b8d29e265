package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Errors of a lost lock.
var (
	// ErrExpired: no renewal succeeded in time; the lease may be about to
	// expire on the server.
	ErrExpired = errors.New("fence: the shard lease was not renewed in time")
	// ErrLeaseGone: etcd answered that the lease does not exist any more.
	ErrLeaseGone = errors.New("fence: the shard lease is gone")
	// ErrReleased: the holder released the lock.
	ErrReleased = errors.New("fence: the shard lock was released")
)

// Options configures Acquire. Zero fields take the defaults.
type Options struct {
	// TTL is the lease's time to live, in whole seconds (default 5 s;
	// etcd may grant more than asked, never less, and the granted TTL is
	// used).
	TTL time.Duration
	// Margin is how long before the earliest possible server-side expiry
	// the lock stops counting itself held (default TTL/4, at least
	// 250 ms). It must cover the time a writer takes between its check
	// and the end of its write.
	Margin time.Duration
	// Renew is the time between renewals (default TTL/3).
	Renew time.Duration
	// Owner, when set, is written as the value of the lock key once the
	// lock is held (the member's advertised address, HOST:PORT), so that
	// readers of etcd (`cluster status`) see who holds the shard. The key
	// keeps its create revision, so the epoch does not change.
	Owner string
}

func (o Options) withDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = 5 * time.Second
	}
	if o.TTL < time.Second {
		o.TTL = time.Second
	}
	if o.Margin <= 0 {
		o.Margin = max(o.TTL/4, 250*time.Millisecond)
	}
	if o.Renew <= 0 {
		o.Renew = o.TTL / 3
	}
	return o
}

// Lock is one held shard lock. Its methods are safe for concurrent use.
type Lock struct {
	cli     *clientv3.Client
	opts    Options
	lease   clientv3.LeaseID
	session *concurrency.Session
	mutex   *concurrency.Mutex
	epoch   uint64
	key     string

	mu       sync.Mutex
	deadline time.Time // held until then (monotonic)
	err      error     // why it was lost, once lost
	lost     chan struct{}
	stop     chan struct{} // closed to end the renewal and the watchdog
	wg       sync.WaitGroup
	release  sync.Once
}

// Acquire takes the lock under prefix (one prefix per shard, e.g.
// "/guarded-exchange/NAME/shards/7/lock/"), waiting while another session
// holds it, until ctx ends. The lease is created and renewed from the
// start, so a long wait does not let it lapse; if it lapses anyway the
// wait ends with the lock's error.
func Acquire(ctx context.Context, cli *clientv3.Client, prefix string, o Options) (*Lock, error) {
	o = o.withDefaults()
	ttl := int64((o.TTL + time.Second - 1) / time.Second)
	t0 := time.Now()
	g, err := cli.Grant(ctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("fence: grant lease: %w", err)
	}
	l := &Lock{cli: cli, opts: o, lease: g.ID, lost: make(chan struct{}), stop: make(chan struct{})}
	l.deadline = t0.Add(time.Duration(g.TTL)*time.Second - o.Margin)
	// The session keeps the lease alive in the background too; only the
	// renewals below move the deadline.
	sctx, scancel := context.WithCancel(context.Background())
	l.session, err = concurrency.NewSession(cli, concurrency.WithLease(g.ID), concurrency.WithContext(sctx))
	if err != nil {
		scancel()
		l.revoke()
		return nil, fmt.Errorf("fence: session: %w", err)
	}
	l.wg.Add(2)
	go l.renewLoop()
	go l.watchdog(scancel)

	// The wait for the lock ends early if the lease is lost meanwhile.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() {
		select {
		case <-l.lost:
			wcancel()
		case <-wctx.Done():
		}
	}()
	l.mutex = concurrency.NewMutex(l.session, prefix)
	if err := l.mutex.Lock(wctx); err != nil {
		if lerr := l.Err(); lerr != nil {
			err = lerr
		}
		l.Release()
		return nil, fmt.Errorf("fence: lock %s: %w", prefix, err)
	}
	l.key = l.mutex.Key()
	resp, err := cli.Get(wctx, l.key)
	if err == nil && (len(resp.Kvs) == 0 || resp.Kvs[0].Lease != int64(g.ID)) {
		err = ErrLeaseGone
	}
	if err != nil {
		l.Release()
		return nil, fmt.Errorf("fence: read lock key: %w", err)
	}
	l.epoch = uint64(resp.Kvs[0].CreateRevision)
	if o.Owner != "" {
		// Only while the key is still this lock's: a key deleted with its
		// lease in between is not recreated.
		tr, err := cli.Txn(wctx).
			If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", resp.Kvs[0].CreateRevision)).
			Then(clientv3.OpPut(l.key, o.Owner, clientv3.WithLease(g.ID))).
			Commit()
		if err == nil && !tr.Succeeded {
			err = ErrLeaseGone
		}
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("fence: write the owner: %w", err)
		}
	}
	if !l.Held() {
		err := l.Err()
		l.Release()
		return nil, err
	}
	return l, nil
}

// Epoch returns the lock's epoch: the create revision of its key.
func (l *Lock) Epoch() uint64 { return l.epoch }

// Key returns the lock's key in etcd.
func (l *Lock) Key() string { return l.key }

// Lost returns a channel closed once the lock is lost or released.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Held reports whether the lock still counts as held right now: not lost
// and the clock before the deadline. A writer calls it just before each
// write; it does not wait for the watchdog's timer.
func (l *Lock) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err == nil && time.Now().Before(l.deadline)
}

// Err returns why the lock was lost (ErrExpired, ErrLeaseGone,
// ErrReleased), or nil while it is held. Past the deadline it is
// ErrExpired even before the watchdog has closed Lost.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil && !time.Now().Before(l.deadline) {
		return ErrExpired
	}
	return l.err
}

// Deadline returns the instant until which the lock counts as held, as
// far as the renewals so far go.
func (l *Lock) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// lose marks the lock lost with err (the first reason wins) and closes
// Lost.
func (l *Lock) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = err
	close(l.lost)
}

// Release gives the lock up: Lost closes, the renewals stop, the key is
// deleted and the lease revoked (best effort, bounded by the TTL), so the
// next owner need not wait for the lease to expire. A second call does
// nothing more.
func (l *Lock) Release() {
	l.lose(ErrReleased)
	l.release.Do(func() {
		close(l.stop)
		l.wg.Wait()
		if l.session != nil {
			l.session.Orphan()
		}
		l.revoke()
	})
}

func (l *Lock) revoke() {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.TTL)
	defer cancel()
	// Revoking deletes the lock key with the lease.
	l.cli.Revoke(ctx, l.lease)
}

// renewLoop renews the lease every Renew and moves the deadline to the
// renewal's send time + TTL - Margin.
func (l *Lock) renewLoop() {
	defer l.wg.Done()
	t := time.NewTimer(l.opts.Renew)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.lost:
			return
		case <-t.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.Renew)
		resp, err := l.cli.KeepAliveOnce(ctx, l.lease)
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			l.lose(ErrLeaseGone)
			return
		case err == nil:
			next := sent.Add(time.Duration(resp.TTL)*time.Second - l.opts.Margin)
			l.mu.Lock()
			if l.err == nil && next.After(l.deadline) && sent.Before(l.deadline) {
				// A renewal sent after the deadline does not revive the
				// lock: the writers have been told it is lost.
				l.deadline = next
			}
			l.mu.Unlock()
		}
		// Any other error: try again at the next tick; the watchdog ends
		// it at the deadline.
		t.Reset(l.opts.Renew)
	}
}

// watchdog closes Lost at the deadline (re-armed as renewals move it) or
// when the session's own keep-alive ends.
func (l *Lock) watchdog(stopSession context.CancelFunc) {
	defer l.wg.Done()
	defer stopSession()
	t := time.NewTimer(time.Until(l.Deadline()))
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.lost:
			return
		case <-l.session.Done():
			l.lose(ErrLeaseGone)
			return
		case <-t.C:
			if d := time.Until(l.Deadline()); d > 0 {
				t.Reset(d)
				continue
			}
			l.lose(ErrExpired)
			return
		}
	}
}
