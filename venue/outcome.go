package venue

import (
	"context"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Settling an unknown outcome (docs/tools.md "The action path" step 8, issue 10): a write whose
// outcome is unknown is never resent. The order is looked for by its
// client order id, first on the private stream for a bounded time, then by
// REST (open orders, then order history).

// OrderWaiter reports an order push for a client order id that matches
// an expectation; *Stream is one.
type OrderWaiter interface {
	WaitMatchingOrder(ctx context.Context, expect *messages.OrderExpectation, wait time.Duration) (messages.Order, bool, []string)
}

// Mismatch is an order the venue showed for an attempt that did not match
// it (messages.OrderExpectation): where it was seen and the first field
// that disagreed. It settles nothing; the caller journals it.
type Mismatch struct {
	// Source is messages.AnomalySourceStream or AnomalySourceREST.
	Source string
	Field  string
}

// FieldNotFoundByREST is the Mismatch field of a pushed order that REST
// then answered the venue does not have (neither open nor in history).
const FieldNotFoundByREST = "not_found_by_rest"

// Where a settled order was found.
const (
	FoundOnStream       = "stream"
	FoundInOpenOrders   = "open_orders"
	FoundInOrderHistory = "order_history"
)

// Settlement is a settled unknown outcome: the order exists.
type Settlement struct {
	// Order is the order as last seen (REST when REST found it, else the
	// stream's push).
	Order messages.Order
	// ResultSource is always messages.ResultSourceReconnaissance.
	ResultSource string
	// FoundBy is FoundOnStream, FoundInOpenOrders or FoundInOrderHistory.
	FoundBy string
	// FilledQty is the order's executed quantity.
	FilledQty messages.FilledQty
}

// Settle looks up the order a write with an unknown outcome may have
// created or changed, by the expectation's client order id. It waits up
// to wait for a matching push on stream (nil skips the wait), then reads
// the order back by REST: open orders, then history.
//
// Only an order that matches expect settles the write (its client order
// id, category, symbol, side, a quantity no larger, prices inside the
// band, the order id where one is known). Anything else is a Mismatch,
// returned for the caller to journal, and settles nothing.
//
// Found by REST, or on the stream when REST could not be read, gives a
// Settlement with result source "reconnaissance". Not found gives
// outcome_unknown with details reconnaissance "not_found" (the exchange's
// lists may lag: it is never "failed"); a push that REST answers it does
// not know (neither open nor in history) settles nothing: outcome_unknown
// with reconnaissance "conflict" and a Mismatch (FieldNotFoundByREST). A
// REST failure without a push gives outcome_unknown with reconnaissance
// "failed", and a REST answer that does not match reconnaissance
// "mismatch". All carry client_order_id and a next step. Nothing is ever
// resent.
func Settle(ctx context.Context, c *Client, stream OrderWaiter, expect messages.OrderExpectation, wait time.Duration) (*Settlement, []Mismatch, error) {
	cat, symbol, orderLinkID := expect.Category, expect.Symbol, expect.ClientOrderID
	if err := checkCategorySymbol(cat, symbol); err != nil {
		return nil, nil, err
	}
	if orderLinkID == "" || !orderLinkIDRE.MatchString(orderLinkID) {
		return nil, nil, messages.InvalidParams("order_link_id", "must be 1 to 45 characters of A-Z, a-z, 0-9, _ and -")
	}
	var pushed messages.Order
	var mismatches []Mismatch
	seen := false
	if stream != nil && wait > 0 {
		var rejected []string
		pushed, seen, rejected = stream.WaitMatchingOrder(ctx, &expect, wait)
		for _, f := range rejected {
			mismatches = append(mismatches, Mismatch{Source: messages.AnomalySourceStream, Field: f})
		}
	}
	o, where, err := c.OrderByLinkID(ctx, cat, symbol, orderLinkID)
	recon := "failed"
	switch {
	case err == nil:
		if f := expect.Mismatch(o); f != "" {
			mismatches = append(mismatches, Mismatch{Source: messages.AnomalySourceREST, Field: f})
			recon = "mismatch"
			break
		}
		return &Settlement{Order: *o, ResultSource: messages.ResultSourceReconnaissance, FoundBy: where, FilledQty: FilledOf(o)}, mismatches, nil
	case seen && messages.CodeOf(err) == messages.CodeNotFound:
		// REST answered that the venue has no such order, yet a push
		// showed one: the two disagree, and a push is no more than what
		// the stream says. Nothing is settled; the attempt stays open for
		// a later reconcile, and the disagreement is an anomaly.
		mismatches = append(mismatches, Mismatch{Source: messages.AnomalySourceStream, Field: FieldNotFoundByREST})
		recon = "conflict"
	case seen:
		// REST failed, but the stream showed the order.
		return &Settlement{Order: pushed, ResultSource: messages.ResultSourceReconnaissance, FoundBy: FoundOnStream, FilledQty: FilledOf(&pushed)}, mismatches, nil
	case messages.CodeOf(err) == messages.CodeNotFound:
		recon = "not_found"
	}
	return nil, mismatches, &messages.Error{
		Code: messages.CodeOutcomeUnknown,
		Message: "the exchange did not give a definite answer and the order could not be found by its client order id; " +
			"it may or may not exist",
		NextStep: "do not resend; check get_open_orders and get_order_history for the client order id in a little while",
		Details: map[string]any{
			"client_order_id": orderLinkID,
			"reconnaissance":  recon,
			"outcome":         string(WriteUnknown),
		},
		Err: joinUnknown(err),
	}
}

func joinUnknown(err error) error {
	if err == nil {
		return ErrOutcomeUnknown
	}
	return &wrapUnknown{err}
}

// wrapUnknown makes errors.Is(err, ErrOutcomeUnknown) hold while keeping
// the read's error as the cause.
type wrapUnknown struct{ cause error }

func (w *wrapUnknown) Error() string   { return ErrOutcomeUnknown.Error() + ": " + w.cause.Error() }
func (w *wrapUnknown) Unwrap() []error { return []error{ErrOutcomeUnknown, w.cause} }

// FilledOf is an order's filled quantity (messages.FilledOf).
func FilledOf(o *messages.Order) messages.FilledQty { return messages.FilledOf(o) }

// IsFinal reports whether an order status is closed (messages.FinalOrderStatus).
func IsFinal(status string) bool { return messages.FinalOrderStatus(status) }

// CancelResult says what an accepted cancel is known to have done
// (messages.CancelResult).
func CancelResult(o *messages.Order) messages.ChangeResult { return messages.CancelResult(o) }

// AmendResult says what an accepted amend is known to have done
// (messages.AmendResult).
func AmendResult(req messages.AmendOrderRequest, o *messages.Order) messages.ChangeResult {
	return messages.AmendResult(req, o)
}
