package venue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// DefaultInstrumentTTL is the InstrumentCache TTL used when ttl ≤ 0. Bybit
// changes the spot max-qty rules twice a month (docs/bybit.md "Market endpoints"); 15 minutes
// keeps the cache honest without re-fetching on every order.
const DefaultInstrumentTTL = 15 * time.Minute

// InstrumentCache keeps instrument rules for a TTL. It is safe for
// concurrent use: concurrent misses for the same (category, symbol) share
// one fetch (golang.org/x/sync/singleflight). Errors are not cached. Get
// returns a copy the caller may keep.
type InstrumentCache struct {
	// fixed at construction
	client *Client
	ttl    time.Duration
	now    func() time.Time

	// fetches collapses concurrent misses of one key into one fetch.
	fetches singleflight.Group
	// ahead: an entry older than half the TTL is read again in the
	// background while it is served (RefreshAhead).
	ahead atomic.Bool

	mu      sync.Mutex
	entries map[instrumentKey]messages.Instrument // guarded by mu
}

type instrumentKey struct {
	cat    messages.Category
	symbol string
}

// NewInstrumentCache returns a cache over c. ttl ≤ 0 means
// DefaultInstrumentTTL; now nil means time.Now. Entries expire when
// now() − fetched ≥ ttl.
func NewInstrumentCache(c *Client, ttl time.Duration, now func() time.Time) *InstrumentCache {
	if ttl <= 0 {
		ttl = DefaultInstrumentTTL
	}
	if now == nil {
		now = time.Now
	}
	return &InstrumentCache{
		client:  c,
		ttl:     ttl,
		now:     now,
		entries: map[instrumentKey]messages.Instrument{},
	}
}

// Get returns the rules of symbol in cat, from the cache while fresh,
// otherwise from the venue. A fetch outlives a cancelled caller (it is
// bounded by the client's timeout and retries) so that other callers
// waiting on it are not failed by one caller's cancellation; each caller
// still returns as soon as its own ctx is done.
func (ic *InstrumentCache) Get(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error) {
	if err := checkMarket(cat, symbol); err != nil {
		return nil, err
	}
	key := instrumentKey{cat, symbol}
	if in, ok := ic.fresh(key); ok {
		if ic.ahead.Load() && ic.now().Sub(in.FetchedAt) >= ic.ttl/2 {
			// Refreshed ahead of the TTL, in the background: a
			// decision seldom waits for the rules.
			ic.refresh(ctx, key)
		}
		return &in, nil
	}
	// DoChan runs the fetch on a goroutine of its own, so the caller can
	// stop waiting on its ctx while the fetch goes on for the others.
	fetchCtx := context.WithoutCancel(ctx)
	call := ic.fetches.DoChan(string(cat)+"\x00"+symbol, func() (v any, err error) {
		// DoChan re-raises a panic of the fetch on a goroutine of its
		// own, where no caller's recover reaches it and the process
		// dies; the fetch's panic is its error instead (answered
		// internal_error, like a panic of any read).
		defer func() {
			if r := recover(); r != nil {
				v, err = nil, messages.Internal(fmt.Errorf("instrument fetch panicked: %v", r))
			}
		}()
		return ic.fetch(fetchCtx, key)
	})
	var res singleflight.Result
	select {
	case res = <-call:
	case <-ctx.Done():
		f := &failure{rule: ruleByFailure[FailCanceled], reason: string(FailCanceled), cause: ctx.Err()}
		return nil, f.toError(false, PathInstruments, 1, ic.now())
	}
	if res.Err != nil {
		return nil, res.Err
	}
	in := res.Val.(messages.Instrument)
	return &in, nil
}

// RefreshAhead makes Get read an entry again in the background once it
// is older than half the TTL, while it still serves it: a decision
// seldom waits for the rules (the market feed turns it on, D148).
func (ic *InstrumentCache) RefreshAhead() { ic.ahead.Store(true) }

// refresh reads key's rules again in the background (one read at a time
// per key); the cache keeps its entry until the new one is in.
func (ic *InstrumentCache) refresh(ctx context.Context, key instrumentKey) {
	fetchCtx := context.WithoutCancel(ctx)
	ic.fetches.DoChan("refresh\x00"+string(key.cat)+"\x00"+key.symbol, func() (v any, err error) {
		defer func() {
			if r := recover(); r != nil {
				v, err = nil, messages.Internal(fmt.Errorf("instrument refresh panicked: %v", r))
			}
		}()
		in, err := ic.client.Instrument(fetchCtx, key.cat, key.symbol)
		if err != nil {
			return nil, err
		}
		ic.mu.Lock()
		defer ic.mu.Unlock()
		in.FetchedAt = ic.now().UTC()
		ic.entries[key] = *in
		return nil, nil
	})
}

// fresh returns key's cached rules while they are within the TTL.
func (ic *InstrumentCache) fresh(key instrumentKey) (messages.Instrument, bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	in, ok := ic.entries[key]
	return in, ok && ic.now().Sub(in.FetchedAt) < ic.ttl
}

// fetch reads key's rules from the venue and caches them. A fetch that
// starts just after another one filled the cache takes the cached rules
// instead, so misses racing a completed fetch do not read twice.
func (ic *InstrumentCache) fetch(ctx context.Context, key instrumentKey) (messages.Instrument, error) {
	if in, ok := ic.fresh(key); ok {
		return in, nil
	}
	in, err := ic.client.Instrument(ctx, key.cat, key.symbol)
	if err != nil {
		return messages.Instrument{}, err
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	// The cache's clock decides freshness, so tests can pin it.
	in.FetchedAt = ic.now().UTC()
	ic.entries[key] = *in
	return *in, nil
}

// Invalidate drops the cached rules of symbol in cat, e.g. after the venue
// refused an order for a rule the cache did not know.
func (ic *InstrumentCache) Invalidate(cat messages.Category, symbol string) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	delete(ic.entries, instrumentKey{cat, symbol})
}
