package actors

import (
	"fmt"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// cancel_order. A cancel reduces risk: the kill switch lets it through
// and it reserves no notional; except the cancel of an order that
// protects a position (reduce-only or conditional, D73), which adds risk:
// the kill switch, the posture, the allowlist and the rate limits apply
// and it counts in the rate windows. The order is looked up first (open
// orders, by its id), so the decision knows what it cancels, the answer
// can say whether the server placed it (origin) and an unknown outcome
// can be settled by its client order id.

const toolCancelOrder = "cancel_order"

// shownCancel is the plan a confirmation of a cancel shows.
func shownCancel(d *toolDecision) messages.ShownToUser {
	c := d.planned.(*messages.CancelAnswer)
	return messages.ShownToUser{Cancel: c, RiskIncreasing: d.risk,
		Summary: fmt.Sprintf("Cancel order %s on %s (origin %s)", c.OrderID, onInstrument(c.Category, c.Symbol), c.Origin)}
}

// storedCancel decodes a stored cancel answer.
var storedCancel = storedAs(func(a *messages.CancelAnswer) *string { return &a.ResultSource })

// validateCancel checks a cancel's arguments alone.
func validateCancel(a messages.CancelOrderArgs) *messages.Error {
	return firstError(checkCategory(a.Category), checkSymbol(a.Symbol), checkOrderID(a.OrderID), checkKey(a.IdempotencyKey))
}

// cancelArgsHash is the hash a cancel_order's idempotency key is claimed
// with.
func cancelArgsHash(a messages.CancelOrderArgs) string {
	return argsHash(toolCancelOrder, string(a.Category), a.Symbol, a.OrderID)
}

// decideCancel decides the cancel of the order the venue showed. The gate
// runs again, now that the order is known: the state may have changed
// while the venue answered, and cancelling an order that protects a
// position adds risk (D73).
func decideCancel(in *decideIn) toolDecision {
	a := in.args.(messages.CancelOrderArgs)
	risk := in.read.order != nil && protectiveOrder(in.read.order)
	var e *messages.Error
	if risk {
		e = decideLoosening(in, a.Category, a.Symbol)
	} else {
		e = in.gate(a.Category, a.Symbol, false)
	}
	if e == nil && in.read.order == nil {
		e = &messages.Error{Code: messages.CodeNotFound, Message: "no open order with this id on this instrument",
			NextStep: "list the open orders with get_open_orders; a filled or cancelled order cannot be cancelled"}
	}
	if e != nil {
		return refused(e)
	}
	o := *in.read.order
	planned := messages.CancelAnswer{Status: messages.AnswerPreview, OrderID: o.OrderID, Category: a.Category, Symbol: a.Symbol,
		Origin: in.state.OrderOrigin(o.OrderLinkID), OrderStatus: o.Status, FilledQty: venue.FilledOf(&o), IdempotencyKey: a.IdempotencyKey}
	if planned.Origin == messages.OriginSystem {
		planned.ClientOrderID = o.OrderLinkID
	}
	planned.Fence()
	return toolDecision{planned: &planned, risk: risk, plan: orderPlan{tool: toolCancelOrder, confirmedBy: confirmedBy(in.policy(), toolCancelOrder, decimal.Zero),
		category: a.Category, symbol: a.Symbol, settleLinkID: o.OrderLinkID, changes: &o, riskIncreasing: risk,
		cancel:         &messages.CancelOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID},
		idempotencyKey: a.IdempotencyKey, argsSHA256: in.hash}}
}

// completeCancel is the cancel's answer of its outcome.
func completeCancel(d *toolDecision, r *orderResult, w *orderWritten) any {
	o := d.plan.changes
	if r.Err != nil {
		return withOrderID(r.Err, o.OrderID)
	}
	ans := *d.planned.(*messages.CancelAnswer)
	ans.ActionClientID, ans.ResultSource = r.ClientOrderID, r.ResultSource
	read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
	if e != nil {
		return e
	}
	res := venue.CancelResult(read)
	ans.Status, ans.FilledQty, ans.OrderStatus = string(res.Status), res.FilledQty, ""
	if read != nil {
		ans.OrderStatus = read.Status
	}
	ans.Fence()
	return &ans
}

// withOrderID is a write's error naming the order it changed (cancel,
// amend): its details with order_id added.
func withOrderID(err *messages.Error, orderID string) *messages.Error {
	e := *err
	d := map[string]any{"order_id": orderID}
	for k, v := range err.Details {
		d[k] = v
	}
	e.Details = d
	return &e
}

// cancelOrderTool is cancel_order's descriptor: the parts above,
// registered once.
var cancelOrderTool = register(&toolDescriptor{name: toolCancelOrder, argParts: argsOf[*messages.CancelOrderCommand](validateCancel, cancelArgsHash),
	riskIncreasing: riskReducing, needs: needOrder, decide: decideCancel, shown: shownCancel,
	carryOut: (*userActor).executeOnce, complete: completeCancel, stored: storedCancel, heldOnRecheck: true})
