package risk

import (
	"math/rand/v2"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// The decision of the step over many shapes of the market and policy: a
// step exists only for a new linear order with no position open and a
// leverage above max_leverage, and it always sets a value below the one
// shown, at or below max_leverage, on the instrument's step and within
// its range.
func TestLeverageStepOfOnlyLowers(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	pick := func(vals ...string) decimal.Decimal { return decimal.RequireFromString(vals[rng.IntN(len(vals))]) }
	for i := range 20000 {
		in := &messages.Instrument{LeverageStep: pick("0", "0.01", "0.5", "1", "3"), MinLeverage: pick("0", "1", "2", "6"), MaxLeverage: pick("0", "4", "25", "100")}
		pos := &messages.Position{Symbol: "BTCUSDT", Leverage: pick("0", "1", "2.5", "5", "5.01", "10", "100"), Size: pick("0", "0", "0.001", "-0.001")}
		p := messages.Policy{MaxLeverage: pick("1", "2.75", "5", "10", "150")}
		a := messages.PlaceOrderArgs{Symbol: "BTCUSDT", Side: []string{"Buy", "Sell"}[rng.IntN(2)], OrderType: "Market", Qty: decimal.RequireFromString("0.001")}
		a.ReduceOnly = rng.IntN(4) == 0
		a.Category = []messages.Category{messages.CategoryLinear, messages.CategoryLinear, messages.CategorySpot}[rng.IntN(3)]
		tool := []string{ToolPlaceOrder, ToolPlaceOrder, ToolClosePosition}[rng.IntN(3)]
		m := Market{Instrument: in, Position: pos, PositionRead: rng.IntN(5) > 0, PushedOpen: rng.IntN(8) == 0}
		if rng.IntN(10) == 0 {
			m.Position = nil
		}
		step := leverageStepOf(tool, a, p, m)
		if step == nil {
			continue
		}
		switch {
		case tool != ToolPlaceOrder || a.ReduceOnly || a.Category != messages.CategoryLinear || !m.PositionRead:
			t.Fatalf("case %d: a step for %s reduce_only=%v %s read=%v", i, tool, a.ReduceOnly, a.Category, m.PositionRead)
		case !pos.Size.IsZero() || m.PushedOpen:
			t.Fatalf("case %d: a step with a position open (size %s, pushed %v)", i, pos.Size, m.PushedOpen)
		case !step.From.Equal(pos.Leverage) || !step.To.LessThan(step.From) || !step.To.IsPositive():
			t.Fatalf("case %d: the step %s -> %s does not lower", i, step.From, step.To)
		case step.To.GreaterThan(p.MaxLeverage):
			t.Fatalf("case %d: the step sets %s above max_leverage %s", i, step.To, p.MaxLeverage)
		case in.LeverageStep.IsPositive() && !step.To.Mod(in.LeverageStep).IsZero(),
			in.MinLeverage.IsPositive() && step.To.LessThan(in.MinLeverage),
			in.MaxLeverage.IsPositive() && step.To.GreaterThan(in.MaxLeverage):
			t.Fatalf("case %d: the step sets %s outside the instrument's rules %+v", i, step.To, in)
		}
	}
}
