package actors

import (
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// place_order's carry-out half: the order, or first its leverage step
// (executeOrder, leveragestep.go, D111). Its decision: risk/tool_place.go.

// placeBound is a place_order's bound: the leverage step, then the order
// (D111).
func placeBound(b stepBounds) time.Duration { return b.trade(2) }

// completeOrder completes the planned order answer with the write's
// outcome.
func completeOrder(d *risk.Decision, r *orderResult, w *orderWritten) any {
	return orderAnswerOf(d.Planned.(*messages.OrderAnswer), r, w)
}

// storedOrder decodes a stored order answer.
var storedOrder = storedAs(func(a *messages.OrderAnswer) *string { return &a.ResultSource })

// placeOrderTool is place_order's descriptor: its pure half and the
// parts above, registered once.
var placeOrderTool = register(&toolDescriptor{Tool: risk.PlaceOrder,
	carryOut: (*userActor).executeOrder, complete: completeOrder, stored: storedOrder, bound: placeBound, heldOnRecheck: true})
