package actors

import (
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// What an order the venue shows for an attempt must match to settle it
// (decisions D95): built from the decision, journaled with a create's
// attempt, checked by the venue actor (stream, read-back) and the
// reconcile.

// createExpectation is what an order found for a create must match: its
// category, symbol and side, at most its quantity, and prices inside the
// venue's band as the decision saw it (a buy at most the band's highest
// buy price, a sell at least its lowest sell price; the instrument's
// price limits where the venue gave no band). The client order id is
// filled in by execute, the order id by the venue's answer.
func createExpectation(req *messages.CreateOrderRequest, in *messages.Instrument, band *messages.PriceLimit) *messages.OrderExpectation {
	e := &messages.OrderExpectation{Category: req.Category, Symbol: req.Symbol, Side: req.Side, MaxQty: req.Qty,
		MinPrice: in.MinPrice, MaxPrice: in.MaxPrice}
	if band != nil && req.Side == "Buy" && band.BuyLimit.IsPositive() {
		e.MaxPrice = band.BuyLimit
	}
	if band != nil && req.Side == "Sell" && band.SellLimit.IsPositive() {
		e.MinPrice = band.SellLimit
	}
	return e
}

// orderExpectation is what an order found for the plan's write must match
// to settle it: a create's own expectation with its client order id; for
// an amend or cancel, the order it changes as read before the change
// (client order id, order id, category, symbol, side, and a quantity and
// filled quantity no larger than its quantity, or an amend's new quantity
// when that is larger). Nil for a write that settles no order.
func (p *orderPlan) orderExpectation(settleLinkID string) *messages.OrderExpectation {
	if settleLinkID == "" {
		return nil
	}
	if p.create != nil && p.expect != nil {
		e := *p.expect
		e.ClientOrderID = settleLinkID
		return &e
	}
	e := &messages.OrderExpectation{Category: p.category, Symbol: p.symbol, ClientOrderID: settleLinkID}
	switch {
	case p.amend != nil:
		e.OrderID = p.amend.OrderID
	case p.cancel != nil:
		e.OrderID = p.cancel.OrderID
	}
	if o := p.changes; o != nil {
		e.Side, e.MaxQty = o.Side, o.Qty
		if e.OrderID == "" {
			e.OrderID = o.OrderID
		}
		if p.amend != nil && p.amend.Qty.Valid && p.amend.Qty.Decimal.GreaterThan(e.MaxQty) {
			e.MaxQty = p.amend.Qty.Decimal
		}
	}
	return e
}
