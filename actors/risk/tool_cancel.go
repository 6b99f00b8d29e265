package risk

import (
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// cancel_order. A cancel reduces risk: the kill switch lets it through
// and it reserves no notional; except the cancel of an order that
// protects a position (reduce-only or conditional, D73), which adds risk:
// the kill switch, the posture, the allowlist and the rate limits apply
// and it counts in the rate windows. The order is looked up first (open
// orders, by its id), so the decision knows what it cancels, the answer
// can say whether the server placed it (origin) and an unknown outcome
// can be settled by its client order id.

// ToolCancelOrder is cancel_order's tool name.
const ToolCancelOrder = "cancel_order"

// shownCancel is the plan a confirmation of a cancel shows.
func shownCancel(d *Decision) messages.ShownToUser {
	c := d.Planned.(*messages.CancelAnswer)
	return messages.ShownToUser{Cancel: c, RiskIncreasing: d.Risk,
		Summary: fmt.Sprintf("Cancel order %s on %s (origin %s)", c.OrderID, onInstrument(c.Category, c.Symbol), c.Origin)}
}

// validateCancel checks a cancel's arguments alone.
func validateCancel(a messages.CancelOrderArgs) *messages.Error {
	return firstError(checkSymbol(a.Symbol), checkCategory(a.Category), checkOrderID(a.OrderID), checkKey(a.IdempotencyKey))
}

// cancelArgsHash is the hash a cancel_order's idempotency key is claimed
// with.
func cancelArgsHash(a messages.CancelOrderArgs) string {
	return argsHash(ToolCancelOrder, string(a.Category), a.Symbol, a.OrderID)
}

// decideCancel decides the cancel of the order the venue showed. The gate
// runs again, now that the order is known: the state may have changed
// while the venue answered, and cancelling an order that protects a
// position adds risk (D73).
func decideCancel(in *Input) Decision {
	a := in.Args.(messages.CancelOrderArgs)
	risk := in.Read.Order != nil && protectiveOrder(in.Read.Order)
	var e *messages.Error
	if risk {
		e = decideLoosening(in, a.Category, a.Symbol)
	} else {
		e = in.gate(a.Category, a.Symbol, false)
	}
	if e == nil && in.Read.Order == nil {
		e = &messages.Error{Code: messages.CodeNotFound, Message: "no open order with this id on this instrument",
			NextStep: "list the open orders with get_open_orders; a filled or cancelled order cannot be cancelled"}
	}
	if e != nil {
		return refused(e)
	}
	o := *in.Read.Order
	planned := messages.CancelAnswer{Status: messages.AnswerPreview, OrderID: o.OrderID, Category: a.Category, Symbol: a.Symbol,
		Origin: in.State.OrderOrigin(o.OrderLinkID), OrderStatus: o.Status, FilledQty: messages.FilledOf(&o), IdempotencyKey: a.IdempotencyKey}
	if planned.Origin == messages.OriginSystem {
		planned.ClientOrderID = o.OrderLinkID
	}
	planned.Fence()
	return Decision{Planned: &planned, Risk: risk, Plan: Plan{Tool: ToolCancelOrder, ConfirmedBy: ConfirmedBy(in.policy(), ToolCancelOrder, decimal.Zero),
		Category: a.Category, Symbol: a.Symbol, SettleLinkID: o.OrderLinkID, Changes: &o, RiskIncreasing: risk,
		Cancel:         &messages.CancelOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID},
		IdempotencyKey: a.IdempotencyKey, ArgsSHA256: in.Hash}}
}

// CancelOrder is cancel_order's pure half: the parts above, registered once.
var CancelOrder = Register(&Tool{Name: ToolCancelOrder, ArgParts: argsOf[*messages.CancelOrderCommand](validateCancel, cancelArgsHash),
	RiskIncreasing: riskReducing, Needs: NeedOrder, Decide: decideCancel, Shown: shownCancel})
