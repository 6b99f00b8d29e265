package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// set_trading_stop through the one action path. A first stop-loss, a
// stop-loss moved toward the price and any take-profit reduce risk: the
// kill switch and the allowlist let them through. Moving a stop-loss away
// from the price (lower for a long, higher for a short) adds risk: the
// kill switch, the allowlist and the rate limits apply (D53). Prices must be on the tick. There is no client
// order id: the position is read back after the write and after an
// unknown outcome; nothing is re-sent. Removing a level is not offered.

const toolTradingStop = "set_trading_stop"

// stopStep carries a set_trading_stop call between its steps.
type stopStep struct {
	args messages.TradingStopArgs
	hash string
}

func validateStop(a messages.TradingStopArgs) *messages.Error {
	switch {
	case a.Category == messages.CategorySpot:
		e := messages.InvalidParams("category", "positions exist on linear only")
		e.Details["reason"] = "linear_only"
		return e
	case a.Category != messages.CategoryLinear:
		return messages.InvalidParams("category", "must be spot or linear")
	case !messages.SymbolRE.MatchString(a.Symbol):
		return messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9")
	case !a.TakeProfit.Valid && !a.StopLoss.Valid:
		return messages.InvalidParams("take_profit", "give take_profit, stop_loss or both")
	case a.TakeProfit.Valid && !a.TakeProfit.Decimal.IsPositive():
		return messages.InvalidParams("take_profit", "must be a positive price")
	case a.StopLoss.Valid && !a.StopLoss.Decimal.IsPositive():
		return messages.InvalidParams("stop_loss", "must be a positive price")
	case a.IdempotencyKey != "" && !messages.IdempotencyKeyRE.MatchString(a.IdempotencyKey):
		return messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
	}
	return nil
}

func (u *userActor) setTradingStop(ctx actor.Context, a messages.TradingStopArgs, origin messages.Origin, sender *actor.PID) {
	if e := validateStop(a); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	dec := func(n decimal.NullDecimal) string {
		if !n.Valid {
			return ""
		}
		return n.Decimal.String()
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{toolTradingStop, string(a.Category), a.Symbol, dec(a.TakeProfit), dec(a.StopLoss)}, "|")))
	hash := hex.EncodeToString(sum[:])
	if !a.DryRun && u.repeat(ctx, toolTradingStop, a.IdempotencyKey, hash, false, origin, sender) {
		return
	}
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolTradingStop, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, toolTradingStop, a.Category, a.Symbol, a.DryRun, e, origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, origin, nil)
	act.stop = &stopStep{args: a, hash: hash}
	act.claim = &claim{key: a.IdempotencyKey, hash: hash, dryRun: a.DryRun}
	u.toVenue(ctx, &marketFetch{action: act.id, category: a.Category, symbol: a.Symbol}, ctx.Self())
}

// onStopMarket decides with the instrument and the position the venue
// showed, on the state as it is now.
func (u *userActor) onStopMarket(ctx actor.Context, act *action, m *marketFetched) {
	delete(u.actions, act.id)
	a := act.stop.args
	if m.err != nil {
		u.reply(ctx, act.waiter, m.err)
		return
	}
	if !a.DryRun && u.repeat(ctx, toolTradingStop, a.IdempotencyKey, act.stop.hash, false, act.origin, act.waiter) {
		return
	}
	refuse := func(e *messages.Error) {
		u.refuseTool(ctx, toolTradingStop, a.Category, a.Symbol, a.DryRun, e, act.origin, act.waiter)
	}
	pos := m.market.position
	if pos == nil || !pos.Size.IsPositive() {
		if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolTradingStop, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
			refuse(e)
			return
		}
		refuse(&messages.Error{Code: messages.CodeNotFound, Message: "there is no open position on this symbol",
			NextStep: "check get_positions", Details: map[string]any{"reason": "position_not_found"}})
		return
	}
	if !knownSide(pos.Side) {
		refuse(unreadablePosition())
		return
	}
	risk := stopLossLoosened(pos, a.StopLoss)
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolTradingStop, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk, RiskReducing: !risk}, u.venue, u.env); e != nil {
		refuse(e)
		return
	}
	if risk {
		_, perMinute, unconfirmed := u.state.Counters.Window(u.now(), u.env)
		if e := rateLimits(u.state.Effective(u.venue, u.env), perMinute, unconfirmed, u.reserved()); e != nil {
			refuse(e)
			return
		}
	}
	in := m.market.instrument
	for _, lv := range []struct {
		name string
		v    decimal.NullDecimal
	}{{"take_profit", a.TakeProfit}, {"stop_loss", a.StopLoss}} {
		if lv.v.Valid && in != nil && in.TickSize.IsPositive() && !lv.v.Decimal.Mod(in.TickSize).IsZero() {
			lo, hi := roundToTick(lv.v.Decimal, in.TickSize, false), roundToTick(lv.v.Decimal, in.TickSize, true)
			refuse(ruleViolation("the "+lv.name+" price is not on the instrument's tick", "use one of the nearest valid prices",
				map[string]any{"rule": "tick_size", "field": lv.name, "tick_size": in.TickSize.String(), "nearest_prices": []string{lo.String(), hi.String()}}))
			return
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
	if a.DryRun {
		u.reply(ctx, act.waiter, &planned)
		return
	}
	by := confirmedBy(u.state.Effective(u.venue, u.env), toolTradingStop, decimal.Zero)
	if u.confirmGate(ctx, act, parkRequest{tool: toolTradingStop, category: a.Category, symbol: a.Symbol, args: a, hash: act.stop.hash,
		key: a.IdempotencyKey, shown: messages.ShownToUser{TradingStop: &planned, RiskIncreasing: risk}, confirmedBy: by}) {
		return
	}
	plan := orderPlan{tool: toolTradingStop, category: a.Category, symbol: a.Symbol, riskIncreasing: risk, confirmedBy: by,
		stop:           &messages.TradingStopRequest{Category: a.Category, Symbol: a.Symbol, TakeProfit: a.TakeProfit, StopLoss: a.StopLoss},
		idempotencyKey: a.IdempotencyKey, argsSHA256: act.stop.hash}
	ex := u.execute(ctx, plan, act.origin, act.waiter)
	ex.claim = act.claim
	ex.complete = func(r *orderResult, w *orderWritten) any {
		if r.Err != nil {
			return r.Err
		}
		ans := planned
		ans.ResultSource, ans.Status = r.ResultSource, positionWriteStatus(w)
		return &ans
	}
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
