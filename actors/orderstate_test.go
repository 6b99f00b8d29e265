package actors

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// fingerprint prints every field of s, unexported ones (the key expiry
// heap) and the contents of maps and slices included.
func fingerprint(s *state.User) string { return fmt.Sprintf("%+v", *s) }

// attempt is the order_attempt of id with an idempotency key ("": none).
func attempt(id, key string, at time.Time, risk bool) state.Event {
	return state.Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{
		ActionID: id, ClientOrderID: id, At: at, Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		NotionalUSDT: decimal.NewFromInt(100), RiskIncreasing: risk, IdempotencyKey: key, ArgsSHA256: "h-" + id,
	}}

}

// outcome is the order_outcome that closes id.
func outcome(id, status string, at time.Time, release bool) state.Event {
	return state.Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{
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
	live := state.New("ada")
	live.Apply(state.NewUserEvent("ada", messages.PolicySettings{}))
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
		live.Prune(at)
		live.Apply(attempt(id, key, at, true))
	}
	for i := range 3 {
		id := fmt.Sprintf("gx-r%d", i)
		at := t0.Add(time.Duration(10+i) * time.Minute)
		live.Prune(at)
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
	if reader.Attempts != nil || reader.Idempotency != nil || reader.Counters.Orders != nil || reader.Recent != nil || fingerprint(reader) != fingerprint(reader.WithoutOrderPart()) {
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
	step := func(s *state.User, ev state.Event) { s.Prune(later); s.Apply(ev) }
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
	live.Prune(t0.Add(48 * time.Hour))
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
