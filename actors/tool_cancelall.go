package actors

import (
	"fmt"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// cancel_all_orders: a snapshot of the plain open orders (New,
// PartiallyFilled) it has just read, at most cancelAllMax, cancelled one
// by one by id (cancelall.go). It reduces risk: the kill switch lets it
// through; orders that protect a position are left and counted (D73).

const toolCancelAll = "cancel_all_orders"

// cancelAllHash is the hash a cancel_all_orders' idempotency key is
// claimed with.
func cancelAllHash(a messages.CancelAllArgs) string {
	return argsHash(toolCancelAll, string(a.Category), a.Symbol)
}

// shownCancelAll is the plan a confirmation of cancel_all_orders shows:
// exactly the orders listed.
func shownCancelAll(d *toolDecision) messages.ShownToUser {
	a := d.planned.(*messages.CancelAllAnswer)
	return messages.ShownToUser{CancelAll: a,
		Summary: fmt.Sprintf("Cancel %d open orders on %s, %d of them external (exactly the orders listed)", a.Count, onInstrument(a.Category, a.Symbol), a.ExternalCount)}
}

// storedCancelAll decodes a stored cancel_all_orders answer.
var storedCancelAll = storedAs(func(a *messages.CancelAllAnswer) *string { return &a.ResultSource })

// validateCancelAll checks a cancel_all_orders' arguments alone.
func validateCancelAll(a messages.CancelAllArgs) *messages.Error {
	return firstError(checkCategory(a.Category), checkSymbol(a.Symbol), checkKey(a.IdempotencyKey))
}

// decideCancelAll plans the cancels from the snapshot of open orders.
func decideCancelAll(in *decideIn) toolDecision {
	a := in.args.(messages.CancelAllArgs)
	if e := in.gate(a.Category, a.Symbol, false); e != nil {
		return refused(e)
	}
	plain, malformed, protective := cancelAllCandidates(in.read.orders, a.Symbol, in.shown)
	ans := &messages.CancelAllAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, HasMore: in.read.hasMore || len(plain) > cancelAllMax,
		IdempotencyKey: a.IdempotencyKey, Orders: []messages.CancelAllRow{}, ProtectiveLeft: protective}
	if len(plain) > cancelAllMax {
		plain = plain[:cancelAllMax]
	}
	for _, o := range plain {
		row := messages.CancelAllRow{OrderID: o.OrderID, Origin: in.state.OrderOrigin(o.OrderLinkID), Status: "planned"}
		if row.Origin == messages.OriginSystem {
			row.ClientOrderID = o.OrderLinkID
		} else {
			ans.ExternalCount++
		}
		ans.Orders = append(ans.Orders, row)
	}
	ans.Count = len(ans.Orders)
	ans.Fence()
	return toolDecision{planned: ans, orders: plain, malformed: malformed,
		plan: orderPlan{tool: toolCancelAll, category: a.Category, symbol: a.Symbol, confirmedBy: confirmedBy(in.policy(), toolCancelAll, decimal.Zero)}}
}

// cancelRowStatus is the status of one cancel of the chain (its row's
// status): the venue's result, or the error's code.
func cancelRowStatus(d *toolDecision, r *orderResult, w *orderWritten) any {
	if r.Err != nil {
		return string(r.Err.Code)
	}
	o := d.plan.changes
	read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
	if e != nil {
		return string(e.Code)
	}
	return string(venue.CancelResult(read).Status)
}

// cancelAllCandidates picks from the venue's open orders those a
// cancel-all cancels: the plain open orders of symbol (an order that
// protects a position is left and counted in protective); for an approved
// one (shown is its plan) only those the human was shown. An order whose
// id is not shaped like a venue order id (messages.VenueOrderIDRE) is left
// out and counted in malformed: its id would carry the exchange's text to
// the human's form or terminal, to the agent and back to the venue.
func cancelAllCandidates(orders []messages.Order, symbol string, shown *messages.ShownToUser) (plain []messages.Order, malformed, protective int) {
	for _, o := range orders {
		if o.Symbol != symbol || (o.Status != "New" && o.Status != "PartiallyFilled") {
			continue
		}
		if !messages.VenueOrderIDRE.MatchString(o.OrderID) {
			malformed++
			continue
		}
		if protectiveOrder(&o) {
			// Cancelling it adds risk (D73): left, like the dead-man
			// switch leaves it, so this call reduces risk only.
			protective++
			continue
		}
		// An approved cancel-all cancels exactly the orders shown.
		if shown != nil && (shown.CancelAll == nil || !slices.ContainsFunc(shown.CancelAll.Orders, func(r messages.CancelAllRow) bool { return r.OrderID == o.OrderID })) {
			continue
		}
		plain = append(plain, o)
	}
	return plain, malformed, protective
}

// cancelAllTool is cancel_all_orders' descriptor: the parts above,
// registered once. The cancels run one by one, paced (cancelall.go).
var cancelAllTool = register(&toolDescriptor{name: toolCancelAll, argParts: argsOf[*messages.CancelAllCommand](validateCancelAll, cancelAllHash),
	riskIncreasing: riskReducing, needs: needOpenOrders, decide: decideCancelAll, shown: shownCancelAll, bound: stepBounds.cancelAll,
	carryOut: (*userActor).runCancelAll, complete: cancelRowStatus, stored: storedCancelAll, heldOnRecheck: true})
