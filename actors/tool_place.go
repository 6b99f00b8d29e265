package actors

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// place_order: a new order, decided by decidePlace (limits.go) on the
// market the venue showed: the instrument's rules, the notional, the
// limits with the reservations of the actions in flight, the
// confirmation. A new order on a symbol whose leverage is above
// max_leverage lowers it first (leveragestep.go, D111). Risk-increasing
// unless reduce-only.

const toolPlaceOrder = "place_order"

// placeOrderHash is the hash a place_order's idempotency key is claimed
// with.
func placeOrderHash(a messages.PlaceOrderArgs) string { return placeArgsHash(toolPlaceOrder, a) }

// placeRiskIncreasing: a new order adds risk unless it is reduce-only.
var placeRiskIncreasing = typed(func(a messages.PlaceOrderArgs) bool { return !a.ReduceOnly })

// placePlannedHash is the safety net's hash of a new order without a key
// (D55): a key decides repeats, and a reduce-only order is never
// deduplicated.
func placePlannedHash(args any, qtyStep decimal.Decimal) string {
	a := args.(messages.PlaceOrderArgs)
	if a.IdempotencyKey != "" || a.ReduceOnly {
		return ""
	}
	return plannedHash(toolPlaceOrder, a, qtyStep)
}

// placeBound is a place_order's bound: the leverage step, then the order
// (D111).
func placeBound(b stepBounds) time.Duration { return b.trade(2) }

// prepareOrder makes an approved order the one the human was shown: the
// same side, at most the qty shown (a close or reduce-only order is cut
// to what is left), a market order at the worst price shown.
func prepareOrder(in *decideIn) *messages.Error {
	shown := in.shown
	if shown == nil || shown.Order == nil {
		return nil
	}
	a := in.args.(messages.PlaceOrderArgs)
	if a.Side != shown.Order.Side {
		return &messages.Error{Code: messages.CodePermissionDenied,
			Message: "the position changed side since the human approved; nothing was sent", NextStep: "call the tool again; a new confirmation shows the plan as it is now",
			Details: map[string]any{"reason": "risk_direction_changed"}}
	}
	if !a.Qty.IsPositive() || a.Qty.GreaterThan(shown.Order.Qty) {
		a.Qty = shown.Order.Qty
	}
	in.read.market.confirmed = true
	if a.OrderType == "Market" {
		in.read.market.worst = shown.Order.Price
	}
	in.args = a
	return nil
}

// decideOrder decides a new order (place_order, close_position) with its
// leverage step, if it takes one.
func decideOrder(in *decideIn) toolDecision {
	a := in.args.(messages.PlaceOrderArgs)
	mk := in.read.market
	p := in.policy()
	// A symbol without a position whose leverage is above max_leverage
	// is lowered first, and the order planned at the lower leverage
	// (leveragestep.go, D111).
	step := leverageStepOf(in.tool, a, p, mk)
	if in.shown != nil && in.shown.Order != nil {
		if e := leverageAsShown(in.shown.Order.LowersLeverage, step, mk.position); e != nil {
			return refused(e)
		}
	}
	unstepped := mk
	if step != nil {
		mk = mk.withLeverage(step.To)
	}
	plan, ans, e := decidePlace(in.state, in.tool, a, in.venue, in.env, mk, in.reserved, in.now)
	if e == nil && step != nil && plan.confirmedBy == "" && confirmedBy(p, toolLeverage, decimal.Zero) != "" {
		// A human confirms every set_leverage and none confirms this
		// order: its step would skip that confirmation, so there is no
		// step (the order is decided at the leverage shown, and refused
		// naming set_leverage).
		step, mk = nil, unstepped
		plan, ans, e = decidePlace(in.state, in.tool, a, in.venue, in.env, mk, in.reserved, in.now)
	}
	if e != nil {
		return refused(e)
	}
	ans.LowersLeverage = step
	return toolDecision{planned: ans, risk: plan.riskIncreasing, plan: orderPlanAsRun(plan, mk, in.approved, in.hash), step: step, market: mk, args: a}
}

// orderPlanAsRun completes a new order's plan: what an order found for it
// must match (decisions D95), and for an approved run the key's claim is
// the parked call's arguments (hash), whatever the run cut.
func orderPlanAsRun(plan orderPlan, mk placeMarket, approved bool, hash string) orderPlan {
	plan.expect = createExpectation(plan.create, mk.instrument, mk.band)
	if approved {
		plan.argsSHA256 = hash
	}
	return plan
}

// shownOrder is the plan a confirmation of a new order shows.
func shownOrder(d *toolDecision) messages.ShownToUser {
	o := d.planned.(*messages.OrderAnswer)
	price := "at " + o.Price.String()
	if o.OrderType == "Market" {
		price = "Market, worst price " + o.Price.String()
	}
	reduce := ""
	if o.ReduceOnly {
		reduce = " reduce-only"
	}
	first := ""
	if l := o.LowersLeverage; l != nil {
		first = fmt.Sprintf(", after lowering the leverage from %sx to %sx", l.From, l.To)
	}
	return messages.ShownToUser{Order: o, RiskIncreasing: d.risk,
		Summary: fmt.Sprintf("%s %s %s%s %s, value up to %s USDT%s", o.Side, o.Qty, onInstrument(o.Category, o.Symbol), reduce, price, o.NotionalUSDT.StringFixed(2), first)}
}

// completeOrder completes the planned order answer with the write's
// outcome.
func completeOrder(d *toolDecision, r *orderResult, w *orderWritten) any {
	return orderAnswerOf(d.planned.(*messages.OrderAnswer), r, w)
}

// storedOrder decodes a stored order answer.
var storedOrder = storedAs(func(a *messages.OrderAnswer) *string { return &a.ResultSource })

// placeOrderTool is place_order's descriptor: the parts above and in
// limits.go, registered once.
var placeOrderTool = register(&toolDescriptor{name: toolPlaceOrder, argParts: argsOf[*messages.PlaceOrderCommand](validatePlace, placeOrderHash),
	riskIncreasing: placeRiskIncreasing, plannedHash: placePlannedHash, needs: needMarket, prepare: prepareOrder, decide: decideOrder,
	shown: shownOrder, carryOut: (*userActor).executeOrder, complete: completeOrder, stored: storedOrder, bound: placeBound, heldOnRecheck: true})
