package risk

import (
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// leverageCap is the highest leverage at or below max_leverage that the
// instrument accepts (on its step, within its range): the value the
// leverage step sets and a refusal names. Zero when there is none.
func leverageCap(maxLeverage decimal.Decimal, in *messages.Instrument) decimal.Decimal {
	v := maxLeverage
	if in == nil {
		return v
	}
	if in.MaxLeverage.IsPositive() && v.GreaterThan(in.MaxLeverage) {
		v = in.MaxLeverage
	}
	if in.LeverageStep.IsPositive() {
		v = v.Div(in.LeverageStep).Floor().Mul(in.LeverageStep)
	}
	if !v.IsPositive() || in.MinLeverage.IsPositive() && v.LessThan(in.MinLeverage) {
		return decimal.Zero
	}
	return v
}

// leverageStepOf is the leverage change a place_order takes first, or nil:
// only for a new (not reduce-only) linear order, when the venue showed the
// symbol's position row with no position open (and the stream showed none
// since) and a leverage above max_leverage, and only to a lower value.
func leverageStepOf(tool string, a messages.PlaceOrderArgs, p messages.Policy, m Market) *messages.LeverageChange {
	if tool != ToolPlaceOrder || a.ReduceOnly || a.Category != messages.CategoryLinear || !m.PositionRead || m.Position == nil || m.PushedOpen {
		return nil
	}
	pos := m.Position
	if !pos.Size.IsZero() || !pos.Leverage.GreaterThan(p.MaxLeverage) {
		return nil
	}
	to := leverageCap(p.MaxLeverage, m.Instrument)
	if !to.IsPositive() || !to.LessThan(pos.Leverage) {
		return nil // never raises
	}
	return &messages.LeverageChange{From: pos.Leverage, To: to}
}

// leverageAsShown refuses an approved run whose leverage is not the one
// the human saw (D111): a step is taken only when the plan shown took
// it, to the same value, and with no step the symbol's leverage is at
// most the value the plan shown lowered it to. A ceiling raised, or the
// leverage changed by hand, between the plan and the approval would
// otherwise run the order at a leverage nobody approved.
func leverageAsShown(shown, step *messages.LeverageChange, pos *messages.Position) *messages.Error {
	switch {
	case step != nil && (shown == nil || !shown.To.Equal(step.To)),
		step == nil && shown != nil && pos != nil && pos.Leverage.GreaterThan(shown.To):
		return &messages.Error{Code: messages.CodePermissionDenied,
			Message:  "the symbol's leverage changed since the human approved, so the order would not run as shown; nothing was sent",
			NextStep: "call the tool again; a new confirmation shows the plan as it is now",
			Details:  map[string]any{"reason": "leverage_changed"}}
	}
	return nil
}

// withLeverage is the market as it will be once the step set the
// symbol's leverage to v: what the order is planned on.
func (m Market) WithLeverage(v decimal.Decimal) Market {
	p := *m.Position
	p.Leverage = v
	m.Position = &p
	return m
}

// leverageAboveMax refuses a risk-increasing order (new, or amended up) on
// a symbol whose leverage is above max_leverage when the call cannot lower
// it first (a position is open, an amend, or the instrument has no
// leverage at or below max_leverage): it names set_leverage and the value
// to use; again is what to do after (e.g. "place the order again").
func leverageAboveMax(p messages.Policy, pos *messages.Position, in *messages.Instrument, symbol, again string) *messages.Error {
	maxLev, current := p.MaxLeverage.String(), pos.Leverage.String()
	to := leverageCap(p.MaxLeverage, in)
	if !to.IsPositive() {
		return state.LimitExceeded("max_leverage", maxLev, "the symbol's current leverage ("+current+"x) exceeds max_leverage ("+maxLev+"x), and the instrument has no leverage at or below it",
			"trade another symbol, or ask the human to raise max_leverage", map[string]any{"leverage": current})
	}
	why := "the symbol's current leverage (" + current + "x) exceeds max_leverage (" + maxLev + "x)"
	if !pos.Size.IsZero() {
		why += "; with a position open it is not lowered automatically"
	}
	return state.LimitExceeded("max_leverage", maxLev, why,
		"lower it first with set_leverage to "+to.String()+", then "+again,
		map[string]any{"leverage": current, "fix": `set_leverage {"category":"linear","symbol":"` + symbol + `","leverage":"` + to.String() + `"}`})
}

// LeverageStepPlan is a place_order's leverage step: a set_leverage write
// (not risk-increasing, no key of its own) whose attempt says which tool
// it is a step of, and whose ticket names the order that follows it.
func LeverageStepPlan(tool string, a messages.PlaceOrderArgs, step *messages.LeverageChange, orderLinkID string) Plan {
	return Plan{Tool: ToolLeverage, Category: a.Category, Symbol: a.Symbol, StepOf: tool, TicketID: orderLinkID,
		Leverage: &messages.SetLeverageRequest{Category: a.Category, Symbol: a.Symbol, Leverage: step.To}}
}
