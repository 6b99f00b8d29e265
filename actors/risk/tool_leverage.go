package risk

import (
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// set_leverage. Raising the leverage (or setting it when the current one
// cannot be read) increases risk: the kill switch blocks it and
// max_leverage applies. Lowering it never faces a limit. The venue's "not
// modified" (110043) is success. There is no client order id: the
// position is read back after the write, and after an unknown outcome; it
// is never re-sent.

// ToolLeverage is set_leverage's tool name.
const ToolLeverage = "set_leverage"

// setLeverageHash is the hash a set_leverage's idempotency key is claimed
// with.
func setLeverageHash(a messages.SetLeverageArgs) string {
	return argsHash(ToolLeverage, string(a.Category), a.Symbol, a.Leverage.String())
}

// shownLeverage is the plan a confirmation of set_leverage shows.
func shownLeverage(d *Decision) messages.ShownToUser {
	l := d.Planned.(*messages.LeverageAnswer)
	return messages.ShownToUser{Leverage: l, RiskIncreasing: d.Risk,
		Summary: fmt.Sprintf("Set the leverage of %s to %sx (now %sx)", onInstrument(l.Category, l.Symbol), l.Leverage, l.Previous)}
}

// validateLeverage checks a set_leverage's arguments alone.
func validateLeverage(a messages.SetLeverageArgs) *messages.Error {
	return firstError(checkSymbol(a.Symbol), checkCategory(a.Category), checkKey(a.IdempotencyKey),
		checkLinear(a.Category, "leverage exists on linear only"), checkIf(!a.Leverage.IsPositive(), "leverage", "must be a positive decimal string"))
}

// decideLeverage decides with the instrument and the position the venue
// showed.
func decideLeverage(in *Input) Decision {
	a := in.Args.(messages.SetLeverageArgs)
	inst := in.Read.Market.Instrument
	if inst == nil || !inst.HasLeverage {
		return refused(ruleViolation("the instrument has no leverage", "set leverage on a linear instrument", map[string]any{"rule": "leverage"}))
	}
	if inst.MinLeverage.IsPositive() && a.Leverage.LessThan(inst.MinLeverage) || inst.MaxLeverage.IsPositive() && a.Leverage.GreaterThan(inst.MaxLeverage) {
		return refused(ruleViolation("the leverage is outside the instrument's range", "choose a leverage within it",
			map[string]any{"rule": "leverage_range", "min_leverage": inst.MinLeverage.String(), "max_leverage": inst.MaxLeverage.String()}))
	}
	if inst.LeverageStep.IsPositive() && !a.Leverage.Mod(inst.LeverageStep).IsZero() {
		return refused(ruleViolation("the leverage is not on the instrument's step", "use a multiple of leverage_step",
			map[string]any{"rule": "leverage_step", "leverage_step": inst.LeverageStep.String()}))
	}
	var current messages.Position
	known := in.Read.Market.Position != nil && in.Read.Market.Position.Leverage.IsPositive()
	if known {
		current = *in.Read.Market.Position
	}
	risk := !known || a.Leverage.GreaterThan(current.Leverage)
	req := &messages.DecideActionRequest{Tool: ToolLeverage, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk, RiskReducing: !risk}
	if risk {
		req.Leverage = a.Leverage
	}
	if e := in.State.DecideAction(req, in.Venue, in.Env); e != nil {
		return refused(e)
	}
	planned := messages.LeverageAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, Leverage: a.Leverage,
		Previous: current.Leverage, RiskIncreasing: risk, IdempotencyKey: a.IdempotencyKey}
	planned.Fence()
	d := Decision{Planned: &planned, Risk: risk}
	if known && a.Leverage.Equal(current.Leverage) {
		// Nothing to change: nothing is sent (the venue would answer
		// 110043, "not modified") and nothing is journaled.
		same := planned
		same.Status, same.ResultSource = "unchanged", messages.ResultSourceVenue
		d.Unchanged = &same
		return d
	}
	d.Plan = Plan{Tool: ToolLeverage, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk,
		ConfirmedBy:    ConfirmedBy(in.policy(), ToolLeverage, decimal.Zero),
		Leverage:       &messages.SetLeverageRequest{Category: a.Category, Symbol: a.Symbol, Leverage: a.Leverage},
		IdempotencyKey: a.IdempotencyKey, ArgsSHA256: in.Hash}
	return d
}

// SetLeverage is set_leverage's pure half: the parts above, registered once.
var SetLeverage = Register(&Tool{Name: ToolLeverage, ArgParts: argsOf[*messages.SetLeverageCommand](validateLeverage, setLeverageHash),
	RiskIncreasing: riskReducing, Needs: NeedMarket, Decide: decideLeverage, Shown: shownLeverage})
