package risk

import (
	"slices"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
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
func (p *Plan) OrderExpectation(settleLinkID string) *messages.OrderExpectation {
	if settleLinkID == "" {
		return nil
	}
	if p.Create != nil && p.Expect != nil {
		e := *p.Expect
		e.ClientOrderID = settleLinkID
		return &e
	}
	e := &messages.OrderExpectation{Category: p.Category, Symbol: p.Symbol, ClientOrderID: settleLinkID}
	switch {
	case p.Amend != nil:
		e.OrderID = p.Amend.OrderID
	case p.Cancel != nil:
		e.OrderID = p.Cancel.OrderID
	}
	if o := p.Changes; o != nil {
		e.Side, e.MaxQty = o.Side, o.Qty
		if e.OrderID == "" {
			e.OrderID = o.OrderID
		}
		if p.Amend != nil && p.Amend.Qty.Valid && p.Amend.Qty.Decimal.GreaterThan(e.MaxQty) {
			e.MaxQty = p.Amend.Qty.Decimal
		}
	}
	return e
}

// Plan is a decided write: the request to send and what its attempt
// journals. Exactly one request is set. For a create, OrderLinkID is
// filled in by execute.
type Plan struct {
	Tool     string
	Category messages.Category
	Symbol   string
	// SettleLinkID names the order an amend or cancel changes (its client
	// order id), to settle an unknown outcome; a create settles its own.
	SettleLinkID string
	// Expect is what an order found for a create must match (the client
	// order id is filled in by execute); nil for other writes, whose
	// expectation is the order they change (OrderExpectation).
	Expect *messages.OrderExpectation
	// Changes is the order an amend or cancel changes, as the server read
	// it before the change: what the venue shows for the write must be
	// that order (its side, at most its quantity).
	Changes *messages.Order

	Create   *messages.CreateOrderRequest
	Amend    *messages.AmendOrderRequest
	Cancel   *messages.CancelOrderRequest
	Leverage *messages.SetLeverageRequest
	Stop     *messages.TradingStopRequest

	Notional       decimal.Decimal
	RiskIncreasing bool
	IdempotencyKey string
	ArgsSHA256     string
	// ConfirmedBy: the policy setting that wants a human to confirm it
	// ("" when none does); execute refuses it unless it runs an approved
	// confirmation.
	ConfirmedBy string

	// LinkID is the write's client order id when it was named before
	// execute ("": execute names it from the action). A place_order that
	// lowers the leverage first names its order before that step.
	LinkID string
	// TicketID is the client order id the caller is told when its wait
	// ends after this write committed ("": the write's own): the
	// leverage step of a place_order names the order that follows it.
	TicketID string
	// StepOf and AfterStep chain the writes of one call in the journal
	// (OrderAttemptEvent): the tool this write is a first step of, and
	// the client order id of the step this write followed.
	StepOf, AfterStep string
}

// Reservation is what an action in flight holds against the user's limits,
// so that two actions in flight cannot together pass a limit each passes
// alone. The decision for a new action counts the reservations of every
// action in flight.
type Reservation struct {
	// NotionalUSDT counts against daily_notional_cap_usdt.
	NotionalUSDT decimal.Decimal
	// Orders counts against max_orders_per_minute.
	Orders int
}

// Add returns the sum of r and o.
func (r Reservation) Add(o Reservation) Reservation {
	return Reservation{NotionalUSDT: r.NotionalUSDT.Add(o.NotionalUSDT), Orders: r.Orders + o.Orders}
}

// ConfirmedBy is step 5 of the trading path (README, "Trading tools"):
// the policy setting that asks a human to confirm the action, or "" when
// none does. A tool in confirm_actions is always confirmed
// (messages.ConfirmByActions); otherwise an action whose value reaches
// confirm_above_notional_usdt is (messages.ConfirmByNotional).
func ConfirmedBy(p messages.Policy, tool string, notional decimal.Decimal) string {
	switch {
	case slices.Contains(p.ConfirmActions, tool):
		return messages.ConfirmByActions
	case p.ConfirmAboveNotionalUSDT.IsPositive() && notional.GreaterThanOrEqual(p.ConfirmAboveNotionalUSDT):
		return messages.ConfirmByNotional
	}
	return ""
}
