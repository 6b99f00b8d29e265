package messages

import (
	"time"

	"github.com/shopspring/decimal"
)

// VenueUpdateEvent is journaled as venue_update when the private stream
// pushes updates of the user's orders (SPEC §10). It is compact: one row
// per order with what an audit needs, never the whole push. Client order
// ids and statuses are exchange text.
type VenueUpdateEvent struct {
	At     time.Time        `json:"at"`
	Orders []VenueOrderMark `json:"orders"`
}

// VenueOrderMark is one order row of a venue_update.
type VenueOrderMark struct {
	ClientOrderID string          `json:"client_order_id,omitempty"`
	OrderID       string          `json:"order_id"`
	Category      Category        `json:"category"`
	Symbol        string          `json:"symbol"`
	Side          string          `json:"side"`
	Status        string          `json:"status"`
	Qty           decimal.Decimal `json:"qty"`
	CumExecQty    decimal.Decimal `json:"cum_exec_qty"`
	AvgPrice      decimal.Decimal `json:"avg_price"`
	// Origin is "system" for an order this server placed (a "gx-" client
	// order id among the user's own attempts), else "external".
	Origin string `json:"origin"`
}

// Order origins (SPEC §8): placed by this server, or by anything else.
const (
	OriginSystem   = "system"
	OriginExternal = "external"
)
