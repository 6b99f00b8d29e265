package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
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
	by := confirmedBy(u.state.Effective(u.venue, u.env), toolLeverage, decimal.Zero)
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
func leverageStepPlan(act *action, step *messages.LeverageChange, orderLinkID string) orderPlan {
	a := act.place.args
	return orderPlan{tool: toolLeverage, category: a.Category, symbol: a.Symbol, stepOf: act.place.tool, ticketID: orderLinkID,
		leverage: &messages.SetLeverageRequest{Category: a.Category, Symbol: a.Symbol, Leverage: step.To}}
}

// afterLeverageStep follows the step's write ex (started by execute, with
// the call's ticket; it holds the call's idempotency claim): next runs
// with the step's client order id and the position read after it, only
// when the step's outcome is journaled and that position shows the lower
// leverage. Otherwise the caller is answered and the order is not sent.
func (u *userActor) afterLeverageStep(ctx actor.Context, act *action, ex *action, step *messages.LeverageChange, next func(stepID string, pos *messages.Position)) {
	a := act.place.args
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
