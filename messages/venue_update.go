package messages

import (
	"time"

	"github.com/shopspring/decimal"
)

// VenueUpdateEvent is journaled as venue_update when the private stream
// pushes updates of the user's orders (docs/venue-trading.md). It is compact: one row
// per order with what an audit needs, never the whole push, and one
// record holds what was pushed since the last (each order's latest row),
// at most 128 rows, at most 32 of them of others' orders, the server's own
// orders first. Client order ids and statuses are exchange text.
type VenueUpdateEvent struct {
	// At is the latest push's time.
	At     time.Time        `json:"at"`
	Orders []VenueOrderMark `json:"orders"`
	// Omitted counts the order rows pushed since the last record that
	// this one leaves out for its bound.
	Omitted int `json:"omitted,omitempty"`
}

// StreamDroppedEvent is journaled as stream_dropped when updates of the
// private stream were dropped (more than the server's bounded ingestion
// holds, or lost by the stream itself): the open orders, positions and
// open attempts are then read again by REST. The first drop is journaled
// at once; later ones at most once a minute, summed.
type StreamDroppedEvent struct {
	At time.Time `json:"at"`
	// Since is when the first drop this record counts happened.
	Since time.Time `json:"since"`
	// Reason is the first drop's: "coalesce_overflow" (the server's
	// bound), "buffer_full" or "malformed_push" (the stream's).
	Reason string `json:"reason"`
	// Dropped counts the rows or events dropped; Gaps the resyncs by REST.
	Dropped int `json:"dropped"`
	Gaps    int `json:"gaps"`
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

// Order origins (docs/tools.md "The action path"): placed by this server, or by anything else.
const (
	OriginSystem   = "system"
	OriginExternal = "external"
)
