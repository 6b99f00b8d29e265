package messages

// What an order as the venue shows it says about a write: its filled
// quantity and what an accepted cancel or amend is known to have done.
// Pure functions of the order (and the amend asked for), shared by the
// venue (settling an unknown outcome) and the trading tools' answers.

// ReasonMalformedResult is the reason of an answer the exchange gave that
// could not be read (retCode 0, but a result this server cannot decode,
// or an order or position with a side that is not one of Bybit's).
const ReasonMalformedResult = "malformed_result"

// FilledOf is an order's filled quantity: unknown when the order could not
// be read (nil), is not applied yet (status "Created" or empty) or shows a
// status that is not one of Bybit's (what it says is not known), else its
// cumExecQty.
func FilledOf(o *Order) FilledQty {
	if o == nil || o.Status == "" || o.Status == "Created" || !KnownOrderStatus(o.Status) {
		return FilledQty{}
	}
	return KnownFilled(o.CumExecQty)
}

// FinalOrderStatus reports whether an order status is closed (docs/bybit.md "Order statuses").
func FinalOrderStatus(status string) bool {
	switch status {
	case "Filled", "Cancelled", "Rejected", "PartiallyFilledCanceled", "Deactivated":
		return true
	}
	return false
}

// CancelResult says what an accepted cancel is known to have done, given
// the order as read back after the ack (nil when it could not be read):
// cancelled only when the order shows it; filled when it filled first;
// otherwise cancel_requested (check again, never "failed").
func CancelResult(o *Order) ChangeResult {
	r := ChangeResult{Status: ChangeCancelRequested, Order: o, FilledQty: FilledOf(o)}
	if o == nil {
		return r
	}
	switch o.Status {
	case "Cancelled", "PartiallyFilledCanceled", "Deactivated":
		r.Status = ChangeCancelled
	case "Filled":
		r.Status = ChangeFilled
	}
	return r
}

// AmendResult says what an accepted amend is known to have done, given the
// request and the order as read back after the ack (nil when it could not
// be read): amended only when the order shows every requested value
// (qty, price; a TP/SL change is not visible on Order);
// filled or order_closed when the order closed without them; otherwise
// amend_requested.
func AmendResult(req AmendOrderRequest, o *Order) ChangeResult {
	r := ChangeResult{Status: ChangeAmendRequested, Order: o, FilledQty: FilledOf(o)}
	if o == nil {
		return r
	}
	// Order does not carry an order's TP/SL, so an amend of them is never
	// known to show: it stays amend_requested.
	shows := (!req.Qty.Valid || o.Qty.Equal(req.Qty.Decimal)) &&
		(!req.Price.Valid || o.Price.Equal(req.Price.Decimal)) &&
		!req.TakeProfit.Valid && !req.StopLoss.Valid
	switch {
	case shows && (o.Status == "New" || o.Status == "PartiallyFilled" || o.Status == "Untriggered"):
		r.Status = ChangeAmended
	case o.Status == "Filled":
		r.Status = ChangeFilled
	case FinalOrderStatus(o.Status):
		if shows {
			r.Status = ChangeAmended
		} else {
			r.Status = ChangeOrderClosed
		}
	}
	return r
}
