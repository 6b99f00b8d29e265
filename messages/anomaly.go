package messages

import (
	"time"

	"github.com/shopspring/decimal"
)

// OrderExpectation is what an order the venue shows (a stream push, a
// REST read-back or look-up) must match to settle an attempt: the attempt's
// own client order id, category, symbol and side, a quantity no larger
// than the attempt's, prices inside the band the decision saw, and the
// order id the venue's answer (or the decision's read) gave, where there
// was one. Zero fields do not constrain. It is journaled in the attempt so
// that a reconcile after a restart checks the same.
type OrderExpectation struct {
	Category      Category `json:"category"`
	Symbol        string   `json:"symbol"`
	ClientOrderID string   `json:"client_order_id"`
	// OrderID is the venue's id of the order, when known.
	OrderID string `json:"order_id,omitempty"`
	// Side is "Buy" or "Sell"; empty: not known.
	Side string `json:"side,omitempty"`
	// MaxQty bounds the order's quantity and its filled quantity; zero:
	// no bound.
	MaxQty decimal.Decimal `json:"max_qty"`
	// MinPrice and MaxPrice bound the order's price and average fill
	// price; zero: no bound.
	MinPrice decimal.Decimal `json:"min_price"`
	MaxPrice decimal.Decimal `json:"max_price"`
}

// Mismatch names the first field of o that disagrees with e ("" when o
// matches): see Mismatches.
func (e *OrderExpectation) Mismatch(o *Order) string {
	if fields := e.Mismatches(o); len(fields) > 0 {
		return fields[0]
	}
	return ""
}

// Mismatches names every field of o that disagrees with e (none when o
// matches): besides e's fields, the order must show one of Bybit's order
// statuses and an order id of the venue's shape, as what settles an
// attempt is shown in the answer. The names are the server's own, never
// exchange text.
func (e *OrderExpectation) Mismatches(o *Order) []string {
	if o == nil {
		return []string{"order"}
	}
	var out []string
	check := func(bad bool, field string) {
		if bad {
			out = append(out, field)
		}
	}
	check(o.OrderLinkID != e.ClientOrderID, "client_order_id")
	check(!knownOrderStatus[o.Status], "order_status")
	check(!OrderIDRE.MatchString(o.OrderID), "order_id")
	check(o.Category != e.Category, "category")
	check(o.Symbol != e.Symbol, "symbol")
	check(e.OrderID != "" && o.OrderID != e.OrderID && OrderIDRE.MatchString(o.OrderID), "order_id") // once
	check(e.Side != "" && o.Side != e.Side, "side")
	check(e.MaxQty.IsPositive() && (o.Qty.GreaterThan(e.MaxQty) || o.CumExecQty.GreaterThan(e.MaxQty)), "qty")
	check(!e.priceInside(o.Price) || !e.priceInside(o.AvgPrice), "price")
	return out
}

// KnownOrderStatus reports whether s is one of Bybit's order statuses
// (any other text is the venue's own, shown only as untrusted text).
func KnownOrderStatus(s string) bool { return knownOrderStatus[s] }

// knownOrderStatus is Bybit's order statuses (orderStatus): an order that
// settles an attempt shows one of them, never other text.
var knownOrderStatus = map[string]bool{"Created": true, "New": true, "Rejected": true, "PartiallyFilled": true, "PartiallyFilledCanceled": true,
	"Filled": true, "Cancelled": true, "Untriggered": true, "Triggered": true, "Deactivated": true, "Active": true}

// priceInside reports whether p (zero: not shown) lies inside the band.
func (e *OrderExpectation) priceInside(p decimal.Decimal) bool {
	if p.IsZero() {
		return true
	}
	if p.IsNegative() {
		return false
	}
	return (!e.MinPrice.IsPositive() || !p.LessThan(e.MinPrice)) && (!e.MaxPrice.IsPositive() || !p.GreaterThan(e.MaxPrice))
}

// Venue anomaly kinds.
const (
	// AnomalyOrderMismatch: an order the venue showed for an attempt did
	// not match it (OrderExpectation); it settled nothing.
	AnomalyOrderMismatch = "order_mismatch"
	// AnomalyOrderIDReused: the venue showed an order under an order id
	// the server knows under another client order id; it was not applied
	// (decisions D101).
	AnomalyOrderIDReused = "order_id_reused"
)

// Where an anomaly was seen.
const (
	AnomalySourceStream = "stream"
	AnomalySourceREST   = "rest"
)

// VenueAnomalyEvent is journaled as venue_anomaly when the venue showed
// something that disagrees with what the server knows (a forged or
// garbled order push, a read-back or look-up of another order). It
// changes nothing: the outcome is settled by REST or stays unknown. The
// records are rate limited per user; Count is how many anomalies this
// record stands for (itself and those not journaled since the last one).
// Every field is the server's own (the attempt's ids, a field name), never
// exchange text.
type VenueAnomalyEvent struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Source string    `json:"source"`
	// ClientOrderID is the attempt's id (order_mismatch), or the id of
	// the server's own order the reused order id belongs to
	// (order_id_reused).
	ClientOrderID string `json:"client_order_id,omitempty"`
	// ShownClientOrderID is, for order_id_reused, the client order id
	// the venue showed the order id under, when it is one of the
	// server's own attempts.
	ShownClientOrderID string `json:"shown_client_order_id,omitempty"`
	// OrderID is, for order_id_reused, the reused venue order id (of the
	// venue's shape, else left out).
	OrderID  string   `json:"order_id,omitempty"`
	Category Category `json:"category,omitempty"`
	Symbol   string   `json:"symbol,omitempty"`
	// Field is the first field that disagreed.
	Field string `json:"field"`
	Count int    `json:"count"`
}
