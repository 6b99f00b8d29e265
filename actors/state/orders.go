package state

import (
	"container/heap"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Windows of the many-record order state (docs/policy.md, docs/tools.md "The action path").
const (
	// IdempotencyWindow is how long an idempotency key is claimed.
	IdempotencyWindow = 24 * time.Hour
	// notionalWindow is the rolling window of daily_notional_cap_usdt.
	notionalWindow = 24 * time.Hour
)

// Attempt is an order that was journaled as order_attempt and has no
// order_outcome yet: it may exist on the venue. At start, every user with
// one reconciles it before taking new writes.
type Attempt struct {
	ActionID       string
	ClientOrderID  string
	Environment    string // the venue it was sent to; "" in older records
	Category       messages.Category
	Symbol         string
	At             time.Time
	NotionalUSDT   decimal.Decimal
	RiskIncreasing bool
	IdempotencyKey string
	ArgsSHA256     string
	// Expect is what a found order must match to settle the attempt
	// (nil in older records: client order id, category and symbol).
	Expect *messages.OrderExpectation
}

// Expectation is what an order found for the attempt must match.
func (a *Attempt) Expectation() messages.OrderExpectation {
	if a.Expect != nil {
		return *a.Expect
	}
	return messages.OrderExpectation{Category: a.Category, Symbol: a.Symbol, ClientOrderID: a.ClientOrderID}
}

// IdempotencyEntry is one claimed idempotency key (docs/tools.md "The action path" step 6): the
// arguments it was claimed with, and the outcome once known.
type IdempotencyEntry struct {
	ArgsSHA256    string
	ClientOrderID string
	At            time.Time
	// Status is empty while the action runs ("in_progress"), else the
	// order_outcome status.
	Status string
	// Answer is the first answer, given again to a repeat.
	Answer json.RawMessage
}

// RecentOrder is one answered risk-increasing order sent without an
// idempotency key: an identical one within SafetyNet of its answer (or
// SafetyNetUnknown after an unknown outcome) is a repeat.
type RecentOrder struct {
	ArgsSHA256    string
	ClientOrderID string
	// Environment is the venue the order went to ("" in older records):
	// an identical order on another venue is not a repeat of it.
	Environment string
	At          time.Time
	Unknown     bool
	Answer      json.RawMessage
}

// The safety net for identical risk-increasing orders without a key.
const (
	SafetyNet        = 30 * time.Second
	SafetyNetUnknown = 10 * time.Minute
)

// OrderMark is one order in the rolling counters.
type OrderMark struct {
	ClientOrderID  string
	At             time.Time
	NotionalUSDT   decimal.Decimal
	RiskIncreasing bool
	Confirmed      bool
	// Environment is the venue the order was sent to (paper, bybit-demo,
	// ...): it counts against that venue's limits only. Empty in records
	// written before it existed, which count on every venue (D100).
	Environment string
	// Rated says the attempt counts against max_orders_per_minute and
	// max_unconfirmed_actions_per_hour: it was risk-increasing when it
	// was sent (D51). It stays set when the venue rejects the order.
	Rated bool
}

// RollingCounters holds the orders of the last 24 h, oldest first: the
// rolling daily notional and the per-minute and per-hour counts derive
// from them, per venue (D100), through running sums (windows.go, D144).
// Orders changes only through the user state's Apply and Prune; a list
// built or changed otherwise is re-summed on its next Window.
type RollingCounters struct {
	Orders []OrderMark
	w      *windowSums
}

// Window sums the counters of the venue env as of now: the
// risk-increasing notional of the last 24 h, the risk-increasing attempts
// of the last minute and the unconfirmed risk-increasing attempts of the
// last hour. Orders sent to another venue do not count; those of records
// that name no venue count on every venue (D100). Risk-reducing
// attempts (cancels, closes, reduce-only orders, stops, lower leverage)
// are kept for the order origin but never count (D51).
//
// It costs O(1) amortized: the running sums are brought to now (D144).
// Like the rest of the order part it is the owner's: it changes c's
// bookkeeping, so it is never called on a state another goroutine uses.
func (c *RollingCounters) Window(now time.Time, env string) (dailyNotional decimal.Decimal, perMinute, unconfirmedPerHour int) {
	w := c.advance(now)
	_, dailyNotional = w.spans[spanDay].total(env)
	perMinute, _ = w.spans[spanMinute].total(env)
	unconfirmedPerHour, _ = w.spans[spanHour].total(env)
	return dailyNotional, perMinute, unconfirmedPerHour
}

// resum is Window by a full pass over the marks, what the running sums
// must always equal (TestWindowSumsEqualFullResum).
func (c *RollingCounters) resum(now time.Time, env string) (dailyNotional decimal.Decimal, perMinute, unconfirmedPerHour int) {
	var daily decimalSum
	for _, m := range c.Orders {
		if m.Environment != env && m.Environment != "" {
			continue
		}
		if m.RiskIncreasing && now.Sub(m.At) < notionalWindow {
			daily.add(m.NotionalUSDT)
		}
		if !m.Rated {
			continue
		}
		if now.Sub(m.At) < time.Minute {
			perMinute++
		}
		if !m.Confirmed && now.Sub(m.At) < time.Hour {
			unconfirmedPerHour++
		}
	}
	return daily.value(), perMinute, unconfirmedPerHour
}

// applyOrder applies the order event records. The order part of the
// state (Attempts, Idempotency, Counters, Recent) is the user actor's own
// and changes in place (D77): committing an order costs O(1) amortized
// (O(log n) for a key), whatever the last 24 h hold. The windows are
// pruned by the caller, with the journal's time (the live clock, or the
// record's time at replay), never a payload's own time.
func (s *User) applyOrder(ev Event) bool {
	switch p := ev.Payload.(type) {
	case messages.OrderAttemptEvent:
		if s.Attempts == nil {
			s.Attempts = map[string]Attempt{}
		}
		s.Attempts[p.ClientOrderID] = Attempt{
			ActionID: p.ActionID, ClientOrderID: p.ClientOrderID, Environment: p.Environment, Category: p.Category, Symbol: p.Symbol, At: p.At,
			NotionalUSDT: p.NotionalUSDT, RiskIncreasing: p.RiskIncreasing, IdempotencyKey: p.IdempotencyKey, ArgsSHA256: p.ArgsSHA256, Expect: p.Expect,
		}
		s.Counters.add(OrderMark{ClientOrderID: p.ClientOrderID, At: p.At, NotionalUSDT: p.NotionalUSDT, RiskIncreasing: p.RiskIncreasing,
			Confirmed: p.Confirmed, Environment: p.Environment, Rated: p.RiskIncreasing})
		if p.IdempotencyKey != "" {
			if s.Idempotency == nil {
				s.Idempotency = map[string]IdempotencyEntry{}
			}
			s.indexKeys()
			s.Idempotency[p.IdempotencyKey] = IdempotencyEntry{ArgsSHA256: p.ArgsSHA256, ClientOrderID: p.ClientOrderID, At: p.At}
			s.keyExpiry.push(keyClaim{at: p.At, key: p.IdempotencyKey, clientOrderID: p.ClientOrderID})
		}
	case messages.OrderOutcomeEvent:
		a, open := s.Attempts[p.ClientOrderID]
		if !open {
			return true
		}
		delete(s.Attempts, p.ClientOrderID)
		if p.Status == messages.OutcomeRejected && a.RiskIncreasing {
			// Nothing was placed: the order does not count against the
			// daily notional (it still counts against the rate). Its mark
			// is searched from the newest: an outcome follows its attempt
			// closely, so only the orders sent in between are passed.
			orders := s.Counters.Orders
			for i := len(orders) - 1; i >= 0; i-- {
				if orders[i].ClientOrderID == a.ClientOrderID {
					s.Counters.unrisk(i)
					break
				}
			}
		}
		if e, ok := s.Idempotency[a.IdempotencyKey]; ok && a.IdempotencyKey != "" && e.ClientOrderID == p.ClientOrderID {
			if p.ReleaseKey {
				delete(s.Idempotency, a.IdempotencyKey)
			} else {
				e.Status, e.Answer = p.Status, p.Answer
				s.Idempotency[a.IdempotencyKey] = e
			}
		}
		if a.IdempotencyKey == "" && a.RiskIncreasing && a.ArgsSHA256 != "" && !p.ReleaseKey && len(p.Answer) > 0 {
			s.Recent = append(s.Recent, RecentOrder{ArgsSHA256: a.ArgsSHA256, ClientOrderID: a.ClientOrderID, Environment: a.Environment, At: p.At,
				Unknown: p.Status == messages.OutcomeNotFound, Answer: p.Answer})
		}
	default:
		return false
	}
	return true
}

// Prune drops, as of now, the counter marks and idempotency entries that
// have left their windows. Open attempts never expire: they are closed
// only by an outcome. Each mark, recent order and key is dropped once, so
// pruning costs O(1) amortized (O(log n) per key).
func (s *User) Prune(now time.Time) {
	s.pruneConfirmations(now)
	if n := len(s.Counters.Orders); n > 0 && now.Sub(s.Counters.Orders[0].At) >= notionalWindow {
		i := 0
		for i < n && now.Sub(s.Counters.Orders[i].At) >= notionalWindow {
			i++
		}
		s.Counters.dropFront(i)
	}
	if n := len(s.Recent); n > 0 && now.Sub(s.Recent[0].At) >= SafetyNetUnknown {
		i := 0
		for i < n && now.Sub(s.Recent[i].At) >= SafetyNetUnknown {
			i++
		}
		s.Recent = s.Recent[i:]
	}
	s.indexKeys()
	for len(s.keyExpiry) > 0 && now.Sub(s.keyExpiry[0].at) >= IdempotencyWindow {
		c := s.keyExpiry.pop()
		// A key released and claimed again has a newer claim of its own.
		if e, ok := s.Idempotency[c.key]; ok && e.ClientOrderID == c.clientOrderID {
			delete(s.Idempotency, c.key)
		}
	}
}

// indexKeys rebuilds the expiry index of the idempotency keys when it
// cannot cover them all: the table was filled without it (a state built
// by hand). Every claim pushes an entry, so a live or replayed state never
// needs it.
func (s *User) indexKeys() {
	if len(s.keyExpiry) >= len(s.Idempotency) {
		return
	}
	s.keyExpiry = make(keyExpiry, 0, len(s.Idempotency))
	for k, e := range s.Idempotency {
		s.keyExpiry = append(s.keyExpiry, keyClaim{at: e.At, key: k, clientOrderID: e.ClientOrderID})
	}
	heap.Init(&s.keyExpiry)
}

// OwnOrderPart returns s with a private copy of the order part, for a new
// owner (a restarted user actor): it never shares a map or a backing array
// with the state it was copied from.
func (s User) OwnOrderPart() *User {
	s.Attempts = maps.Clone(s.Attempts)
	s.Idempotency = maps.Clone(s.Idempotency)
	s.Counters = RollingCounters{Orders: slices.Clone(s.Counters.Orders)} // re-summed when first asked
	s.Recent = slices.Clone(s.Recent)
	s.keyExpiry = slices.Clone(s.keyExpiry)
	s.Confirmations = maps.Clone(s.Confirmations)
	return &s
}

// WithoutOrderPart returns s without the order part, for a reader on
// another goroutine: the user actor changes that part, and the
// confirmations (confirm.go), in place.
func (s User) WithoutOrderPart() *User {
	s.Attempts, s.Idempotency, s.Counters, s.Recent, s.keyExpiry = nil, nil, RollingCounters{}, nil, nil
	s.Confirmations = nil
	return &s
}

// keyClaim is one claim of an idempotency key, for its expiry.
type keyClaim struct {
	at                 time.Time
	key, clientOrderID string
}

// keyExpiry is a min-heap of the key claims by time (container/heap): the
// oldest claim leaves first. Claims are in journal order, which is nearly
// time order; the heap keeps pruning exact when it is not.
type keyExpiry []keyClaim

func (h keyExpiry) Len() int           { return len(h) }
func (h keyExpiry) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h keyExpiry) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }

// Push and Pop are container/heap's; use push and pop.
func (h *keyExpiry) Push(x any) { *h = append(*h, x.(keyClaim)) }
func (h *keyExpiry) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = keyClaim{}
	*h = old[:len(old)-1]
	return c
}

func (h *keyExpiry) push(c keyClaim) { heap.Push(h, c) }
func (h *keyExpiry) pop() keyClaim   { return heap.Pop(h).(keyClaim) }

// OrderOrigin is "system" for an order this server placed for the user: a
// "gx-" client order id among the user's own attempts (open, or in the
// last 24 h); anything else is "external", whatever its id says.
func (s *User) OrderOrigin(clientOrderID string) string {
	if !strings.HasPrefix(clientOrderID, "gx-") {
		return messages.OriginExternal
	}
	if _, ok := s.Attempts[clientOrderID]; ok {
		return messages.OriginSystem
	}
	if s.Counters.has(clientOrderID) {
		return messages.OriginSystem
	}
	return messages.OriginExternal
}
