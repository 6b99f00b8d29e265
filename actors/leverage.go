package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// toolLeverage is set_leverage's tool name.
const toolLeverage = "set_leverage"

// set_leverage through the one action path. Raising the leverage (or
// setting it when the current one cannot be read) increases risk: the
// kill switch blocks it and max_leverage applies. Lowering it never faces
// a limit. The venue's "not modified" (110043) is success. There is no
// client order id: the position is read back after the write, and after
// an unknown outcome; it is never re-sent.

// leverageStep carries a set_leverage call between its steps.
type leverageStep struct {
	args messages.SetLeverageArgs
	hash string
}

func validateLeverage(a messages.SetLeverageArgs) *messages.Error {
	switch {
	case a.Category != messages.CategoryLinear && a.Category != messages.CategorySpot:
		return messages.InvalidParams("category", "must be spot or linear")
	case a.Category == messages.CategorySpot:
		e := messages.InvalidParams("category", "leverage exists on linear only")
		e.Details["reason"] = "linear_only"
		return e
	case !messages.SymbolRE.MatchString(a.Symbol):
		return messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9")
	case !a.Leverage.IsPositive():
		return messages.InvalidParams("leverage", "must be a positive decimal string")
	case a.IdempotencyKey != "" && !messages.IdempotencyKeyRE.MatchString(a.IdempotencyKey):
		return messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
	}
	return nil
}

func (u *userActor) setLeverage(ctx actor.Context, a messages.SetLeverageArgs, origin messages.Origin, sender *actor.PID) {
	if e := validateLeverage(a); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{toolLeverage, string(a.Category), a.Symbol, a.Leverage.String()}, "|")))
	hash := hex.EncodeToString(sum[:])
	if !a.DryRun && u.repeat(ctx, toolLeverage, a.IdempotencyKey, hash, false, origin, sender) {
		return
	}
	// A first gate: the allowlist is applied once the venue shows
	// whether the change adds risk.
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolLeverage, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, toolLeverage, a.Category, a.Symbol, a.DryRun, e, origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, origin, nil)
	act.leverage = &leverageStep{args: a, hash: hash}
	act.claim = &claim{key: a.IdempotencyKey, hash: hash, dryRun: a.DryRun}
	u.toVenue(ctx, &marketFetch{action: act.id, category: a.Category, symbol: a.Symbol}, ctx.Self())
}

// onLeverageMarket decides with the instrument and the position the venue
// showed, on the state as it is now.
func (u *userActor) onLeverageMarket(ctx actor.Context, act *action, m *marketFetched) {
	delete(u.actions, act.id)
	a := act.leverage.args
	if m.err != nil {
		u.reply(ctx, act.waiter, m.err)
		return
	}
	if !a.DryRun && u.repeat(ctx, toolLeverage, a.IdempotencyKey, act.leverage.hash, false, act.origin, act.waiter) {
		return
	}
	refuse := func(e *messages.Error) {
		u.refuseTool(ctx, toolLeverage, a.Category, a.Symbol, a.DryRun, e, act.origin, act.waiter)
	}
	in := m.market.instrument
	if in == nil || !in.HasLeverage {
		refuse(ruleViolation("the instrument has no leverage", "set leverage on a linear instrument", map[string]any{"rule": "leverage"}))
		return
	}
	if in.MinLeverage.IsPositive() && a.Leverage.LessThan(in.MinLeverage) || in.MaxLeverage.IsPositive() && a.Leverage.GreaterThan(in.MaxLeverage) {
		refuse(ruleViolation("the leverage is outside the instrument's range", "choose a leverage within it",
			map[string]any{"rule": "leverage_range", "min_leverage": in.MinLeverage.String(), "max_leverage": in.MaxLeverage.String()}))
		return
	}
	if in.LeverageStep.IsPositive() && !a.Leverage.Mod(in.LeverageStep).IsZero() {
		refuse(ruleViolation("the leverage is not on the instrument's step", "use a multiple of leverage_step",
			map[string]any{"rule": "leverage_step", "leverage_step": in.LeverageStep.String()}))
		return
	}
	var current messages.Position
	known := m.market.position != nil && m.market.position.Leverage.IsPositive()
	if known {
		current = *m.market.position
	}
	risk := !known || a.Leverage.GreaterThan(current.Leverage)
	req := &messages.DecideActionRequest{Tool: toolLeverage, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk, RiskReducing: !risk}
	if risk {
		req.Leverage = a.Leverage
	}
	if e := u.state.DecideAction(req, u.venue, u.env); e != nil {
		refuse(e)
		return
	}
	planned := messages.LeverageAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, Leverage: a.Leverage,
		Previous: current.Leverage, RiskIncreasing: risk, IdempotencyKey: a.IdempotencyKey}
	planned.Fence()
	if a.DryRun {
		u.reply(ctx, act.waiter, &planned)
		return
	}
	if known && a.Leverage.Equal(current.Leverage) {
		// Nothing to change: nothing is sent (the venue would answer
		// 110043, "not modified") and nothing is journaled.
		planned.Status, planned.ResultSource = "unchanged", messages.ResultSourceVenue
		u.reply(ctx, act.waiter, &planned)
		return
	}
	by := confirmedBy(u.state.effective(u.venue, u.env), toolLeverage, decimal.Zero)
	if u.confirmGate(ctx, act, parkRequest{tool: toolLeverage, category: a.Category, symbol: a.Symbol, args: a, hash: act.leverage.hash,
		key: a.IdempotencyKey, shown: messages.ShownToUser{Leverage: &planned, RiskIncreasing: risk}, confirmedBy: by}) {
		return
	}
	plan := orderPlan{tool: toolLeverage, category: a.Category, symbol: a.Symbol, riskIncreasing: risk, confirmedBy: by,
		leverage:       &messages.SetLeverageRequest{Category: a.Category, Symbol: a.Symbol, Leverage: a.Leverage},
		idempotencyKey: a.IdempotencyKey, argsSHA256: act.leverage.hash}
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

// positionWriteStatus is the answer's status of a position write
// (set_leverage, set_trading_stop): "unchanged" when the venue said
// nothing changed, "set" once the position shows it, else "requested"
// (accepted is not applied).
func positionWriteStatus(w *orderWritten) string {
	switch {
	case w.writeAck != nil && !w.writeAck.Modified:
		return "unchanged"
	case w.positionShows:
		return "set"
	}
	return "requested"
}
