package messages

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/shopspring/decimal"
)

// Order writes and the private stream (docs/tools.md "The action path", docs/venue-trading.md). The venue builds
// Bybit requests from the typed requests below (decimals, never floats) and
// reports what the private stream pushed as StreamEvents. Like the account
// reads, every value is a copy; exchange free text (client order ids,
// reject reasons, stream ret_msg) is untrusted.

// CreateOrderRequest is one order to place (Bybit POST /v5/order/create).
// A zero decimal means "not sent".
type CreateOrderRequest struct {
	Category Category
	Symbol   string
	// Side is "Buy" or "Sell".
	Side string
	// OrderType is "Limit" or "Market".
	OrderType string
	// Qty is the base quantity (spot market Buy: see MarketUnit).
	Qty decimal.Decimal
	// Price is the limit price; required for Limit, must be zero for Market.
	Price decimal.Decimal
	// TimeInForce is "GTC", "IOC", "FOK" or "PostOnly"; empty means the
	// venue's default (GTC; Market orders behave as IOC).
	TimeInForce string
	// OrderLinkID is the client order id (ours: "gx-<action id>"), 1 to 36
	// characters of [A-Za-z0-9_-]. Required: it is the key of every lookup
	// after an unknown outcome.
	OrderLinkID string
	// ReduceOnly marks a linear order that may only reduce a position.
	ReduceOnly bool
	// TakeProfit and StopLoss attach TP/SL prices (linear); zero means none.
	TakeProfit decimal.Decimal
	StopLoss   decimal.Decimal
	// MarketUnit is "baseCoin" or "quoteCoin" for a spot Market order;
	// empty means the venue's default.
	MarketUnit string
}

// AmendOrderRequest changes an open order (Bybit POST /v5/order/amend).
// Exactly one of OrderID and OrderLinkID names the order; a field that is
// not Valid is left unchanged. TakeProfit/StopLoss Valid and zero removes
// it.
type AmendOrderRequest struct {
	Category    Category
	Symbol      string
	OrderID     string
	OrderLinkID string
	Qty         decimal.NullDecimal
	Price       decimal.NullDecimal
	TakeProfit  decimal.NullDecimal
	StopLoss    decimal.NullDecimal
}

// CancelOrderRequest cancels an open order (Bybit POST /v5/order/cancel).
// Exactly one of OrderID and OrderLinkID names the order.
type CancelOrderRequest struct {
	Category    Category
	Symbol      string
	OrderID     string
	OrderLinkID string
}

// SetLeverageRequest sets a linear symbol's leverage (one-way mode: buy and
// sell leverage are the same; Bybit POST /v5/position/set-leverage).
type SetLeverageRequest struct {
	Category Category
	Symbol   string
	Leverage decimal.Decimal
}

// TradingStopRequest sets or clears a linear position's TP/SL (Full mode,
// one-way; Bybit POST /v5/position/trading-stop). A field that is not
// Valid is left unchanged; Valid and zero clears it. At least one must be
// Valid.
type TradingStopRequest struct {
	Category   Category
	Symbol     string
	TakeProfit decimal.NullDecimal
	StopLoss   decimal.NullDecimal
}

// OrderAck is the venue's acceptance of an order write: only the ids.
// Accepted is not applied (the change shows later on the order).
// OrderLinkID is exchange text (it echoes ours).
type OrderAck struct {
	OrderID     string
	OrderLinkID string
}

// WriteAck is the answer of a position write (set-leverage, trading-stop).
type WriteAck struct {
	// Modified is false when the venue said nothing changed (Bybit 110043
	// "leverage not modified", 34040 "not modified"): the state already
	// was the one asked for.
	Modified bool
}

// ChangeStatus says how far an accepted cancel or amend is known to have
// gone (docs/tools.md "The action path": accepted is not applied).
type ChangeStatus string

// Change statuses. The *_requested ones mean the venue accepted the
// request but the order does not show it yet: check again, never
// "failed".
const (
	ChangeCancelled       ChangeStatus = "cancelled"
	ChangeCancelRequested ChangeStatus = "cancel_requested"
	ChangeAmended         ChangeStatus = "amended"
	ChangeAmendRequested  ChangeStatus = "amend_requested"
	// ChangeFilled: the order filled before the change took effect.
	ChangeFilled ChangeStatus = "filled"
	// ChangeOrderClosed: the amend was accepted but the order was closed
	// (cancelled, rejected) without the new values.
	ChangeOrderClosed ChangeStatus = "order_closed"
)

// FilledUnknown is how an unknown filled quantity is spelled in answers.
const FilledUnknown = "unknown"

// FilledQty is an order's executed quantity, or unknown when the order
// could not be read back yet. It marshals as a decimal string or
// "unknown", never as 0 for "not known".
type FilledQty struct {
	Known bool
	Qty   decimal.Decimal
}

// KnownFilled returns a known filled quantity.
func KnownFilled(q decimal.Decimal) FilledQty { return FilledQty{Known: true, Qty: q} }

// String is the decimal or "unknown".
func (f FilledQty) String() string {
	if !f.Known {
		return FilledUnknown
	}
	return f.Qty.String()
}

// MarshalJSON writes a JSON string: the decimal or "unknown".
func (f FilledQty) MarshalJSON() ([]byte, error) { return json.Marshal(f.String()) }

// UnmarshalJSON reads a decimal string or "unknown".
func (f *FilledQty) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("filled_qty: must be a decimal string or \"unknown\"")
	}
	if s == FilledUnknown {
		*f = FilledQty{}
		return nil
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return errors.New("filled_qty: must be a decimal string or \"unknown\"")
	}
	*f = KnownFilled(d)
	return nil
}

// ChangeResult is what is known about an order after an accepted cancel
// or amend.
type ChangeResult struct {
	Status ChangeStatus
	// Order is the order as read back; nil when it could not be read.
	Order     *Order
	FilledQty FilledQty
}

// ResultSourceReconnaissance marks an answer found by looking the order up
// after an unknown outcome (docs/tools.md "The action path").
const ResultSourceReconnaissance = "reconnaissance"

// StreamEventKind says what a StreamEvent carries.
type StreamEventKind string

// Stream event kinds. Connection events come from the client itself;
// the others carry what the venue pushed.
const (
	// StreamConnected: the first connection is authenticated and
	// subscribed.
	StreamConnected StreamEventKind = "connected"
	// StreamReconnected: a later connection is authenticated and
	// subscribed. Nothing pushed while disconnected is replayed: the
	// caller reconciles (open orders, positions, wallet) by REST.
	StreamReconnected StreamEventKind = "reconnected"
	// StreamDisconnected: the connection ended; Reason says why.
	StreamDisconnected StreamEventKind = "disconnected"
	// StreamGap: updates were lost (the consumer was too slow and the
	// buffer was full, or a push could not be decoded). The caller
	// reconciles by REST as after a reconnect.
	StreamGap         StreamEventKind = "gap"
	StreamOrders      StreamEventKind = "order"
	StreamExecutions  StreamEventKind = "execution"
	StreamPositions   StreamEventKind = "position"
	StreamWalletEvent StreamEventKind = "wallet"
)

// StreamEvent is one event of a private stream client: a connection event
// or one pushed message (which may hold several rows).
type StreamEvent struct {
	Kind StreamEventKind
	// At is the push's creationTime, or the local time of a connection
	// event.
	At time.Time
	// Reason is ours: why a connection ended or a gap happened (e.g.
	// "read_timeout", "auth_refused", "buffer_full", "malformed_push").
	Reason string
	// Dropped is, on a gap, how many events were lost.
	Dropped int
	// UntrustedText is exchange text (an auth or subscribe ret_msg).
	UntrustedText string

	Orders     []Order
	Executions []Execution
	Positions  []Position
	Wallet     *WalletBalance
}
