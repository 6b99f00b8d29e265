package actors

import (
	"fmt"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// set_leverage. Raising the leverage (or setting it when the current one
// cannot be read) increases risk: the kill switch blocks it and
// max_leverage applies. Lowering it never faces a limit. The venue's "not
// modified" (110043) is success. There is no client order id: the
// position is read back after the write, and after an unknown outcome; it
// is never re-sent.

// toolLeverage is set_leverage's tool name.
const toolLeverage = "set_leverage"

// setLeverageHash is the hash a set_leverage's idempotency key is claimed
// with.
func setLeverageHash(a messages.SetLeverageArgs) string {
	return argsHash(toolLeverage, string(a.Category), a.Symbol, a.Leverage.String())
}

// shownLeverage is the plan a confirmation of set_leverage shows.
func shownLeverage(d *toolDecision) messages.ShownToUser {
	l := d.planned.(*messages.LeverageAnswer)
	return messages.ShownToUser{Leverage: l, RiskIncreasing: d.risk,
		Summary: fmt.Sprintf("Set the leverage of %s to %sx (now %sx)", onInstrument(l.Category, l.Symbol), l.Leverage, l.Previous)}
}

// completeLeverage is set_leverage's answer of its outcome.
var completeLeverage = completePositionWrite(func(a *messages.LeverageAnswer, source, status string) {
	a.ResultSource, a.Status = source, status
})

// storedLeverage decodes a stored set_leverage answer.
var storedLeverage = storedAs(func(a *messages.LeverageAnswer) *string { return &a.ResultSource })

// validateLeverage checks a set_leverage's arguments alone.
func validateLeverage(a messages.SetLeverageArgs) *messages.Error {
	return firstError(checkLinear(a.Category, "leverage exists on linear only"), checkSymbol(a.Symbol),
		checkIf(!a.Leverage.IsPositive(), "leverage", "must be a positive decimal string"), checkKey(a.IdempotencyKey))
}

// decideLeverage decides with the instrument and the position the venue
// showed.
func decideLeverage(in *decideIn) toolDecision {
	a := in.args.(messages.SetLeverageArgs)
	inst := in.read.market.instrument
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
	known := in.read.market.position != nil && in.read.market.position.Leverage.IsPositive()
	if known {
		current = *in.read.market.position
	}
	risk := !known || a.Leverage.GreaterThan(current.Leverage)
	req := &messages.DecideActionRequest{Tool: toolLeverage, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk, RiskReducing: !risk}
	if risk {
		req.Leverage = a.Leverage
	}
	if e := in.state.DecideAction(req, in.venue, in.env); e != nil {
		return refused(e)
	}
	planned := messages.LeverageAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, Leverage: a.Leverage,
		Previous: current.Leverage, RiskIncreasing: risk, IdempotencyKey: a.IdempotencyKey}
	planned.Fence()
	d := toolDecision{planned: &planned, risk: risk}
	if known && a.Leverage.Equal(current.Leverage) {
		// Nothing to change: nothing is sent (the venue would answer
		// 110043, "not modified") and nothing is journaled.
		same := planned
		same.Status, same.ResultSource = "unchanged", messages.ResultSourceVenue
		d.unchanged = &same
		return d
	}
	d.plan = orderPlan{tool: toolLeverage, category: a.Category, symbol: a.Symbol, riskIncreasing: risk,
		confirmedBy:    confirmedBy(in.policy(), toolLeverage, decimal.Zero),
		leverage:       &messages.SetLeverageRequest{Category: a.Category, Symbol: a.Symbol, Leverage: a.Leverage},
		idempotencyKey: a.IdempotencyKey, argsSHA256: in.hash}
	return d
}

// setLeverageTool is set_leverage's descriptor: the parts above,
// registered once. Its first gate reduces risk; the allowlist is applied
// once the venue shows whether the change adds risk (decideLeverage).
var setLeverageTool = register(&toolDescriptor{name: toolLeverage, argParts: argsOf[*messages.SetLeverageCommand](validateLeverage, setLeverageHash),
	riskIncreasing: riskReducing, needs: needMarket, decide: decideLeverage, shown: shownLeverage,
	carryOut: (*userActor).executeOnce, complete: completeLeverage, stored: storedLeverage, heldOnRecheck: true})
