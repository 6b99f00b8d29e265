package actors

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// BenchmarkCommitKeyedOrder24h is what the user actor spends committing
// one keyed order (prune, then the order_attempt and its order_outcome)
// when the last 24 h already hold n keyed orders: the order part changes
// in place (D77), so this must not grow with n (it did, by copying the
// whole table, while it was copy on write). n = 14,400 is max_orders_per_minute's
// default (10) kept up for a day. The clock moves by 24 h / n per
// iteration, so one old order leaves the window as one comes in and the
// state stays at n orders.
func BenchmarkCommitKeyedOrder24h(b *testing.B) {
	for _, n := range []int{100, 1000, 14400} {
		b.Run(fmt.Sprintf("orders=%d", n), func(b *testing.B) {
			now := time.Now().UTC()
			step := 24 * time.Hour / time.Duration(n)
			s := &state.User{User: "bench", Idempotency: map[string]state.IdempotencyEntry{}}
			notional := decimal.RequireFromString("30.01")
			for i := range n {
				at := now.Add(-time.Duration(n-1-i) * step)
				id := fmt.Sprintf("gx-bench-%d", i)
				s.Counters.Orders = append(s.Counters.Orders, state.OrderMark{ClientOrderID: id, At: at, NotionalUSDT: notional, RiskIncreasing: true, Rated: true})
				s.Idempotency[fmt.Sprintf("key-%d", i)] = state.IdempotencyEntry{ArgsSHA256: "h", ClientOrderID: id, At: at, Status: messages.OutcomeAccepted, Answer: []byte(`{"status":"accepted"}`)}
			}
			i := 0
			for b.Loop() {
				i++
				now = now.Add(step)
				id, key := fmt.Sprintf("gx-new-%d", i), fmt.Sprintf("new-%d", i)
				s.Prune(now)
				s.Apply(state.Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ActionID: "a", ClientOrderID: id, Tool: "place_order",
					Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: now, NotionalUSDT: notional, RiskIncreasing: true, IdempotencyKey: key, ArgsSHA256: "h"}})
				s.Prune(now)
				s.Apply(state.Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{ActionID: "a", ClientOrderID: id, At: now, Status: messages.OutcomeAccepted,
					Answer: []byte(`{"status":"accepted"}`)}})
				if len(s.Idempotency) != n || len(s.Counters.Orders) != n || len(s.Attempts) != 0 {
					b.Fatalf("%d keys, %d marks, %d open attempts", len(s.Idempotency), len(s.Counters.Orders), len(s.Attempts))
				}
			}
		})
	}
}

// BenchmarkReplayKeyedOrders24h is the start-up replay of one user's last
// 24 h of keyed orders (an order_attempt and its order_outcome each): it
// goes through the same prune and Apply as a commit, once per record.
func BenchmarkReplayKeyedOrders24h(b *testing.B) {
	const n = 14400
	now := time.Now().UTC()
	step := 24 * time.Hour / time.Duration(n)
	var recs []wal.Record
	add := func(at time.Time, ev state.Event) {
		payload, err := json.Marshal(ev.Payload)
		if err != nil {
			b.Fatal(err)
		}
		actor := messages.ActorCLIAdmin
		if ev.Type != messages.RecordUserCreated {
			actor = messages.ActorAgent
		}
		recs = append(recs, wal.Record{Seq: uint64(len(recs) + 1), Time: at, Type: uint16(ev.Type), User: "bench", Actor: actor, Payload: payload})
	}
	start := now.Add(-24 * time.Hour).Add(step)
	add(start, state.NewUserEvent("bench", messages.PolicySettings{}))
	notional := decimal.RequireFromString("30.01")
	for i := range n {
		at := start.Add(time.Duration(i) * step)
		id := fmt.Sprintf("gx-bench-%d", i)
		add(at, state.Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ActionID: "a", ClientOrderID: id, Tool: "place_order",
			Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: at, NotionalUSDT: notional, RiskIncreasing: true, IdempotencyKey: fmt.Sprint("key-", i), ArgsSHA256: "h"}})
		add(at, state.Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{ActionID: "a", ClientOrderID: id, At: at, Status: messages.OutcomeAccepted,
			Answer: []byte(`{"status":"accepted"}`)}})
	}
	for b.Loop() {
		r := NewUserReplay()
		for _, rec := range recs {
			if err := r.OnRecord(rec); err != nil {
				b.Fatal(err)
			}
		}
		states, err := r.states(now)
		if err != nil {
			b.Fatal(err)
		}
		if s := states["bench"]; s == nil || len(s.Idempotency) != n || len(s.Counters.Orders) != n {
			b.Fatalf("replayed %+v", s)
		}
	}
}
