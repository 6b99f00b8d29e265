package actors

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Windows of the many-record order state (SPEC §6, §8).
const (
	// idempotencyWindow is how long an idempotency key is claimed.
	idempotencyWindow = 24 * time.Hour
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
}

// IdempotencyEntry is one claimed idempotency key (SPEC §8 step 6): the
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
// idempotency key: an identical one within safetyNet of its answer (or
// safetyNetUnknown after an unknown outcome) is a repeat.
type RecentOrder struct {
	ArgsSHA256    string
	ClientOrderID string
	At            time.Time
	Unknown       bool
	Answer        json.RawMessage
}

// The safety net for identical risk-increasing orders without a key.
const (
	safetyNet        = 30 * time.Second
	safetyNetUnknown = 10 * time.Minute
)

// OrderMark is one order in the rolling counters.
type OrderMark struct {
	ClientOrderID  string
	At             time.Time
	NotionalUSDT   decimal.Decimal
	RiskIncreasing bool
	Confirmed      bool
	// Rated says the attempt counts against max_orders_per_minute and
	// max_unconfirmed_actions_per_hour: it was risk-increasing when it
	// was sent (D51). It stays set when the venue rejects the order.
	Rated bool
}

// RollingCounters holds the orders of the last 24 h, oldest first: the
// rolling daily notional and the per-minute and per-hour counts derive
// from them.
type RollingCounters struct {
	Orders []OrderMark
}

// Window sums the counters as of now: the risk-increasing notional of the
// last 24 h, the risk-increasing attempts of the last minute and the
// unconfirmed risk-increasing attempts of the last hour. Risk-reducing
// attempts (cancels, closes, reduce-only orders, stops, lower leverage)
// are kept for the order origin but never count (D51).
func (c RollingCounters) Window(now time.Time) (dailyNotional decimal.Decimal, perMinute, unconfirmedPerHour int) {
	for _, m := range c.Orders {
		if m.RiskIncreasing && now.Sub(m.At) < notionalWindow {
			dailyNotional = dailyNotional.Add(m.NotionalUSDT)
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
	return dailyNotional, perMinute, unconfirmedPerHour
}

// applyOrder applies the order event records. Every change builds new maps
// and slices (copy on write), so a committed snapshot is never changed.
// The windows are pruned by the caller, with the journal's time (the live
// clock, or the record's time at replay), never a payload's own time.
func (s *UserState) applyOrder(ev Event) bool {
	switch p := ev.Payload.(type) {
	case messages.OrderAttemptEvent:
		att := maps.Clone(s.Attempts)
		if att == nil {
			att = map[string]Attempt{}
		}
		att[p.ClientOrderID] = Attempt{
			ActionID: p.ActionID, ClientOrderID: p.ClientOrderID, Environment: p.Environment, Category: p.Category, Symbol: p.Symbol, At: p.At,
			NotionalUSDT: p.NotionalUSDT, RiskIncreasing: p.RiskIncreasing, IdempotencyKey: p.IdempotencyKey, ArgsSHA256: p.ArgsSHA256,
		}
		s.Attempts = att
		s.Counters.Orders = append(slices.Clip(s.Counters.Orders), OrderMark{ClientOrderID: p.ClientOrderID, At: p.At, NotionalUSDT: p.NotionalUSDT, RiskIncreasing: p.RiskIncreasing, Confirmed: p.Confirmed, Rated: p.RiskIncreasing})
		if p.IdempotencyKey != "" {
			idem := maps.Clone(s.Idempotency)
			if idem == nil {
				idem = map[string]IdempotencyEntry{}
			}
			idem[p.IdempotencyKey] = IdempotencyEntry{ArgsSHA256: p.ArgsSHA256, ClientOrderID: p.ClientOrderID, At: p.At}
			s.Idempotency = idem
		}
	case messages.OrderOutcomeEvent:
		a, open := s.Attempts[p.ClientOrderID]
		if !open {
			return true
		}
		att := maps.Clone(s.Attempts)
		delete(att, p.ClientOrderID)
		s.Attempts = att
		if p.Status == messages.OutcomeRejected && a.RiskIncreasing {
			// Nothing was placed: the order does not count against the
			// daily notional (it still counts against the rate).
			orders := slices.Clone(s.Counters.Orders)
			for i := range orders {
				if orders[i].ClientOrderID == a.ClientOrderID {
					orders[i].RiskIncreasing = false
					break
				}
			}
			s.Counters.Orders = orders
		}
		if e, ok := s.Idempotency[a.IdempotencyKey]; ok && a.IdempotencyKey != "" && e.ClientOrderID == p.ClientOrderID {
			idem := maps.Clone(s.Idempotency)
			if p.ReleaseKey {
				delete(idem, a.IdempotencyKey)
			} else {
				e.Status, e.Answer = p.Status, p.Answer
				idem[a.IdempotencyKey] = e
			}
			s.Idempotency = idem
		}
		if a.IdempotencyKey == "" && a.RiskIncreasing && a.ArgsSHA256 != "" && !p.ReleaseKey && len(p.Answer) > 0 {
			s.Recent = append(slices.Clip(s.Recent), RecentOrder{ArgsSHA256: a.ArgsSHA256, ClientOrderID: a.ClientOrderID, At: p.At,
				Unknown: p.Status == messages.OutcomeNotFound, Answer: p.Answer})
		}
	default:
		return false
	}
	return true
}

// prune drops, as of now, the counter marks and idempotency entries that
// have left their windows. Open attempts never expire: they are closed
// only by an outcome.
func (s *UserState) prune(now time.Time) {
	s.pruneConfirmations(now)
	if n := len(s.Counters.Orders); n > 0 && now.Sub(s.Counters.Orders[0].At) >= notionalWindow {
		i := 0
		for i < n && now.Sub(s.Counters.Orders[i].At) >= notionalWindow {
			i++
		}
		s.Counters.Orders = slices.Clone(s.Counters.Orders[i:])
	}
	if n := len(s.Recent); n > 0 && now.Sub(s.Recent[0].At) >= safetyNetUnknown {
		i := 0
		for i < n && now.Sub(s.Recent[i].At) >= safetyNetUnknown {
			i++
		}
		s.Recent = slices.Clone(s.Recent[i:])
	}
	var stale []string
	for k, e := range s.Idempotency {
		if now.Sub(e.At) >= idempotencyWindow {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		idem := maps.Clone(s.Idempotency)
		for _, k := range stale {
			delete(idem, k)
		}
		s.Idempotency = idem
	}
}
