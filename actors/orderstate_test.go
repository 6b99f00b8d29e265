package actors

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

// fingerprint prints every field of s, unexported ones (the key expiry
// heap) and the contents of maps and slices included.
func fingerprint(s *UserState) string { return fmt.Sprintf("%+v", *s) }

// attempt is the order_attempt of id with an idempotency key ("": none).
func attempt(id, key string, at time.Time, risk bool) Event {
	return Event{messages.RecordOrderAttempt, messages.OrderAttemptEvent{
		ActionID: id, ClientOrderID: id, At: at, Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		NotionalUSDT: decimal.NewFromInt(100), RiskIncreasing: risk, IdempotencyKey: key, ArgsSHA256: "h-" + id,
	}}
}

// outcome is the order_outcome that closes id.
func outcome(id, status string, at time.Time, release bool) Event {
	return Event{messages.RecordOrderOutcome, messages.OrderOutcomeEvent{
		ActionID: id, ClientOrderID: id, At: at, Status: status, ReleaseKey: release, Answer: json.RawMessage(`{"status":"` + status + `"}`),
	}}
}

// The order part changes in place (D77), so no state handed out by a
// committed snapshot may share a map or a backing array with another: a
// reader's snapshot has no order part, and every restarted incarnation
// gets its own copy. Each step below changes memory that a shared map,
// slice or heap would expose to the others.
func TestCommittedSnapshotsShareNoOrderState(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	live := newUserState("ada")
	live.Apply(NewUserEvent("ada", messages.PolicySettings{}))
	// Open attempts with and without keys, answered keyless orders (the
	// safety net), so that every slice has spare capacity an append could
	// share.
	for i := range 6 {
		id := fmt.Sprintf("gx-a%d", i)
		key := ""
		if i%2 == 0 {
			key = fmt.Sprintf("k%d", i)
		}
		at := t0.Add(time.Duration(i) * time.Minute)
		live.prune(at)
		live.Apply(attempt(id, key, at, true))
	}
	for i := range 3 {
		id := fmt.Sprintf("gx-r%d", i)
		at := t0.Add(time.Duration(10+i) * time.Minute)
		live.prune(at)
		live.Apply(attempt(id, "", at, true))
		live.Apply(outcome(id, messages.OutcomeAccepted, at, false))
	}
	if cap(live.Counters.Orders) == len(live.Counters.Orders) || cap(live.Recent) == len(live.Recent) {
		t.Fatalf("the set-up must leave spare capacity: orders %d/%d, recent %d/%d",
			len(live.Counters.Orders), cap(live.Counters.Orders), len(live.Recent), cap(live.Recent))
	}

	c := &committed{}
	c.store(live)
	reader := c.load()
	if reader.Attempts != nil || reader.Idempotency != nil || reader.Counters.Orders != nil || reader.Recent != nil || reader.keyExpiry != nil {
		t.Fatalf("a reader's snapshot carries the order part: %+v", *reader)
	}
	if reader.User != "ada" || !reader.Exists {
		t.Fatalf("a reader's snapshot lost the user: %+v", *reader)
	}
	readerWas, liveWas := fingerprint(reader), fingerprint(live)

	// Two incarnations resume from the same snapshot and go different ways.
	r1, r2 := c.resume(), c.resume()
	if fingerprint(r1) != liveWas || fingerprint(r2) != liveWas {
		t.Fatalf("a resumed state differs from the committed one:\nlive    %s\nresumed %s", liveWas, fingerprint(r1))
	}
	later := t0.Add(15 * time.Minute)
	step := func(s *UserState, ev Event) { s.prune(later); s.Apply(ev) }
	// r1: a rejection (flips a shared mark), an answer on a key (changes a
	// shared entry), a release (deletes one), a new keyed order (pushes on
	// the heap, appends to the marks) and a keyless answer (appends to the
	// safety net).
	step(r1, outcome("gx-a0", messages.OutcomeRejected, later, false))
	step(r1, outcome("gx-a2", messages.OutcomeAccepted, later, false))
	step(r1, outcome("gx-a4", messages.OutcomeNotFound, later, true))
	step(r1, attempt("gx-one", "k-one", later, true))
	step(r1, attempt("gx-one-free", "", later, true))
	step(r1, outcome("gx-one-free", messages.OutcomeAccepted, later, false))
	r1Was := fingerprint(r1)
	// r2 appends into the same slots r1 did, and closes the attempts r1
	// left open.
	step(r2, attempt("gx-two", "k-two", later, true))
	step(r2, attempt("gx-two-free", "", later, true))
	step(r2, outcome("gx-two-free", messages.OutcomeAccepted, later, false))
	step(r2, outcome("gx-a1", messages.OutcomeRejected, later, false))
	step(r2, outcome("gx-a3", messages.OutcomeAccepted, later, false))

	if got := fingerprint(r1); got != r1Was {
		t.Fatalf("one incarnation changed another's state:\nthen %s\nnow  %s", r1Was, got)
	}
	if got := fingerprint(live); got != liveWas {
		t.Fatalf("a resumed incarnation changed the one it resumed from:\nthen %s\nnow  %s", liveWas, got)
	}
	// The live state moves on: the reader's snapshot and the resumed ones
	// stay as they were.
	r2Was := fingerprint(r2)
	live.prune(t0.Add(48 * time.Hour))
	live.Apply(attempt("gx-live", "k0", t0.Add(48*time.Hour), true))
	c.store(live)
	if got := fingerprint(reader); got != readerWas {
		t.Fatalf("a reader's snapshot changed:\nthen %s\nnow  %s", readerWas, got)
	}
	if fingerprint(r1) != r1Was || fingerprint(r2) != r2Was {
		t.Fatal("the live state changed a resumed incarnation's state")
	}
	// And each went its own way.
	if _, ok := r1.Idempotency["k-one"]; !ok || r1.Attempts["gx-a1"].ClientOrderID == "" || len(r1.Recent) != 4 {
		t.Fatalf("r1 lost its own changes: %+v", *r1)
	}
	if _, ok := r2.Idempotency["k-one"]; ok || r2.Idempotency["k4"].ClientOrderID != "gx-a4" || len(r2.Attempts) != 5 {
		t.Fatalf("r2 holds r1's changes: %+v", *r2)
	}
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
	maps.DeleteFunc(r.idem, func(_ string, e IdempotencyEntry) bool { return now.Sub(e.At) >= idempotencyWindow })
}

// The in-place order part with its key heap keeps exactly what the
// whole-table scan kept, also when claim times are out of order (a
// payload's time may lead the journal's by the allowed clock skew), the
// clock steps back, and keys are released and claimed again.
func TestOrderStateMatchesFullScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 99))
	for round := range 20 {
		s := newUserState("bob")
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
			s.prune(now)
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
	s := &UserState{User: "cy", Idempotency: map[string]IdempotencyEntry{}}
	for i := range 200 {
		s.Idempotency[fmt.Sprint("k", i)] = IdempotencyEntry{ClientOrderID: fmt.Sprint("gx-", i), At: t0.Add(time.Duration(rng.IntN(3600)) * time.Second)}
	}
	want := maps.Clone(s.Idempotency)
	for now := t0.Add(idempotencyWindow); len(want) > 0; now = now.Add(time.Minute) {
		s.prune(now)
		maps.DeleteFunc(want, func(_ string, e IdempotencyEntry) bool { return now.Sub(e.At) >= idempotencyWindow })
		if !slices.Equal(slices.Sorted(maps.Keys(s.Idempotency)), slices.Sorted(maps.Keys(want))) {
			t.Fatalf("at %s: %d keys left, want %d", now, len(s.Idempotency), len(want))
		}
	}
	if len(s.Idempotency) != 0 {
		t.Fatalf("after 25 h: %v", s.Idempotency)
	}
}
