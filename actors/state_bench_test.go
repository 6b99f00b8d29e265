package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkCommitKeyedOrder24h is what the user actor spends committing
// one keyed order (prune, then the order_attempt and its order_outcome)
// when the last 24 h already hold n keyed orders: the state is copy on
// write, so this grows with n. n = 14,400 is max_orders_per_minute's
// default (10) kept up for a day. The clock moves by 24 h / n per
// iteration, so one old order leaves the window as one comes in and the
// state stays at n orders.
func BenchmarkCommitKeyedOrder24h(b *testing.B) {
	for _, n := range []int{100, 1000, 14400} {
		b.Run(fmt.Sprintf("orders=%d", n), func(b *testing.B) {
			now := time.Now().UTC()
			step := 24 * time.Hour / time.Duration(n)
			s := &UserState{User: "bench", Idempotency: map[string]IdempotencyEntry{}}
			notional := decimal.RequireFromString("30.01")
			for i := range n {
				at := now.Add(-time.Duration(n-1-i) * step)
				id := fmt.Sprintf("gx-bench-%d", i)
				s.Counters.Orders = append(s.Counters.Orders, OrderMark{ClientOrderID: id, At: at, NotionalUSDT: notional, RiskIncreasing: true, Rated: true})
				s.Idempotency[fmt.Sprintf("key-%d", i)] = IdempotencyEntry{ArgsSHA256: "h", ClientOrderID: id, At: at, Status: messages.OutcomeAccepted, Answer: []byte(`{"status":"accepted"}`)}
			}
			i := 0
			for b.Loop() {
				i++
				now = now.Add(step)
				id, key := fmt.Sprintf("gx-new-%d", i), fmt.Sprintf("new-%d", i)
				s.prune(now)
				s.Apply(Event{messages.RecordOrderAttempt, messages.OrderAttemptEvent{ActionID: "a", ClientOrderID: id, Tool: "place_order",
					Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: now, NotionalUSDT: notional, RiskIncreasing: true, IdempotencyKey: key, ArgsSHA256: "h"}})
				s.prune(now)
				s.Apply(Event{messages.RecordOrderOutcome, messages.OrderOutcomeEvent{ActionID: "a", ClientOrderID: id, At: now, Status: messages.OutcomeAccepted,
					Answer: []byte(`{"status":"accepted"}`)}})
				if len(s.Idempotency) != n || len(s.Counters.Orders) != n || len(s.Attempts) != 0 {
					b.Fatalf("%d keys, %d marks, %d open attempts", len(s.Idempotency), len(s.Counters.Orders), len(s.Attempts))
				}
			}
		})
	}
}
