package risk

import (
	"fmt"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// set_trading_stop. A first stop-loss, a stop-loss moved toward the price
// and any take-profit reduce risk: the kill switch and the allowlist let
// them through. Moving a stop-loss away from the price (lower for a long,
// higher for a short) adds risk: the kill switch, the allowlist and the
// rate limits apply (D53). Prices must be on the tick. There is no client
// order id: the position is read back after the write and after an
// unknown outcome; nothing is re-sent. Removing a level is not offered.

// ToolTradingStop is set_trading_stop's tool name.
const ToolTradingStop = "set_trading_stop"

// tradingStopHash is the hash a set_trading_stop's idempotency key is
// claimed with.
func tradingStopHash(a messages.TradingStopArgs) string {
	return argsHash(ToolTradingStop, string(a.Category), a.Symbol, nullDecimal(a.TakeProfit), nullDecimal(a.StopLoss))
}

// validateStop checks a set_trading_stop's arguments alone: a
// take-profit, a stop-loss or both, each a positive price.
func validateStop(a messages.TradingStopArgs) *messages.Error {
	return firstError(checkSymbol(a.Symbol), checkCategory(a.Category), checkKey(a.IdempotencyKey),
		checkLinear(a.Category, "positions exist on linear only"),
		checkOneOrBoth("take_profit", a.TakeProfit, "stop_loss", a.StopLoss, "must be a positive price"))
}

// decideStop decides with the instrument and the position the venue
// showed.
func decideStop(in *Input) Decision {
	a := in.Args.(messages.TradingStopArgs)
	pos := in.Read.Market.Position
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
		_, perMinute, unconfirmed := in.State.Counters.Window(in.Now, in.Env)
		if e := rateLimits(in.policy(), perMinute, unconfirmed, in.Reserved); e != nil {
			return refused(e)
		}
	}
	inst := in.Read.Market.Instrument
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
	return Decision{Planned: &planned, Risk: risk, Plan: Plan{Tool: ToolTradingStop, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk,
		ConfirmedBy:    ConfirmedBy(in.policy(), ToolTradingStop, decimal.Zero),
		Stop:           &messages.TradingStopRequest{Category: a.Category, Symbol: a.Symbol, TakeProfit: a.TakeProfit, StopLoss: a.StopLoss},
		IdempotencyKey: a.IdempotencyKey, ArgsSHA256: in.Hash}}
}

// shownStop is the plan a confirmation of set_trading_stop shows.
func shownStop(d *Decision) messages.ShownToUser {
	t := d.Planned.(*messages.TradingStopAnswer)
	parts := []string{}
	if t.TakeProfit != nil {
		parts = append(parts, "take-profit "+t.TakeProfit.String())
	}
	if t.StopLoss != nil {
		parts = append(parts, "stop-loss "+t.StopLoss.String())
	}
	return messages.ShownToUser{TradingStop: t, RiskIncreasing: d.Risk,
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

// TradingStop is set_trading_stop's pure half: the parts above, registered once.
var TradingStop = Register(&Tool{Name: ToolTradingStop, ArgParts: argsOf[*messages.TradingStopCommand](validateStop, tradingStopHash),
	RiskIncreasing: riskReducing, Needs: NeedMarket, Decide: decideStop, Shown: shownStop})
