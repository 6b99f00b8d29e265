package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// attempt is the order_attempt of id with an idempotency key ("": none).
func attempt(id, key string, at time.Time, risk bool) Event {
	return Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{
		ActionID: id, ClientOrderID: id, At: at, Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		NotionalUSDT: decimal.NewFromInt(100), RiskIncreasing: risk, IdempotencyKey: key, ArgsSHA256: "h-" + id,
	}}

}

// outcome is the order_outcome that closes id.
func outcome(id, status string, at time.Time, release bool) Event {
	return Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{
		ActionID: id, ClientOrderID: id, At: at, Status: status, ReleaseKey: release, Answer: json.RawMessage(`{"status":"` + status + `"}`),
	}}

}

// refOrders is the order part's reference model: the copy-on-write code
// it replaced, pruning keys by a scan of the whole table.
type refOrders struct {
	attempts map[string]Attempt
	idem     map[string]IdempotencyEntry
	orders   []OrderMark
}

func (r *refOrders) apply(ev Event) {
	switch p := ev.Payload.(type) {
	case messages.OrderAttemptEvent:
		r.attempts[p.ClientOrderID] = Attempt{ActionID: p.ActionID, ClientOrderID: p.ClientOrderID, Category: p.Category, Symbol: p.Symbol, At: p.At,
			NotionalUSDT: p.NotionalUSDT, RiskIncreasing: p.RiskIncreasing, IdempotencyKey: p.IdempotencyKey, ArgsSHA256: p.ArgsSHA256}
		r.orders = append(r.orders, OrderMark{ClientOrderID: p.ClientOrderID, At: p.At, NotionalUSDT: p.NotionalUSDT, RiskIncreasing: p.RiskIncreasing, Rated: p.RiskIncreasing})
		if p.IdempotencyKey != "" {
			r.idem[p.IdempotencyKey] = IdempotencyEntry{ArgsSHA256: p.ArgsSHA256, ClientOrderID: p.ClientOrderID, At: p.At}
		}
	case messages.OrderOutcomeEvent:
		a, open := r.attempts[p.ClientOrderID]
		if !open {
			return
		}
		delete(r.attempts, p.ClientOrderID)
		if p.Status == messages.OutcomeRejected && a.RiskIncreasing {
			for i := range r.orders {
				if r.orders[i].ClientOrderID == a.ClientOrderID {
					r.orders[i].RiskIncreasing = false
					break
				}
			}
		}
		if e, ok := r.idem[a.IdempotencyKey]; ok && a.IdempotencyKey != "" && e.ClientOrderID == p.ClientOrderID {
			if p.ReleaseKey {
				delete(r.idem, a.IdempotencyKey)
			} else {
				e.Status, e.Answer = p.Status, p.Answer
				r.idem[a.IdempotencyKey] = e
			}
		}
	}
}

func (r *refOrders) prune(now time.Time) {
	i := 0
	for i < len(r.orders) && now.Sub(r.orders[i].At) >= notionalWindow {
		i++
	}
	r.orders = r.orders[i:]
	maps.DeleteFunc(r.idem, func(_ string, e IdempotencyEntry) bool { return now.Sub(e.At) >= IdempotencyWindow })
}

// The in-place order part with its key heap keeps exactly what the
// whole-table scan kept, also when claim times are out of order (a
// payload's time may lead the journal's by the allowed clock skew), the
// clock steps back, and keys are released and claimed again.
func TestOrderStateMatchesFullScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 99))
	for round := range 20 {
		s := New("bob")
		ref := &refOrders{attempts: map[string]Attempt{}, idem: map[string]IdempotencyEntry{}}
		now := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		var open []string
		for n := range 400 {
			switch rng.IntN(10) {
			case 0:
				now = now.Add(-time.Duration(rng.IntN(600)) * time.Second) // the clock steps back
			default:
				now = now.Add(time.Duration(rng.IntN(1800)) * time.Second)
			}
			s.Prune(now)
			ref.prune(now)
			var ev Event
			if len(open) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(open))
				id := open[i]
				open = slices.Delete(open, i, i+1)
				status := []string{messages.OutcomeAccepted, messages.OutcomeRejected, messages.OutcomeNotFound}[rng.IntN(3)]
				ev = outcome(id, status, now, rng.IntN(4) == 0)
			} else {
				id := fmt.Sprintf("gx-%d-%d", round, n)
				open = append(open, id)
				key := ""
				if rng.IntN(3) > 0 {
					key = fmt.Sprintf("k%d", rng.IntN(8))
				}
				at := now.Add(time.Duration(rng.IntN(600)-300) * time.Second)
				ev = attempt(id, key, at, rng.IntN(4) > 0)
			}
			s.Apply(ev)
			ref.apply(ev)
			if !maps.EqualFunc(s.Idempotency, ref.idem, func(a, b IdempotencyEntry) bool {
				return a.ClientOrderID == b.ClientOrderID && a.At.Equal(b.At) && a.Status == b.Status && string(a.Answer) == string(b.Answer)
			}) {
				t.Fatalf("round %d step %d: keys\ngot  %v\nwant %v", round, n, s.Idempotency, ref.idem)
			}
			if !slices.EqualFunc(s.Counters.Orders, ref.orders, func(a, b OrderMark) bool {
				return a.ClientOrderID == b.ClientOrderID && a.At.Equal(b.At) && a.RiskIncreasing == b.RiskIncreasing && a.Rated == b.Rated && a.NotionalUSDT.Equal(b.NotionalUSDT)
			}) {
				t.Fatalf("round %d step %d: marks\ngot  %v\nwant %v", round, n, s.Counters.Orders, ref.orders)
			}
			if len(s.Attempts) != len(ref.attempts) {
				t.Fatalf("round %d step %d: %d open attempts, want %d", round, n, len(s.Attempts), len(ref.attempts))
			}
		}
	}
}

// A table filled without the expiry index (a state built by hand) is
// indexed on first use, so its keys still expire, oldest first.
func TestKeysFilledByHandExpire(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	s := &User{User: "cy", Idempotency: map[string]IdempotencyEntry{}}
	for i := range 200 {
		s.Idempotency[fmt.Sprint("k", i)] = IdempotencyEntry{ClientOrderID: fmt.Sprint("gx-", i), At: t0.Add(time.Duration(rng.IntN(3600)) * time.Second)}
	}
	want := maps.Clone(s.Idempotency)
	for now := t0.Add(IdempotencyWindow); len(want) > 0; now = now.Add(time.Minute) {
		s.Prune(now)
		maps.DeleteFunc(want, func(_ string, e IdempotencyEntry) bool { return now.Sub(e.At) >= IdempotencyWindow })
		if !slices.Equal(slices.Sorted(maps.Keys(s.Idempotency)), slices.Sorted(maps.Keys(want))) {
			t.Fatalf("at %s: %d keys left, want %d", now, len(s.Idempotency), len(want))
		}
	}
	if len(s.Idempotency) != 0 {
		t.Fatalf("after 25 h: %v", s.Idempotency)
	}
}
