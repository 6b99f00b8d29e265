package venue

import (
	"context"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Settling an unknown outcome (docs/tools.md "The action path" step 8, issue 10): a write whose
// outcome is unknown is never resent. The order is looked for by its
// client order id and settled only by REST (open orders, then order
// history). A push on the private stream never settles it (decisions
// D183): waiting for one for a bounded time only lets REST be read as
// soon as the order shows.

// OrderWaiter reports an order push for a client order id that matches
// an expectation; *Stream is one. Settle takes the push as a hint that
// ends its wait, never as the order (decisions D183).
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

// Where REST found a settled order.
const (
	FoundInOpenOrders   = "open_orders"
	FoundInOrderHistory = "order_history"
)

// Settlement is a settled unknown outcome: the order exists, as REST
// read it back.
type Settlement struct {
	// Order is the order as REST read it back.
	Order messages.Order
	// ResultSource is always messages.ResultSourceReconnaissance.
	ResultSource string
	// FoundBy is FoundInOpenOrders or FoundInOrderHistory.
	FoundBy string
	// FilledQty is the order's executed quantity.
	FilledQty messages.FilledQty
}

// Settle looks up the order a write with an unknown outcome may have
// created or changed, by the expectation's client order id. It waits up
// to wait for a matching push on stream (nil skips the wait), then reads
// the order back by REST: open orders, then history. The push only ends
// the wait early, so that REST is read as soon as the order shows; it
// never settles the write (decisions D183): a push can be forged or
// rewritten, ids kept, to say a fill the venue never made.
//
// Only an order REST read back that matches expect settles the write (its
// client order id, category, symbol, side, a quantity no larger, prices
// inside the band, the order id where one is known). Anything else is a
// Mismatch, returned for the caller to journal, and settles nothing.
//
// Found by REST gives a Settlement with result source "reconnaissance".
// Not found gives outcome_unknown with details reconnaissance
// "not_found" (the exchange's lists may lag: it is never "failed"); a
// push that REST answers it does not know (neither open nor in history)
// settles nothing: outcome_unknown with reconnaissance "conflict" and a
// Mismatch (FieldNotFoundByREST). A REST read that fails gives
// outcome_unknown with reconnaissance "failed", whatever the stream
// pushed, and a REST answer that does not match reconnaissance
// "mismatch": in each the attempt stays open for a later reconcile. All
// carry client_order_id and a next step. Nothing is ever resent.
func Settle(ctx context.Context, c *Client, stream OrderWaiter, expect messages.OrderExpectation, wait time.Duration) (*Settlement, []Mismatch, error) {
	cat, symbol, orderLinkID := expect.Category, expect.Symbol, expect.ClientOrderID
	if err := checkCategorySymbol(cat, symbol); err != nil {
		return nil, nil, err
	}
	if orderLinkID == "" || !orderLinkIDRE.MatchString(orderLinkID) {
		return nil, nil, messages.InvalidParams("order_link_id", "must be 1 to 45 characters of A-Z, a-z, 0-9, _ and -")
	}
	var mismatches []Mismatch
	seen := false
	if stream != nil && wait > 0 {
		var rejected []string
		_, seen, rejected = stream.WaitMatchingOrder(ctx, &expect, wait)
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
	case messages.CodeOf(err) == messages.CodeNotFound && seen:
		// REST answered that the venue has no such order, yet a push
		// showed one: the two disagree, and a push is no more than what
		// the stream says. Nothing is settled; the attempt stays open for
		// a later reconcile, and the disagreement is an anomaly.
		mismatches = append(mismatches, Mismatch{Source: messages.AnomalySourceStream, Field: FieldNotFoundByREST})
		recon = "conflict"
	case messages.CodeOf(err) == messages.CodeNotFound:
		recon = "not_found"
	}
	// Not settled: REST showed no matching order, or could not be read
	// ("failed" even when a push showed the order: a push alone settles
	// nothing, D183). The attempt stays open for a later reconcile.
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
