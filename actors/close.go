package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// close_position through the one action path: a reduce-only market order
// (Limit IOC at the worst price within slippage_pct) against the
// position, cut to its size, planned and executed exactly like
// place_order (place.go, limits.go). It reduces risk: the kill switch lets
// it through and it counts against no notional limit.

const toolClosePosition = "close_position"

func (u *userActor) closePosition(ctx actor.Context, c messages.ClosePositionArgs, origin messages.Origin, sender *actor.PID) {
	switch {
	case c.Category == messages.CategorySpot:
		e := messages.InvalidParams("category", "positions exist on linear only")
		e.Details["reason"] = "linear_only"
		u.reply(ctx, sender, e)
		return
	case c.Category != messages.CategoryLinear:
		u.reply(ctx, sender, messages.InvalidParams("category", "must be spot or linear"))
		return
	case !messages.SymbolRE.MatchString(c.Symbol):
		u.reply(ctx, sender, messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9"))
		return
	case c.Qty.IsNegative():
		u.reply(ctx, sender, messages.InvalidParams("qty", "must be a positive decimal string"))
		return
	case c.IdempotencyKey != "" && !messages.IdempotencyKeyRE.MatchString(c.IdempotencyKey):
		u.reply(ctx, sender, messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"))
		return
	}
	a := messages.PlaceOrderArgs{Category: c.Category, Symbol: c.Symbol, OrderType: "Market", Qty: c.Qty, ReduceOnly: true,
		IdempotencyKey: c.IdempotencyKey, DryRun: c.DryRun}
	hash := placeArgsHash(toolClosePosition, a)
	if !a.DryRun && u.repeat(ctx, toolClosePosition, a.IdempotencyKey, hash, false, origin, sender) {
		return
	}
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolClosePosition, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, toolClosePosition, a.Category, a.Symbol, a.DryRun, e, origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, origin, nil)
	act.place = &placeStep{args: a, hash: hash, tool: toolClosePosition, close: true}
	act.claim = &claim{key: a.IdempotencyKey, hash: hash, dryRun: a.DryRun}
	u.toVenue(ctx, &marketFetch{action: act.id, category: a.Category, symbol: a.Symbol}, ctx.Self())
}
