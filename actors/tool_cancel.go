package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// cancel_order's carry-out half: one write (executeOnce), answered with
// the order as read back after it. Its decision: risk/tool_cancel.go.

// storedCancel decodes a stored cancel answer.
var storedCancel = storedAs(func(a *messages.CancelAnswer) *string { return &a.ResultSource })

// completeCancel is the cancel's answer of its outcome.
func completeCancel(d *risk.Decision, r *orderResult, w *orderWritten) any {
	o := d.Plan.Changes
	if r.Err != nil {
		return withOrderID(r.Err, o.OrderID)
	}
	ans := *d.Planned.(*messages.CancelAnswer)
	ans.ActionClientID, ans.ResultSource = r.ClientOrderID, r.ResultSource
	read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
	if e != nil {
		return e
	}
	res := messages.CancelResult(read)
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

// cancelOrderTool is cancel_order's descriptor: its pure half and the
// parts above, registered once.
var cancelOrderTool = register(&toolDescriptor{Tool: risk.CancelOrder,
	carryOut: (*userActor).executeOnce, complete: completeCancel, stored: storedCancel, heldOnRecheck: true})
