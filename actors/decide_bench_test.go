package actors

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkDecideAtOrdersInDay is the user actor's own work for one
// keyed place_order when the last 24 h already hold n orders: the
// committed state's prune, the idempotency look-up, the decision (gate,
// instrument rules, the rolling 24 h notional and the rates) and the
// order_attempt and order_outcome applied. The market is given (no read)
// and nothing is journaled: this is the part that grew with the day's
// orders (the daily sum re-summed every order of the last 24 h), and it
// must be flat in n (D144). The clock moves by 24 h / n per order (24 h
// for n = 0), so one order leaves the window as one comes in; the limits
// are out of reach.
func BenchmarkDecideAtOrdersInDay(b *testing.B) {
	for _, n := range []int{0, 1500, 14400} {
		b.Run(fmt.Sprintf("orders=%d", n), func(b *testing.B) {
			high, many := decimal.NewFromInt(1_000_000_000), 1_000_000
			s := state.NewFixture("bench").Trading("linear:BTCUSDT").WithKey("paper").WithCeiling(messages.PolicySettings{
				MaxOrderNotionalUSDT: &high, DailyNotionalCapUSDT: &high, ConfirmAboveNotionalUSDT: &high,
				MaxOrdersPerMinute: &many, MaxUnconfirmedActionsPerHour: &many}).Build()
			m := benchMarket()
			a := limitArgs("0.001", "30000")
			answer := json.RawMessage(`{"status":"accepted","client_order_id":"gx-x","result_source":"venue"}`)
			now := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
			step := 24 * time.Hour / time.Duration(max(n, 1))
			i := 0
			order := func(decide bool) {
				i++
				s.Prune(now)
				key, id := fmt.Sprint("key-", i), fmt.Sprint("gx-bench-", i)
				if _, ok := s.Idempotency[key]; ok {
					b.Fatal("key claimed")
				}
				notional := decimal.RequireFromString("30")
				if decide {
					a.IdempotencyKey = key
					plan, _, e := risk.DecidePlace(s, risk.ToolPlaceOrder, a, messages.VenuePaper, "paper", m, risk.Reservation{}, now)
					if e != nil {
						b.Fatal(e)
					}
					notional = plan.Notional
				}
				s.Apply(state.Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ActionID: "a", ClientOrderID: id, Environment: "paper",
					Tool: risk.ToolPlaceOrder, Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: now, NotionalUSDT: notional, RiskIncreasing: true,
					IdempotencyKey: key, ArgsSHA256: "h"}})
				s.Prune(now)
				s.Apply(state.Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{ActionID: "a", ClientOrderID: id, At: now,
					Status: messages.OutcomeAccepted, Answer: answer}})
				now = now.Add(step)
			}
			for range n {
				order(false)
			}
			order(true) // the first decision, as after a start
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				order(true)
			}
			if n > 0 && len(s.Counters.Orders) != n {
				b.Fatalf("%d orders in the day, want %d", len(s.Counters.Orders), n)
			}
		})
	}
}

// benchMarket is a BTCUSDT market as the simulator shows it: trading,
// steps of 0.001 and 0.1, a position at leverage 1.
func benchMarket() risk.Market {
	d := decimal.RequireFromString
	in := &messages.Instrument{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Status: "Trading", QuoteCoin: "USDT", SettleCoin: "USDT",
		QtyStep: d("0.001"), MinOrderQty: d("0.001"), MaxOrderQty: d("100"), TickSize: d("0.1"), MinNotional: d("5")}
	tk := &messages.Ticker{Symbol: "BTCUSDT", Bid1Price: d("60000"), Ask1Price: d("60000.1"), LastPrice: d("60000")}
	pos := &messages.Position{Symbol: "BTCUSDT", Side: "", Size: decimal.Zero, Leverage: decimal.NewFromInt(1)}
	return risk.Market{Instrument: in, Ticker: tk, Position: pos, PositionRead: true}
}
