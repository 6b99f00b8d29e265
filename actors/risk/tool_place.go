package risk

import (
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// place_order: a new order, decided by DecidePlace (limits.go) on the
// market the venue showed: the instrument's rules, the notional, the
// limits with the reservations of the actions in flight, the
// confirmation. A new order on a symbol whose leverage is above
// max_leverage lowers it first (leveragestep.go, D111). Risk-increasing
// unless reduce-only.

// ToolPlaceOrder is place_order's tool name.
const ToolPlaceOrder = "place_order"

// placeOrderHash is the hash a place_order's idempotency key is claimed
// with.
func placeOrderHash(a messages.PlaceOrderArgs) string { return PlaceArgsHash(ToolPlaceOrder, a) }

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
	return plannedHash(ToolPlaceOrder, a, qtyStep)
}

// prepareOrder makes an approved order the one the human was shown: the
// same side, at most the qty shown (a close or reduce-only order is cut
// to what is left), a market order at the worst price shown.
func prepareOrder(in *Input) *messages.Error {
	shown := in.Shown
	if shown == nil || shown.Order == nil {
		return nil
	}
	a := in.Args.(messages.PlaceOrderArgs)
	if a.Side != shown.Order.Side {
		return &messages.Error{Code: messages.CodePermissionDenied,
			Message: "the position changed side since the human approved; nothing was sent", NextStep: "call the tool again; a new confirmation shows the plan as it is now",
			Details: map[string]any{"reason": "risk_direction_changed"}}
	}
	if !a.Qty.IsPositive() || a.Qty.GreaterThan(shown.Order.Qty) {
		a.Qty = shown.Order.Qty
	}
	in.Read.Market.Confirmed = true
	if a.OrderType == "Market" {
		in.Read.Market.Worst = shown.Order.Price
	}
	in.Args = a
	return nil
}

// decideOrder decides a new order (place_order, close_position) with its
// leverage step, if it takes one.
func decideOrder(in *Input) Decision {
	a := in.Args.(messages.PlaceOrderArgs)
	mk := in.Read.Market
	p := in.policy()
	// A symbol without a position whose leverage is above max_leverage
	// is lowered first, and the order planned at the lower leverage
	// (leveragestep.go, D111).
	step := leverageStepOf(in.Tool, a, p, mk)
	if in.Shown != nil && in.Shown.Order != nil {
		if e := leverageAsShown(in.Shown.Order.LowersLeverage, step, mk.Position); e != nil {
			return refused(e)
		}
	}
	unstepped := mk
	if step != nil {
		mk = mk.WithLeverage(step.To)
	}
	plan, ans, e := DecidePlace(in.State, in.Tool, a, in.Venue, in.Env, mk, in.Reserved, in.Now)
	if e == nil && step != nil && plan.ConfirmedBy == "" && ConfirmedBy(p, ToolLeverage, decimal.Zero) != "" {
		// A human confirms every set_leverage and none confirms this
		// order: its step would skip that confirmation, so there is no
		// step (the order is decided at the leverage shown, and refused
		// naming set_leverage).
		step, mk = nil, unstepped
		plan, ans, e = DecidePlace(in.State, in.Tool, a, in.Venue, in.Env, mk, in.Reserved, in.Now)
	}
	if e != nil {
		return refused(e)
	}
	ans.LowersLeverage = step
	return Decision{Planned: ans, Risk: plan.RiskIncreasing, Plan: PlanAsRun(plan, mk, in.Approved, in.Hash), Step: step, Market: mk, Args: a}
}

// PlanAsRun completes a new order's plan: what an order found for it
// must match (decisions D95), and for an approved run the key's claim is
// the parked call's arguments (hash), whatever the run cut.
func PlanAsRun(plan Plan, mk Market, approved bool, hash string) Plan {
	plan.Expect = createExpectation(plan.Create, mk.Instrument, mk.Band)
	if approved {
		plan.ArgsSHA256 = hash
	}
	return plan
}

// shownOrder is the plan a confirmation of a new order shows.
func shownOrder(d *Decision) messages.ShownToUser {
	o := d.Planned.(*messages.OrderAnswer)
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
	return messages.ShownToUser{Order: o, RiskIncreasing: d.Risk,
		Summary: fmt.Sprintf("%s %s %s%s %s, value up to %s USDT%s", o.Side, o.Qty, onInstrument(o.Category, o.Symbol), reduce, price, o.NotionalUSDT.StringFixed(2), first)}
}

// PlaceOrder is place_order's pure half: the parts above, registered once.
var PlaceOrder = Register(&Tool{Name: ToolPlaceOrder, ArgParts: argsOf[*messages.PlaceOrderCommand](validatePlace, placeOrderHash),
	RiskIncreasing: placeRiskIncreasing, PlannedHash: placePlannedHash, Needs: NeedMarket, Prepare: prepareOrder, Decide: decideOrder, Shown: shownOrder})
