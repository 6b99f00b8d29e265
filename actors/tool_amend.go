package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// amend_order's carry-out half: one write (executeOnce), answered with
// the order as read back after it. Its decision: risk/tool_amend.go.

// storedAmend decodes a stored amend answer.
var storedAmend = storedAs(func(a *messages.AmendAnswer) *string { return &a.ResultSource })

// completeAmend is the amend's answer of its outcome.
func completeAmend(d *risk.Decision, r *orderResult, w *orderWritten) any {
	o := d.Plan.Changes
	if r.Err != nil {
		return withOrderID(r.Err, o.OrderID)
	}
	ans := *d.Planned.(*messages.AmendAnswer)
	ans.ResultSource = r.ResultSource
	read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
	if e != nil {
		return e
	}
	res := messages.AmendResult(*d.Plan.Amend, read)
	ans.Status, ans.FilledQty, ans.OrderStatus = string(res.Status), res.FilledQty, ""
	if read != nil {
		ans.OrderStatus = read.Status
	}
	ans.Fence()
	return &ans
}

// amendOrderTool is amend_order's descriptor: its pure half and the
// parts above, registered once. Its first gate reduces risk; the allowlist is applied
// once the venue shows whether the change adds risk (decideAmend).
var amendOrderTool = register(&toolDescriptor{Tool: risk.AmendOrder,
	carryOut: (*userActor).executeOnce, complete: completeAmend, stored: storedAmend, heldOnRecheck: true})
