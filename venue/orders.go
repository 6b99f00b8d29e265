package venue

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptrace"
	"regexp"
	"sync/atomic"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Write endpoint paths (docs/bybit.md "Trade endpoints", "Position endpoints"). Every one is a
// signed POST, sent once and never retried.
const (
	PathOrderCreate     = "/v5/order/create"
	PathOrderAmend      = "/v5/order/amend"
	PathOrderCancel     = "/v5/order/cancel"
	PathSetLeverage     = "/v5/position/set-leverage"
	PathSetTradingStop  = "/v5/position/trading-stop"
	maxCreateLinkIDLen  = 36
	retCodeLevNotChange = 110043
	retCodeNotModified  = 34040
)

// WriteClass classifies the failure of a write (docs/venue-trading.md).
type WriteClass string

// Write classes. Every error a write call returns is exactly one of them.
const (
	// WriteNotSent: nothing reached the venue (bad request, no key, the
	// connection could not be made, the context ended before sending). The
	// caller may release its idempotency key and try again.
	WriteNotSent WriteClass = "not_sent"
	// WriteRefused: the venue answered a definite refusal (rate limit,
	// validation, unknown order, credentials); nothing was changed.
	WriteRefused WriteClass = "refused"
	// WriteUnknown: the request was sent and the venue may or may not have
	// applied it (timeout or dropped connection after sending, HTTP 5xx,
	// a "processing" retCode, a duplicate client order id, an unreadable
	// answer). Never resend: settle it (Settle).
	WriteUnknown WriteClass = "unknown"
)

// Sentinels for errors.Is on a write's error.
var (
	// ErrOutcomeUnknown is wrapped by every WriteUnknown error.
	ErrOutcomeUnknown = errors.New("venue: write outcome unknown")
	// ErrNotSent is wrapped by every WriteNotSent error.
	ErrNotSent = errors.New("venue: write not sent")
)

// ClassifyWrite returns the class of an error returned by a write call
// (CreateOrder, AmendOrder, CancelOrder, SetLeverage, SetTradingStop).
// nil gives "". An error without a class (not from a write) counts as
// WriteUnknown: the safe assumption.
func ClassifyWrite(err error) WriteClass {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotSent):
		return WriteNotSent
	case errors.Is(err, ErrOutcomeUnknown):
		return WriteUnknown
	}
	var e *messages.Error
	if errors.As(err, &e) {
		if e.Code == messages.CodeOutcomeUnknown {
			return WriteUnknown
		}
		if c, ok := e.Details["outcome"].(string); ok && c == string(WriteRefused) {
			return WriteRefused
		}
	}
	return WriteUnknown
}

var sideRE = regexp.MustCompile(`^(Buy|Sell)$`)

// CreateOrder places one order (POST /v5/order/create). The request is
// validated before anything is sent (invalid_params, class not_sent). On
// success the ack holds the ids only: the order may not be visible yet.
// Errors are classified by ClassifyWrite.
func (c *Client) CreateOrder(ctx context.Context, r messages.CreateOrderRequest) (*messages.OrderAck, error) {
	body, err := createBody(r)
	if err != nil {
		return nil, notSent(err)
	}
	return c.orderWrite(ctx, PathOrderCreate, body)
}

// AmendOrder changes an open order (POST /v5/order/amend). The ack means
// accepted, not applied; see ChangeOf.
func (c *Client) AmendOrder(ctx context.Context, r messages.AmendOrderRequest) (*messages.OrderAck, error) {
	body, err := amendBody(r)
	if err != nil {
		return nil, notSent(err)
	}
	return c.orderWrite(ctx, PathOrderAmend, body)
}

// CancelOrder cancels an open order (POST /v5/order/cancel). The ack means
// accepted, not applied; see ChangeOf.
func (c *Client) CancelOrder(ctx context.Context, r messages.CancelOrderRequest) (*messages.OrderAck, error) {
	if err := checkCategorySymbol(r.Category, r.Symbol); err != nil {
		return nil, notSent(err)
	}
	if err := checkOneOrderID(r.OrderID, r.OrderLinkID); err != nil {
		return nil, notSent(err)
	}
	body := jsonObject{{"category", string(r.Category)}, {"symbol", r.Symbol}}
	body = addIDs(body, r.OrderID, r.OrderLinkID)
	return c.orderWrite(ctx, PathOrderCancel, body)
}

// SetLeverage sets the leverage of a linear symbol, buy and sell alike
// (POST /v5/position/set-leverage). 110043 ("leverage not modified") is a
// success with Modified false.
func (c *Client) SetLeverage(ctx context.Context, r messages.SetLeverageRequest) (*messages.WriteAck, error) {
	if r.Category != messages.CategoryLinear {
		return nil, notSent(messages.InvalidParams("category", "leverage applies to linear only"))
	}
	if err := checkCategorySymbol(r.Category, r.Symbol); err != nil {
		return nil, notSent(err)
	}
	if !r.Leverage.IsPositive() || r.Leverage.Exponent() < -2 {
		return nil, notSent(messages.InvalidParams("leverage", "must be a positive number with at most 2 decimals"))
	}
	lev := r.Leverage.String()
	body := jsonObject{{"category", string(r.Category)}, {"symbol", r.Symbol}, {"buyLeverage", lev}, {"sellLeverage", lev}}
	return c.positionWrite(ctx, PathSetLeverage, body, retCodeLevNotChange)
}

// SetTradingStop sets or clears a linear position's TP/SL in Full mode,
// one-way (POST /v5/position/trading-stop). 34040 ("not modified") is a
// success with Modified false.
func (c *Client) SetTradingStop(ctx context.Context, r messages.TradingStopRequest) (*messages.WriteAck, error) {
	if r.Category != messages.CategoryLinear {
		return nil, notSent(messages.InvalidParams("category", "trading stop applies to linear only"))
	}
	if err := checkCategorySymbol(r.Category, r.Symbol); err != nil {
		return nil, notSent(err)
	}
	if !r.TakeProfit.Valid && !r.StopLoss.Valid {
		return nil, notSent(messages.InvalidParams("take_profit", "give a take profit or a stop loss (zero clears it)"))
	}
	body := jsonObject{{"category", string(r.Category)}, {"symbol", r.Symbol}, {"tpslMode", "Full"}, {"positionIdx", 0}}
	var err error
	if body, err = addNullPrice(body, "takeProfit", "take_profit", r.TakeProfit, true); err != nil {
		return nil, notSent(err)
	}
	if body, err = addNullPrice(body, "stopLoss", "stop_loss", r.StopLoss, true); err != nil {
		return nil, notSent(err)
	}
	return c.positionWrite(ctx, PathSetTradingStop, body, retCodeNotModified)
}

// wireAck is the result of create, amend and cancel.
type wireAck struct {
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
}

func (c *Client) orderWrite(ctx context.Context, path string, body jsonObject) (*messages.OrderAck, error) {
	var res wireAck
	resp, err := c.write(ctx, path, body, &res)
	if err != nil {
		return nil, err
	}
	if res.OrderID == "" {
		// Accepted (retCode 0) but without the id: the venue did something.
		f := &failure{rule: ruleByFailure[FailMalformedResult], reason: string(FailMalformedResult),
			cause: errors.New("venue: " + path + ": field orderId: missing")}
		if resp != nil {
			f.httpStatus = resp.HTTPStatus
		}
		return nil, classify(f.toError(true, path, 1, c.now()), true)
	}
	return &messages.OrderAck{OrderID: res.OrderID, OrderLinkID: res.OrderLinkID}, nil
}

func (c *Client) positionWrite(ctx context.Context, path string, body jsonObject, notModified int) (*messages.WriteAck, error) {
	_, err := c.write(ctx, path, body, nil)
	if err == nil {
		return &messages.WriteAck{Modified: true}, nil
	}
	if e := messages.AsError(err); e != nil {
		if rc, ok := e.Details["ret_code"].(int); ok && rc == notModified {
			return &messages.WriteAck{Modified: false}, nil
		}
	}
	return nil, err
}

// write sends one signed POST, once, and classifies a failure. Whether
// anything was sent is observed on the connection: without a connection
// nothing can have reached the venue.
func (c *Client) write(ctx context.Context, path string, body jsonObject, result any) (*Response, error) {
	raw, err := body.marshal()
	if err != nil {
		return nil, notSent(messages.Internal(err))
	}
	var gotConn atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) },
	})
	resp, err := c.Post(tctx, path, raw, result)
	if err == nil {
		return resp, nil
	}
	return resp, classify(messages.AsError(err), gotConn.Load())
}

// classify marks e with its write class. sent says whether a connection
// was obtained (the request may have left).
func classify(e *messages.Error, sent bool) *messages.Error {
	reason, _ := e.Details["reason"].(string)
	_, answered := e.Details["http_status"]
	switch {
	case e.Code == messages.CodeInternalError && e.Details == nil,
		!sent && !answered && reason != string(FailMalformedResult):
		// Nothing was sent: a bug before sending, no key, no connection.
		return notSent(e)
	case e.Code == messages.CodeOutcomeUnknown:
		setOutcome(e, WriteUnknown)
		e.Err = errors.Join(ErrOutcomeUnknown, e.Err)
		return e
	default:
		setOutcome(e, WriteRefused)
		return e
	}
}

func setOutcome(e *messages.Error, c WriteClass) {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details["outcome"] = string(c)
}

// notSent marks err (an invalid_params, internal or venue error) as not
// sent. A transport failure before any connection becomes
// exchange_unavailable: nothing was sent, so it is not outcome_unknown.
func notSent(err error) *messages.Error {
	e := messages.AsError(err)
	if e.Code == messages.CodeOutcomeUnknown {
		e.Code = messages.CodeExchangeUnavailable
		e.Message = "the exchange could not be reached; nothing was sent"
		e.NextStep = "retry later"
	}
	setOutcome(e, WriteNotSent)
	e.Err = errors.Join(ErrNotSent, e.Err)
	return e
}

// createBody validates r and builds the create body.
func createBody(r messages.CreateOrderRequest) (jsonObject, error) {
	if err := checkCategorySymbol(r.Category, r.Symbol); err != nil {
		return nil, err
	}
	if !sideRE.MatchString(r.Side) {
		return nil, messages.InvalidParams("side", "must be Buy or Sell")
	}
	switch r.OrderType {
	case "Limit":
		if !r.Price.IsPositive() {
			return nil, messages.InvalidParams("price", "a Limit order needs a positive price")
		}
	case "Market":
		if !r.Price.IsZero() {
			return nil, messages.InvalidParams("price", "a Market order takes no price")
		}
	default:
		return nil, messages.InvalidParams("order_type", "must be Limit or Market")
	}
	if !r.Qty.IsPositive() {
		return nil, messages.InvalidParams("qty", "must be positive")
	}
	switch r.TimeInForce {
	case "", "GTC", "IOC", "FOK", "PostOnly":
	default:
		return nil, messages.InvalidParams("time_in_force", "must be GTC, IOC, FOK or PostOnly")
	}
	if r.OrderLinkID == "" || len(r.OrderLinkID) > maxCreateLinkIDLen || !orderLinkIDRE.MatchString(r.OrderLinkID) {
		return nil, messages.InvalidParams("order_link_id", "must be 1 to 36 characters of A-Z, a-z, 0-9, _ and -")
	}
	if r.ReduceOnly && r.Category != messages.CategoryLinear {
		return nil, messages.InvalidParams("reduce_only", "applies to linear only")
	}
	if (r.TakeProfit.IsPositive() || r.StopLoss.IsPositive()) && r.Category != messages.CategoryLinear {
		return nil, messages.InvalidParams("take_profit", "TP/SL on an order applies to linear only")
	}
	if r.TakeProfit.IsNegative() || r.StopLoss.IsNegative() {
		return nil, messages.InvalidParams("take_profit", "TP/SL prices must not be negative")
	}
	switch r.MarketUnit {
	case "":
	case "baseCoin", "quoteCoin":
		if r.Category != messages.CategorySpot || r.OrderType != "Market" {
			return nil, messages.InvalidParams("market_unit", "applies to spot Market orders only")
		}
	default:
		return nil, messages.InvalidParams("market_unit", "must be baseCoin or quoteCoin")
	}
	b := jsonObject{
		{"category", string(r.Category)}, {"symbol", r.Symbol}, {"side", r.Side},
		{"orderType", r.OrderType}, {"qty", r.Qty.String()},
	}
	if r.OrderType == "Limit" {
		b = append(b, jsonField{"price", r.Price.String()})
	}
	if r.TimeInForce != "" {
		b = append(b, jsonField{"timeInForce", r.TimeInForce})
	}
	b = append(b, jsonField{"orderLinkId", r.OrderLinkID})
	if r.ReduceOnly {
		b = append(b, jsonField{"reduceOnly", true})
	}
	if r.MarketUnit != "" {
		b = append(b, jsonField{"marketUnit", r.MarketUnit})
	}
	if r.TakeProfit.IsPositive() {
		b = append(b, jsonField{"takeProfit", r.TakeProfit.String()})
	}
	if r.StopLoss.IsPositive() {
		b = append(b, jsonField{"stopLoss", r.StopLoss.String()})
	}
	if r.Category == messages.CategoryLinear {
		b = append(b, jsonField{"positionIdx", 0})
	}
	return b, nil
}

// amendBody validates r and builds the amend body.
func amendBody(r messages.AmendOrderRequest) (jsonObject, error) {
	if err := checkCategorySymbol(r.Category, r.Symbol); err != nil {
		return nil, err
	}
	if err := checkOneOrderID(r.OrderID, r.OrderLinkID); err != nil {
		return nil, err
	}
	if !r.Qty.Valid && !r.Price.Valid && !r.TakeProfit.Valid && !r.StopLoss.Valid {
		return nil, messages.InvalidParams("qty", "an amend must change qty, price, take profit or stop loss")
	}
	b := jsonObject{{"category", string(r.Category)}, {"symbol", r.Symbol}}
	b = addIDs(b, r.OrderID, r.OrderLinkID)
	var err error
	if b, err = addNullPrice(b, "qty", "qty", r.Qty, false); err != nil {
		return nil, err
	}
	if b, err = addNullPrice(b, "price", "price", r.Price, false); err != nil {
		return nil, err
	}
	if b, err = addNullPrice(b, "takeProfit", "take_profit", r.TakeProfit, true); err != nil {
		return nil, err
	}
	if b, err = addNullPrice(b, "stopLoss", "stop_loss", r.StopLoss, true); err != nil {
		return nil, err
	}
	return b, nil
}

// addNullPrice appends a Valid value; zeroClears allows zero ("0" clears).
func addNullPrice(b jsonObject, key, field string, v decimal.NullDecimal, zeroClears bool) (jsonObject, error) {
	if !v.Valid {
		return b, nil
	}
	if v.Decimal.IsNegative() || (!zeroClears && v.Decimal.IsZero()) {
		if zeroClears {
			return nil, messages.InvalidParams(field, "must not be negative (zero clears it)")
		}
		return nil, messages.InvalidParams(field, "must be positive")
	}
	return append(b, jsonField{key, v.Decimal.String()}), nil
}

func checkCategorySymbol(cat messages.Category, symbol string) error {
	if !cat.Valid() {
		return messages.InvalidParams("category", "must be spot or linear")
	}
	if !symbolRE.MatchString(symbol) {
		return messages.InvalidParams("symbol", "must be 2 to 30 characters of A-Z and 0-9")
	}
	return nil
}

// checkOneOrderID requires exactly one of the two ids, well formed.
func checkOneOrderID(orderID, orderLinkID string) error {
	if (orderID == "") == (orderLinkID == "") {
		return messages.InvalidParams("order_id", "give exactly one of order_id and order_link_id")
	}
	return checkOrderIDs(orderID, orderLinkID)
}

func addIDs(b jsonObject, orderID, orderLinkID string) jsonObject {
	if orderID != "" {
		return append(b, jsonField{"orderId", orderID})
	}
	return append(b, jsonField{"orderLinkId", orderLinkID})
}

// OrderByLinkID reads one order back by its client order id: open orders
// first (Bybit also returns a recently closed order there when asked by
// id), then order history. It returns the order and the read that found
// it ("open_orders" or "order_history"); neither finding it is not_found.
func (c *Client) OrderByLinkID(ctx context.Context, cat messages.Category, symbol, orderLinkID string) (*messages.Order, string, error) {
	if err := checkCategorySymbol(cat, symbol); err != nil {
		return nil, "", err
	}
	if orderLinkID == "" {
		return nil, "", messages.InvalidParams("order_link_id", "is required")
	}
	open, err := c.OpenOrders(ctx, OrderQuery{Category: cat, Symbol: symbol, OrderLinkID: orderLinkID})
	if err != nil {
		return nil, "", err
	}
	for i := range open.Items {
		if open.Items[i].OrderLinkID == orderLinkID {
			return &open.Items[i], "open_orders", nil
		}
	}
	hist, err := c.OrderHistory(ctx, HistoryQuery{Category: cat, Symbol: symbol, OrderLinkID: orderLinkID})
	if err != nil {
		return nil, "", err
	}
	for i := range hist.Items {
		if hist.Items[i].OrderLinkID == orderLinkID {
			return &hist.Items[i], "order_history", nil
		}
	}
	return nil, "", &messages.Error{
		Code:     messages.CodeNotFound,
		Message:  "the exchange shows no order with this client order id (open orders, then order history)",
		NextStep: "the exchange's lists may lag; check again with get_open_orders / get_order_history",
		Details:  map[string]any{"endpoint": PathOrderHistory},
	}
}

// jsonField is one member of a jsonObject.
type jsonField struct {
	key   string
	value any
}

// jsonObject is a JSON object that keeps insertion order, so the bytes
// that are signed and sent are stable and readable in tests.
type jsonObject []jsonField

func (o jsonObject) marshal() ([]byte, error) {
	buf := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		buf = append(buf, k...)
		buf = append(buf, ':')
		buf = append(buf, v...)
	}
	return append(buf, '}'), nil
}
