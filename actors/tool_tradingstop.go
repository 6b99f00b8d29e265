package actors

import (
	"fmt"
	"github.com/shopspring/decimal"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// set_trading_stop. A first stop-loss, a stop-loss moved toward the price
// and any take-profit reduce risk: the kill switch and the allowlist let
// them through. Moving a stop-loss away from the price (lower for a long,
// higher for a short) adds risk: the kill switch, the allowlist and the
// rate limits apply (D53). Prices must be on the tick. There is no client
// order id: the position is read back after the write and after an
// unknown outcome; nothing is re-sent. Removing a level is not offered.

const toolTradingStop = "set_trading_stop"

var tradingStopTool = register(&toolDescriptor{
	name:       toolTradingStop,
	command:    commandOf(func(c *messages.TradingStopCommand) (messages.TradingStopArgs, bool) { return c.Args, c.ClientUI }),
	decodeArgs: decodeArgsAs[messages.TradingStopArgs],
	base: typed(func(a messages.TradingStopArgs) callBase {
		return callBase{category: a.Category, symbol: a.Symbol, idempotencyKey: a.IdempotencyKey, dryRun: a.DryRun}
	}),
	validate: typed(validateStop),
	hash: typed(func(a messages.TradingStopArgs) string {
		return argsHash(toolTradingStop, string(a.Category), a.Symbol, nullDecimal(a.TakeProfit), nullDecimal(a.StopLoss))
	}),
	riskIncreasing: riskReducing, plannedHash: noPlannedHash, needs: needMarket, prepare: keepArgs,
	decide:   decideStop,
	shown:    shownStop,
	carryOut: (*userActor).executeOnce, complete: completePositionWrite(func(a *messages.TradingStopAnswer, source, status string) { a.ResultSource, a.Status = source, status }),
	stored: storedAs(func(a *messages.TradingStopAnswer) *string { return &a.ResultSource }),
	bound:  tradeBound, heldOnRecheck: true,
})

func validateStop(a messages.TradingStopArgs) *messages.Error {
	return firstError(checkLinear(a.Category, "positions exist on linear only"), checkSymbol(a.Symbol),
		checkIf(!a.TakeProfit.Valid && !a.StopLoss.Valid, "take_profit", "give take_profit, stop_loss or both"),
		checkIf(a.TakeProfit.Valid && !a.TakeProfit.Decimal.IsPositive(), "take_profit", "must be a positive price"),
		checkIf(a.StopLoss.Valid && !a.StopLoss.Decimal.IsPositive(), "stop_loss", "must be a positive price"),
		checkKey(a.IdempotencyKey))
}

// decideStop decides with the instrument and the position the venue
// showed.
func decideStop(in *decideIn) toolDecision {
	a := in.args.(messages.TradingStopArgs)
	pos := in.read.market.position
	if pos == nil || !pos.Size.IsPositive() {
		if e := in.gate(a.Category, a.Symbol, false); e != nil {
			return refused(e)
		}
		return refused(&messages.Error{Code: messages.CodeNotFound, Message: "there is no open position on this symbol",
			NextStep: "check get_positions", Details: map[string]any{"reason": "position_not_found"}})
	}
	if !knownSide(pos.Side) {
		return refused(unreadablePosition())
	}
	risk := stopLossLoosened(pos, a.StopLoss)
	if e := in.gate(a.Category, a.Symbol, risk); e != nil {
		return refused(e)
	}
	if risk {
		_, perMinute, unconfirmed := in.state.Counters.Window(in.now, in.env)
		if e := rateLimits(in.policy(), perMinute, unconfirmed, in.reserved); e != nil {
			return refused(e)
		}
	}
	inst := in.read.market.instrument
	for _, lv := range []struct {
		name string
		v    decimal.NullDecimal
	}{{"take_profit", a.TakeProfit}, {"stop_loss", a.StopLoss}} {
		if lv.v.Valid && inst != nil && inst.TickSize.IsPositive() && !lv.v.Decimal.Mod(inst.TickSize).IsZero() {
			lo, hi := roundToTick(lv.v.Decimal, inst.TickSize, false), roundToTick(lv.v.Decimal, inst.TickSize, true)
			return refused(ruleViolation("the "+lv.name+" price is not on the instrument's tick", "use one of the nearest valid prices",
				map[string]any{"rule": "tick_size", "field": lv.name, "tick_size": inst.TickSize.String(), "nearest_prices": []string{lo.String(), hi.String()}}))
		}
	}
	planned := messages.TradingStopAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, PositionSide: pos.Side,
		IdempotencyKey: a.IdempotencyKey}
	if a.TakeProfit.Valid {
		planned.TakeProfit = &a.TakeProfit.Decimal
	}
	if a.StopLoss.Valid {
		planned.StopLoss = &a.StopLoss.Decimal
	}
	planned.Fence()
	return toolDecision{planned: &planned, risk: risk, plan: orderPlan{tool: toolTradingStop, category: a.Category, symbol: a.Symbol, riskIncreasing: risk,
		confirmedBy:    confirmedBy(in.policy(), toolTradingStop, decimal.Zero),
		stop:           &messages.TradingStopRequest{Category: a.Category, Symbol: a.Symbol, TakeProfit: a.TakeProfit, StopLoss: a.StopLoss},
		idempotencyKey: a.IdempotencyKey, argsSHA256: in.hash}}
}

// shownStop is the plan a confirmation of set_trading_stop shows.
func shownStop(d *toolDecision) messages.ShownToUser {
	t := d.planned.(*messages.TradingStopAnswer)
	parts := []string{}
	if t.TakeProfit != nil {
		parts = append(parts, "take-profit "+t.TakeProfit.String())
	}
	if t.StopLoss != nil {
		parts = append(parts, "stop-loss "+t.StopLoss.String())
	}
	return messages.ShownToUser{TradingStop: t, RiskIncreasing: d.risk,
		Summary: fmt.Sprintf("Set %s on the %s position of %s", strings.Join(parts, " and "), t.PositionSide, onInstrument(t.Category, t.Symbol))}
}

// stopLossLoosened says a new stop-loss moves the position's current one
// away from the price: lower for a long, higher for a short. That lets
// the position lose more before it is closed, so it adds risk. A first
// stop-loss, one moved toward the price, the same one, or no stop-loss in
// the call does not. A take-profit only closes in profit and never adds
// risk.
func stopLossLoosened(pos *messages.Position, sl decimal.NullDecimal) bool {
	if !sl.Valid || !pos.StopLoss.IsPositive() {
		return false
	}
	if pos.Side == "Sell" {
		return sl.Decimal.GreaterThan(pos.StopLoss)
	}
	return sl.Decimal.LessThan(pos.StopLoss)
}
