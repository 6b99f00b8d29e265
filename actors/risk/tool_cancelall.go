package risk

import (
	"fmt"
	"slices"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// cancel_all_orders: a snapshot of the plain open orders (New,
// PartiallyFilled) it has just read, at most risk.CancelAllMax, cancelled one
// by one by id (cancelall.go). It reduces risk: the kill switch lets it
// through; orders that protect a position are left and counted (D73).

// CancelAllMax is how many orders one call cancels.
const CancelAllMax = 20

// ToolCancelAll is cancel_all_orders' tool name.
const ToolCancelAll = "cancel_all_orders"

// cancelAllHash is the hash a cancel_all_orders' idempotency key is
// claimed with.
func cancelAllHash(a messages.CancelAllArgs) string {
	return argsHash(ToolCancelAll, string(a.Category), a.Symbol)
}

// shownCancelAll is the plan a confirmation of cancel_all_orders shows:
// exactly the orders listed.
func shownCancelAll(d *Decision) messages.ShownToUser {
	a := d.Planned.(*messages.CancelAllAnswer)
	return messages.ShownToUser{CancelAll: a,
		Summary: fmt.Sprintf("Cancel %d open orders on %s, %d of them external (exactly the orders listed)", a.Count, onInstrument(a.Category, a.Symbol), a.ExternalCount)}
}

// validateCancelAll checks a cancel_all_orders' arguments alone.
func validateCancelAll(a messages.CancelAllArgs) *messages.Error {
	return firstError(checkSymbol(a.Symbol), checkCategory(a.Category), checkKey(a.IdempotencyKey))
}

// decideCancelAll plans the cancels from the snapshot of open orders.
func decideCancelAll(in *Input) Decision {
	a := in.Args.(messages.CancelAllArgs)
	if e := in.gate(a.Category, a.Symbol, false); e != nil {
		return refused(e)
	}
	plain, malformed, protective := cancelAllCandidates(in.Read.Orders, a.Symbol, in.Shown)
	ans := &messages.CancelAllAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, HasMore: in.Read.HasMore || len(plain) > CancelAllMax,
		IdempotencyKey: a.IdempotencyKey, Orders: []messages.CancelAllRow{}, ProtectiveLeft: protective}
	if len(plain) > CancelAllMax {
		plain = plain[:CancelAllMax]
	}
	for _, o := range plain {
		row := messages.CancelAllRow{OrderID: o.OrderID, Origin: in.State.OrderOrigin(o.OrderLinkID), Status: "planned"}
		if row.Origin == messages.OriginSystem {
			row.ClientOrderID = o.OrderLinkID
		} else {
			ans.ExternalCount++
		}
		ans.Orders = append(ans.Orders, row)
	}
	ans.Count = len(ans.Orders)
	ans.Fence()
	return Decision{Planned: ans, Orders: plain, Malformed: malformed,
		Plan: Plan{Tool: ToolCancelAll, Category: a.Category, Symbol: a.Symbol, ConfirmedBy: ConfirmedBy(in.policy(), ToolCancelAll, decimal.Zero)}}
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

// CancelAll is cancel_all_orders's pure half: the parts above, registered once.
var CancelAll = Register(&Tool{Name: ToolCancelAll, ArgParts: argsOf[*messages.CancelAllCommand](validateCancelAll, cancelAllHash),
	RiskIncreasing: riskReducing, Needs: NeedOpenOrders, Decide: decideCancelAll, Shown: shownCancelAll})
