package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A new order's leverage step (decisions D111). A new account shows the
// venue's default leverage on every symbol (10x on the paper venue), often
// above max_leverage, and a new order takes the symbol's leverage: without
// this step every first order would be refused until the agent happened to
// call set_leverage. So a place_order that is not reduce-only, on a linear
// symbol where the user holds no position and the venue shows a leverage
// above max_leverage, lowers the leverage to max_leverage first, as part of
// the same call: the plan, the dry run and the confirmation show it
// (OrderAnswer.LowersLeverage), the step is its own set_leverage attempt
// and outcome in the journal (step_of), sent and settled like any
// set_leverage, and it only ever lowers (risk-reducing: no confirmation of
// its own, no limit). The order is decided again, and sent, only once the
// step's outcome is journaled and the position read after it shows the
// lower leverage; anything else answers the call without sending the
// order. With a position open the leverage is never changed for the
// agent: the order is refused naming set_leverage and the value to use.

// afterLeverageStep follows the step's write ex (started by execute, with
// the call's ticket; it holds the call's idempotency claim): next runs
// with the step's client order id and the position read after it, only
// when the step's outcome is journaled and that position shows the lower
// leverage. Otherwise the caller is answered and the order is not sent.
func (u *userActor) afterLeverageStep(ctx actor.Context, act *action, a messages.PlaceOrderArgs, ex *action, step *messages.LeverageChange, next func(stepID string, pos *messages.Position)) {
	if _, running := u.actions[ex.id]; !running {
		return // stopped before its attempt; execute answered the caller
	}
	// The caller is answered once, after the order (or instead of it).
	ex.waiter, ex.claim = nil, act.claim
	var failed *messages.Error
	var shown *messages.Position
	stepID := ""
	ex.complete = func(r *orderResult, w *orderWritten) any {
		stepID = r.ClientOrderID
		ans := messages.LeverageAnswer{Category: a.Category, Symbol: a.Symbol, Leverage: step.To, Previous: step.From, ResultSource: r.ResultSource}
		if r.Err != nil {
			failed = leverageStepFailed(r.Err, step)
			return r.Err
		}
		ans.Status = positionWriteStatus(w)
		if w.positionShows && w.position != nil {
			shown = w.position
		} else {
			failed = leverageStepFailed(&messages.Error{Code: messages.CodeExchangeUnavailable,
				Message: "the venue accepted the lower leverage, but the position read after it does not show it", RetryAfterS: 1,
				Details: map[string]any{"reason": "leverage_not_shown"}}, step)
		}
		ans.Fence()
		return &ans
	}
	ex.after = func() {
		switch {
		case failed != nil:
			u.reply(ctx, act.waiter, failed)
		case shown == nil:
			// The step's record failed (the journal is down): its
			// outcome is not known here.
			u.reply(ctx, act.waiter, leverageStepFailed(&messages.Error{Code: messages.CodeInternalError,
				Message: "the journal failed while the leverage was being lowered", Details: map[string]any{"reason": "journal"}}, step))
		default:
			next(stepID, shown)
		}
	}
}

// leverageStepFailed is the answer of a place_order whose leverage step
// did not end with the position showing the lower leverage: the step's
// own error (its code and details), saying that the order was not sent.
func leverageStepFailed(e *messages.Error, step *messages.LeverageChange) *messages.Error {
	out := *e
	out.Details = map[string]any{}
	for k, v := range e.Details {
		out.Details[k] = v
	}
	out.Details["step"] = risk.ToolLeverage
	out.Details["order_sent"] = false
	out.Message = "the order was not sent: lowering the leverage from " + step.From.String() + "x to " + step.To.String() + "x first did not complete: " + e.Message
	out.NextStep = "read get_positions; when the symbol's leverage shows " + step.To.String() + "x or less, place the order again (set_leverage lowers it too)"
	return &out
}

// executeOrder carries out a new order's decision (place_order,
// close_position): the order, or first its leverage step, then the order
// decided again on the position read after the step and the state as it
// is then (the kill switch, the limits with what is in flight), at the
// market the plan was shown with.
func (u *userActor) executeOrder(ctx actor.Context, act *action, d *risk.Decision) {
	tool := act.call.tool.Name
	a := d.Args.(messages.PlaceOrderArgs)
	send := func(plan risk.Plan, ans *messages.OrderAnswer) {
		if d.NetHash != "" && plan.RiskIncreasing {
			plan.ArgsSHA256 = d.NetHash
		}
		ex := u.execute(ctx, plan, act.origin, act.waiter)
		ex.claim = act.claim
		ex.complete = func(r *orderResult, w *orderWritten) any { return orderAnswerOf(ans, r, w) }
	}
	step := d.Step
	if step == nil {
		send(d.Plan, d.Planned.(*messages.OrderAnswer))
		return
	}
	orderLinkID := u.reserveLinkID(act.origin)
	lower := u.execute(ctx, risk.LeverageStepPlan(tool, a, step, orderLinkID), act.origin, act.waiter)
	u.afterLeverageStep(ctx, act, a, lower, step, func(stepID string, pos *messages.Position) {
		after := d.Market
		after.Position, after.PositionRead = pos, true
		plan, ans, e := risk.DecidePlace(u.state, tool, a, u.venue, u.env, after, u.reserved(), u.now())
		if e != nil {
			u.refuseTool(ctx, tool, a.Category, a.Symbol, false, e, act.origin, act.waiter)
			return
		}
		ans.LowersLeverage = step
		plan = risk.PlanAsRun(plan, d.Market, act.origin.ConfirmationID != "", act.call.hash)
		plan.LinkID, plan.AfterStep = orderLinkID, stepID
		send(plan, ans)
	})
}
