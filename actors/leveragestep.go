package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
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
func leverageStepOf(tool string, a messages.PlaceOrderArgs, p messages.Policy, m placeMarket) *messages.LeverageChange {
	if tool != toolPlaceOrder || a.ReduceOnly || a.Category != messages.CategoryLinear || !m.positionRead || m.position == nil || m.pushedOpen {
		return nil
	}
	pos := m.position
	if !pos.Size.IsZero() || !pos.Leverage.GreaterThan(p.MaxLeverage) {
		return nil
	}
	to := leverageCap(p.MaxLeverage, m.instrument)
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
func (m placeMarket) withLeverage(v decimal.Decimal) placeMarket {
	p := *m.position
	p.Leverage = v
	m.position = &p
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

// leverageStepPlan is a place_order's leverage step: a set_leverage write
// (not risk-increasing, no key of its own) whose attempt says which tool
// it is a step of, and whose ticket names the order that follows it.
func leverageStepPlan(tool string, a messages.PlaceOrderArgs, step *messages.LeverageChange, orderLinkID string) orderPlan {
	return orderPlan{tool: toolLeverage, category: a.Category, symbol: a.Symbol, stepOf: tool, ticketID: orderLinkID,
		leverage: &messages.SetLeverageRequest{Category: a.Category, Symbol: a.Symbol, Leverage: step.To}}
}

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
	out.Details["step"] = toolLeverage
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
func (u *userActor) executeOrder(ctx actor.Context, act *action, d *toolDecision) {
	tool := act.call.tool.name
	a := d.args.(messages.PlaceOrderArgs)
	send := func(plan orderPlan, ans *messages.OrderAnswer) {
		if d.netHash != "" && plan.riskIncreasing {
			plan.argsSHA256 = d.netHash
		}
		ex := u.execute(ctx, plan, act.origin, act.waiter)
		ex.claim = act.claim
		ex.complete = func(r *orderResult, w *orderWritten) any { return orderAnswerOf(ans, r, w) }
	}
	step := d.step
	if step == nil {
		send(d.plan, d.planned.(*messages.OrderAnswer))
		return
	}
	orderLinkID := u.reserveLinkID(act.origin)
	lower := u.execute(ctx, leverageStepPlan(tool, a, step, orderLinkID), act.origin, act.waiter)
	u.afterLeverageStep(ctx, act, a, lower, step, func(stepID string, pos *messages.Position) {
		after := d.market
		after.position, after.positionRead = pos, true
		plan, ans, e := decidePlace(u.state, tool, a, u.venue, u.env, after, u.reserved(), u.now())
		if e != nil {
			u.refuseTool(ctx, tool, a.Category, a.Symbol, false, e, act.origin, act.waiter)
			return
		}
		ans.LowersLeverage = step
		plan = orderPlanAsRun(plan, d.market, act.origin.ConfirmationID != "", act.call.hash)
		plan.linkID, plan.afterStep = orderLinkID, stepID
		send(plan, ans)
	})
}
