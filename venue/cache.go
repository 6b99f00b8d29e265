package venue

import (
	"context"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// DefaultInstrumentTTL is the InstrumentCache TTL used when ttl ≤ 0. Bybit
// changes the spot max-qty rules twice a month (docs/bybit.md "Market endpoints"); 15 minutes
// keeps the cache honest without re-fetching on every order.
const DefaultInstrumentTTL = 15 * time.Minute

// InstrumentCache keeps instrument rules for a TTL. It is safe for
// concurrent use: concurrent misses for the same (category, symbol) share
// one fetch. Errors are not cached. Get returns a copy the caller may keep.
type InstrumentCache struct {
	// fixed at construction
	client *Client
	ttl    time.Duration
	now    func() time.Time

	mu       sync.Mutex
	entries  map[instrumentKey]messages.Instrument // guarded by mu
	inflight map[instrumentKey]*instrumentCall     // guarded by mu
}

type instrumentKey struct {
	cat    messages.Category
	symbol string
}

// instrumentCall is one fetch in progress; done is closed when in and err
// are set.
type instrumentCall struct {
	done chan struct{}
	in   *messages.Instrument
	err  error
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
		client:   c,
		ttl:      ttl,
		now:      now,
		entries:  map[instrumentKey]messages.Instrument{},
		inflight: map[instrumentKey]*instrumentCall{},
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
	ic.mu.Lock()
	if in, ok := ic.entries[key]; ok && ic.now().Sub(in.FetchedAt) < ic.ttl {
		ic.mu.Unlock()
		return &in, nil
	}
	call := ic.inflight[key]
	if call == nil {
		call = &instrumentCall{done: make(chan struct{})}
		ic.inflight[key] = call
		go ic.fetch(context.WithoutCancel(ctx), key, call)
	}
	ic.mu.Unlock()

	select {
	case <-call.done:
	case <-ctx.Done():
		f := &failure{rule: ruleByFailure[FailCanceled], reason: string(FailCanceled), cause: ctx.Err()}
		return nil, f.toError(false, PathInstruments, 1, ic.now())
	}
	if call.err != nil {
		return nil, call.err
	}
	in := *call.in
	return &in, nil
}

func (ic *InstrumentCache) fetch(ctx context.Context, key instrumentKey, call *instrumentCall) {
	in, err := ic.client.Instrument(ctx, key.cat, key.symbol)
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if err == nil {
		// The cache's clock decides freshness, so tests can pin it.
		in.FetchedAt = ic.now().UTC()
		ic.entries[key] = *in
	}
	call.in, call.err = in, err
	delete(ic.inflight, key)
	close(call.done)
}

// Invalidate drops the cached rules of symbol in cat, e.g. after the venue
// refused an order for a rule the cache did not know.
func (ic *InstrumentCache) Invalidate(cat messages.Category, symbol string) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	delete(ic.entries, instrumentKey{cat, symbol})
}
