package actors

import (
	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// cancel_all_orders' carry-out half: the planned cancels one by one,
// paced (runCancelAll, cancelall.go), each answered in its row. Its
// decision: risk/tool_cancelall.go.

// storedCancelAll decodes a stored cancel_all_orders answer.
var storedCancelAll = storedAs(func(a *messages.CancelAllAnswer) *string { return &a.ResultSource })

// cancelRowStatus is the status of one cancel of the chain (its row's
// status): the venue's result, or the error's code.
func cancelRowStatus(d *risk.Decision, r *orderResult, w *orderWritten) any {
	if r.Err != nil {
		return string(r.Err.Code)
	}
	o := d.Plan.Changes
	read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
	if e != nil {
		return string(e.Code)
	}
	return string(messages.CancelResult(read).Status)
}

// cancelAllTool is cancel_all_orders' descriptor: its pure half and the
// parts above, registered once. The cancels run one by one, paced (cancelall.go).
var cancelAllTool = register(&toolDescriptor{Tool: risk.CancelAll,
	bound: stepBounds.cancelAll, carryOut: (*userActor).runCancelAll, complete: cancelRowStatus, stored: storedCancelAll, heldOnRecheck: true})
