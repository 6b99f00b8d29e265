package venue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Account endpoint paths (docs/bybit.md "Trade endpoints", "Position endpoints", "Account and key endpoints"). Every one
// is a signed GET.
const (
	PathQueryAPI      = "/v5/user/query-api"
	PathWalletBalance = "/v5/account/wallet-balance"
	PathPositionList  = "/v5/position/list"
	PathOrderRealtime = "/v5/order/realtime"
	PathOrderHistory  = "/v5/order/history"
	PathExecutionList = "/v5/execution/list"
)

// Page-size caps of the account reads (Bybit's own bounds). A zero Limit in
// a query means the venue's default (positions 20, open orders 20, order
// history 20, executions 50).
const (
	MaxPositionsLimit    = 200
	MaxOpenOrdersLimit   = 50
	MaxOrderHistoryLimit = 50
	MaxExecutionsLimit   = 100
)

// MaxHistoryWindow is the longest [Start, End] span order history and
// executions accept (docs/bybit.md "Trade endpoints"): Bybit refuses longer windows.
const MaxHistoryWindow = messages.MaxHistoryWindow

// maxCursorLen bounds a caller-supplied cursor; Bybit's are ~150 bytes.
const maxCursorLen = 1024

// DefaultSettleCoin is the settle coin used for linear position and open
// order reads when the query names neither a symbol nor a settle coin
// (Bybit requires one of them on linear).
const DefaultSettleCoin = "USDT"

var (
	coinRE        = regexp.MustCompile(`^[A-Z0-9]{2,10}$`)
	orderIDRE     = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
	orderLinkIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,45}$`)
)

// PositionQuery selects positions (GET /v5/position/list).
type PositionQuery struct {
	// Category must be linear; zero means linear.
	Category messages.Category
	// Symbol, when set, returns that symbol's row even when flat.
	Symbol string
	// SettleCoin, when set without Symbol, returns every open position
	// settled in it. Neither set means DefaultSettleCoin.
	SettleCoin string
	// Limit is the page size, 1..200; zero means the venue's default (20).
	Limit int
	// Cursor is the NextCursor of the previous page, passed unchanged.
	Cursor string
}

// OrderQuery selects open orders (GET /v5/order/realtime).
type OrderQuery struct {
	// Category is spot or linear (required).
	Category messages.Category
	// Symbol filters by symbol.
	Symbol string
	// SettleCoin filters linear orders by settle coin; linear with neither
	// Symbol nor SettleCoin uses DefaultSettleCoin. Spot refuses it.
	SettleCoin string
	// OrderID or OrderLinkID look one order up; the venue then also returns
	// a recently closed order (docs/bybit.md "Trade endpoints"; docs/venue-trading.md).
	OrderID     string
	OrderLinkID string
	// Limit is the page size, 1..50; zero means the venue's default (20).
	Limit int
	// Cursor is the NextCursor of the previous page, passed unchanged.
	Cursor string
}

// HistoryQuery selects closed orders (GET /v5/order/history) or executions
// (GET /v5/execution/list) in a time window. Zero Start and End mean the
// last 7 days; only Start means [Start, Start+7d]; only End means
// [End-7d, End]; both must span at most MaxHistoryWindow.
type HistoryQuery struct {
	// Category is spot or linear (required).
	Category messages.Category
	// Symbol filters by symbol.
	Symbol string
	// Start and End bound the window (millisecond precision).
	Start, End time.Time
	// OrderID or OrderLinkID restrict the read to one order.
	OrderID     string
	OrderLinkID string
	// Limit is the page size: order history 1..50 (default 20), executions
	// 1..100 (default 50); zero means the default.
	Limit int
	// Cursor is the NextCursor of the previous page, passed unchanged.
	Cursor string
}

// QueryAPIKey returns what the exchange says about the client's key (GET
// /v5/user/query-api): read-only flag, permissions, bound IPs, expiry and
// the account id. Any key may call it.
func (c *Client) QueryAPIKey(ctx context.Context) (*messages.APIKeyInfo, error) {
	var res wireAPIKey
	resp, err := c.Get(ctx, PathQueryAPI, nil, true, &res)
	if err != nil {
		return nil, err
	}
	info, err := parseAPIKey(&res)
	if err != nil {
		return nil, c.malformed(PathQueryAPI, resp, err)
	}
	return info, nil
}

// WalletBalance returns the unified account's balances (GET
// /v5/account/wallet-balance?accountType=UNIFIED): account totals in USD
// and the non-zero coins.
func (c *Client) WalletBalance(ctx context.Context) (*messages.WalletBalance, error) {
	var res struct {
		List []wireWalletAccount `json:"list"`
	}
	resp, err := c.Get(ctx, PathWalletBalance, Query{{"accountType", "UNIFIED"}}, true, &res)
	if err != nil {
		return nil, err
	}
	if len(res.List) == 0 {
		return nil, c.malformed(PathWalletBalance, resp, errors.New("no account in the answer"))
	}
	w := &res.List[0]
	for i := range res.List {
		if res.List[i].AccountType == "UNIFIED" {
			w = &res.List[i]
			break
		}
	}
	wb, err := parseWallet(w)
	if err != nil {
		return nil, c.malformed(PathWalletBalance, resp, err)
	}
	return wb, nil
}

// Positions returns one page of linear positions (GET /v5/position/list).
// A row in hedge mode (positionIdx 1 or 2) fails the whole read with
// unsupported_position_mode: this server supports one-way mode only.
func (c *Client) Positions(ctx context.Context, q PositionQuery) (messages.Page[messages.Position], error) {
	var none messages.Page[messages.Position]
	cat := q.Category
	if cat == "" {
		cat = messages.CategoryLinear
	}
	if cat != messages.CategoryLinear {
		return none, messages.InvalidParams("category", "positions exist only for linear")
	}
	if err := checkListArgs(q.Symbol, q.SettleCoin, q.Limit, MaxPositionsLimit, q.Cursor); err != nil {
		return none, err
	}
	query := Query{{"category", string(cat)}}
	switch {
	case q.Symbol != "":
		query = query.Add("symbol", q.Symbol)
	case q.SettleCoin != "":
		query = query.Add("settleCoin", q.SettleCoin)
	default:
		query = query.Add("settleCoin", DefaultSettleCoin)
	}
	query = addPaging(query, q.Limit, q.Cursor)
	page, err := getPage(ctx, c, PathPositionList, query, func(w *wirePosition) (messages.Position, error) {
		return parsePosition(cat, w)
	})
	if err != nil {
		return none, err
	}
	for _, p := range page.Items {
		if p.PositionIdx == 1 || p.PositionIdx == 2 {
			return none, hedgeModeError(p.PositionIdx)
		}
	}
	return page, nil
}

// hedgeModeError is the refusal for an account in hedge (two-way) mode.
func hedgeModeError(idx int) *messages.Error {
	return &messages.Error{
		Code:    messages.CodeUnsupportedPositionMode,
		Message: "the exchange account is in hedge mode (two-way positions); this server supports one-way mode only",
		NextStep: "a human must switch the account's USDT perpetuals to one-way mode on Bybit " +
			"(position mode setting, or POST /v5/position/switch-mode with mode 0; Bybit allows it only " +
			"with no open positions or orders in the symbol), then call again",
		Details: map[string]any{"endpoint": PathPositionList, "position_idx": idx},
	}
}

// OpenOrders returns one page of open orders, newest first (GET
// /v5/order/realtime).
func (c *Client) OpenOrders(ctx context.Context, q OrderQuery) (messages.Page[messages.Order], error) {
	var none messages.Page[messages.Order]
	if !q.Category.Valid() {
		return none, messages.InvalidParams("category", "must be spot or linear")
	}
	if q.Category == messages.CategorySpot && q.SettleCoin != "" {
		return none, messages.InvalidParams("settle_coin", "is not supported for spot")
	}
	if err := checkListArgs(q.Symbol, q.SettleCoin, q.Limit, MaxOpenOrdersLimit, q.Cursor); err != nil {
		return none, err
	}
	if err := checkOrderIDs(q.OrderID, q.OrderLinkID); err != nil {
		return none, err
	}
	query := Query{{"category", string(q.Category)}}
	if q.Symbol != "" {
		query = query.Add("symbol", q.Symbol)
	} else if q.SettleCoin != "" {
		query = query.Add("settleCoin", q.SettleCoin)
	} else if q.Category == messages.CategoryLinear {
		query = query.Add("settleCoin", DefaultSettleCoin)
	}
	query = addOrderIDs(query, q.OrderID, q.OrderLinkID)
	query = addPaging(query, q.Limit, q.Cursor)
	return getPage(ctx, c, PathOrderRealtime, query, func(w *wireOrder) (messages.Order, error) {
		return parseOrder(q.Category, w)
	})
}

// OrderHistory returns one page of closed orders in the window, newest
// first (GET /v5/order/history). The window is checked before anything is
// sent. Cancelled and rejected orders without fills are visible for 24
// hours only (a venue rule).
func (c *Client) OrderHistory(ctx context.Context, q HistoryQuery) (messages.Page[messages.Order], error) {
	var none messages.Page[messages.Order]
	query, err := historyQuery(q, MaxOrderHistoryLimit)
	if err != nil {
		return none, err
	}
	return getPage(ctx, c, PathOrderHistory, query, func(w *wireOrder) (messages.Order, error) {
		return parseOrder(q.Category, w)
	})
}

// Executions returns one page of executions (fills, and on linear funding
// rows) in the window, newest first (GET /v5/execution/list). The window is
// checked before anything is sent.
func (c *Client) Executions(ctx context.Context, q HistoryQuery) (messages.Page[messages.Execution], error) {
	var none messages.Page[messages.Execution]
	query, err := historyQuery(q, MaxExecutionsLimit)
	if err != nil {
		return none, err
	}
	return getPage(ctx, c, PathExecutionList, query, func(w *wireExecution) (messages.Execution, error) {
		return parseExecution(q.Category, w)
	})
}

// historyQuery validates q and builds the query of a windowed read.
func historyQuery(q HistoryQuery, maxLimit int) (Query, error) {
	if !q.Category.Valid() {
		return nil, messages.InvalidParams("category", "must be spot or linear")
	}
	if err := checkListArgs(q.Symbol, "", q.Limit, maxLimit, q.Cursor); err != nil {
		return nil, err
	}
	if err := checkOrderIDs(q.OrderID, q.OrderLinkID); err != nil {
		return nil, err
	}
	if err := CheckHistoryWindow(q.Start, q.End); err != nil {
		return nil, err
	}
	query := Query{{"category", string(q.Category)}}
	if q.Symbol != "" {
		query = query.Add("symbol", q.Symbol)
	}
	query = addOrderIDs(query, q.OrderID, q.OrderLinkID)
	if !q.Start.IsZero() {
		query = query.Add("startTime", strconv.FormatInt(q.Start.UnixMilli(), 10))
	}
	if !q.End.IsZero() {
		query = query.Add("endTime", strconv.FormatInt(q.End.UnixMilli(), 10))
	}
	return addPaging(query, q.Limit, q.Cursor), nil
}

// CheckHistoryWindow applies Bybit's window rules for order history and
// executions (docs/bybit.md "Trade endpoints") before a request is sent: a zero time means
// "not given"; a given time must not be before 1970; when both are given,
// end must not be before start and the span must be at most
// MaxHistoryWindow. Failures are invalid_params naming start_time or
// end_time.
func CheckHistoryWindow(start, end time.Time) error {
	const valid = "a valid window is start_time ≤ end_time ≤ start_time + 7 days " +
		"(or only one of them: the other is taken 7 days away; or neither: the last 7 days)"
	if !start.IsZero() && start.UnixMilli() < 0 {
		return messages.InvalidParams("start_time", "must not be before 1970-01-01; "+valid)
	}
	if !end.IsZero() && end.UnixMilli() < 0 {
		return messages.InvalidParams("end_time", "must not be before 1970-01-01; "+valid)
	}
	if start.IsZero() || end.IsZero() {
		return nil
	}
	if end.UnixMilli() < start.UnixMilli() {
		return messages.InvalidParams("end_time", "must not be before start_time; "+valid)
	}
	if end.UnixMilli()-start.UnixMilli() > MaxHistoryWindow.Milliseconds() {
		return messages.InvalidParams("end_time", "the window may span at most 7 days; "+valid)
	}
	return nil
}

// checkListArgs validates the optional symbol and settle coin, the limit
// against max, and the cursor. Values are never echoed back.
func checkListArgs(symbol, settleCoin string, limit, max int, cursor string) error {
	if symbol != "" && !symbolRE.MatchString(symbol) {
		return messages.InvalidParams("symbol", "must be 2 to 30 characters of A-Z and 0-9")
	}
	if settleCoin != "" && !coinRE.MatchString(settleCoin) {
		return messages.InvalidParams("settle_coin", "must be 2 to 10 characters of A-Z and 0-9")
	}
	if limit < 0 || limit > max {
		return messages.InvalidParams("limit", fmt.Sprintf("must be between 1 and %d", max))
	}
	if len(cursor) > maxCursorLen || !utf8.ValidString(cursor) || strings.ContainsFunc(cursor, isControl) {
		return messages.InvalidParams("cursor", "must be the next_cursor of a previous page, unchanged")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkOrderIDs validates the optional order id and client order id.
func checkOrderIDs(orderID, orderLinkID string) error {
	if orderID != "" && !orderIDRE.MatchString(orderID) {
		return messages.InvalidParams("order_id", "must be 1 to 64 characters of A-Z, a-z, 0-9 and -")
	}
	if orderLinkID != "" && !orderLinkIDRE.MatchString(orderLinkID) {
		return messages.InvalidParams("order_link_id", "must be 1 to 45 characters of A-Z, a-z, 0-9, _ and -")
	}
	return nil
}

func addOrderIDs(q Query, orderID, orderLinkID string) Query {
	if orderID != "" {
		q = q.Add("orderId", orderID)
	}
	if orderLinkID != "" {
		q = q.Add("orderLinkId", orderLinkID)
	}
	return q
}

// addPaging appends limit (when set) and cursor (when set, as given: Encode
// escapes it).
func addPaging(q Query, limit int, cursor string) Query {
	if limit > 0 {
		q = q.Add("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q = q.Add("cursor", cursor)
	}
	return q
}

// wireList is the result of every paged account read.
type wireList[W any] struct {
	Category       string `json:"category"`
	NextPageCursor string `json:"nextPageCursor"`
	List           []W    `json:"list"`
}

// getPage sends a signed GET and parses each list item.
func getPage[W, T any](ctx context.Context, c *Client, path string, q Query, parse func(*W) (T, error)) (messages.Page[T], error) {
	var res wireList[W]
	resp, err := c.Get(ctx, path, q, true, &res)
	if err != nil {
		return messages.Page[T]{}, err
	}
	page := messages.Page[T]{Items: make([]T, 0, len(res.List)), NextCursor: res.NextPageCursor}
	for i := range res.List {
		v, err := parse(&res.List[i])
		if err != nil {
			return messages.Page[T]{}, c.malformed(path, resp, fmt.Errorf("item %d: %w", i, err))
		}
		page.Items = append(page.Items, v)
	}
	return page, nil
}

// flexBool is a JSON boolean that recorded samples may send as a string
// ("true", "1"); null and absence are false.
type flexBool bool

// UnmarshalJSON accepts true/false, "true"/"false", "1"/"0", 1/0 and null.
func (b *flexBool) UnmarshalJSON(raw []byte) error {
	s := string(bytes.Trim(bytes.TrimSpace(raw), `"`))
	switch s {
	case "true", "1":
		*b = true
	case "false", "0", "", "null":
		*b = false
	default:
		return errors.New("venue: expected a boolean")
	}
	return nil
}

type wireAPIKey struct {
	ID          flexNum             `json:"id"`
	ReadOnly    flexNum             `json:"readOnly"`
	Permissions map[string][]string `json:"permissions"`
	IPs         []string            `json:"ips"`
	ExpiredAt   string              `json:"expiredAt"`
	CreatedAt   string              `json:"createdAt"`
	UserID      flexNum             `json:"userID"`
}

func parseAPIKey(w *wireAPIKey) (*messages.APIKeyInfo, error) {
	var d fieldDecoder
	info := &messages.APIKeyInfo{
		KeyID:       w.ID.text,
		ReadOnly:    d.int("readOnly", w.ReadOnly) != 0,
		Permissions: make(map[string][]string, len(w.Permissions)),
		IPs:         append([]string{}, w.IPs...),
		UID:         w.UserID.text,
	}
	for g, perms := range w.Permissions {
		info.Permissions[g] = append([]string{}, perms...)
	}
	if !w.ReadOnly.set {
		return nil, errors.New("field readOnly: missing")
	}
	var err error
	if info.ExpiresAt, err = rfc3339("expiredAt", w.ExpiredAt); err != nil {
		return nil, err
	}
	if info.CreatedAt, err = rfc3339("createdAt", w.CreatedAt); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	return info, nil
}

// rfc3339 parses an RFC 3339 time; "" and times at or before the Unix epoch
// (Bybit's "1970-01-01T00:00:00Z" means "never") are the zero time.
func rfc3339(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("field %s: not an RFC 3339 time", name)
	}
	if t.Unix() <= 0 {
		return time.Time{}, nil
	}
	return t.UTC(), nil
}

type wireWalletAccount struct {
	AccountType            string     `json:"accountType"`
	TotalEquity            flexNum    `json:"totalEquity"`
	TotalWalletBalance     flexNum    `json:"totalWalletBalance"`
	TotalMarginBalance     flexNum    `json:"totalMarginBalance"`
	TotalAvailableBalance  flexNum    `json:"totalAvailableBalance"`
	TotalPerpUPL           flexNum    `json:"totalPerpUPL"`
	TotalInitialMargin     flexNum    `json:"totalInitialMargin"`
	TotalMaintenanceMargin flexNum    `json:"totalMaintenanceMargin"`
	Coin                   []wireCoin `json:"coin"`
}

type wireCoin struct {
	Coin            string  `json:"coin"`
	Equity          flexNum `json:"equity"`
	UsdValue        flexNum `json:"usdValue"`
	WalletBalance   flexNum `json:"walletBalance"`
	Locked          flexNum `json:"locked"`
	BorrowAmount    flexNum `json:"borrowAmount"`
	TotalOrderIM    flexNum `json:"totalOrderIM"`
	TotalPositionIM flexNum `json:"totalPositionIM"`
	TotalPositionMM flexNum `json:"totalPositionMM"`
	UnrealisedPnl   flexNum `json:"unrealisedPnl"`
	CumRealisedPnl  flexNum `json:"cumRealisedPnl"`
}

func parseWallet(w *wireWalletAccount) (*messages.WalletBalance, error) {
	var d fieldDecoder
	wb := &messages.WalletBalance{
		AccountType:            w.AccountType,
		TotalEquity:            d.decNum("totalEquity", w.TotalEquity),
		TotalWalletBalance:     d.decNum("totalWalletBalance", w.TotalWalletBalance),
		TotalAvailableBalance:  d.decNum("totalAvailableBalance", w.TotalAvailableBalance),
		TotalMarginBalance:     d.decNum("totalMarginBalance", w.TotalMarginBalance),
		TotalPerpUPL:           d.decNum("totalPerpUPL", w.TotalPerpUPL),
		TotalInitialMargin:     d.decNum("totalInitialMargin", w.TotalInitialMargin),
		TotalMaintenanceMargin: d.decNum("totalMaintenanceMargin", w.TotalMaintenanceMargin),
		Coins:                  make([]messages.CoinBalance, 0, len(w.Coin)),
	}
	for i := range w.Coin {
		wc := &w.Coin[i]
		wb.Coins = append(wb.Coins, messages.CoinBalance{
			Coin:            d.text("coin", wc.Coin, maxShortText),
			Equity:          d.decNum("equity", wc.Equity),
			WalletBalance:   d.decNum("walletBalance", wc.WalletBalance),
			Locked:          d.decNum("locked", wc.Locked),
			UnrealisedPnl:   d.decNum("unrealisedPnl", wc.UnrealisedPnl),
			CumRealisedPnl:  d.decNum("cumRealisedPnl", wc.CumRealisedPnl),
			UsdValue:        d.decNum("usdValue", wc.UsdValue),
			TotalOrderIM:    d.decNum("totalOrderIM", wc.TotalOrderIM),
			TotalPositionIM: d.decNum("totalPositionIM", wc.TotalPositionIM),
			TotalPositionMM: d.decNum("totalPositionMM", wc.TotalPositionMM),
			BorrowAmount:    d.decNum("borrowAmount", wc.BorrowAmount),
		})
	}
	if d.err != nil {
		return nil, d.err
	}
	return wb, nil
}

type wirePosition struct {
	PositionIdx    flexNum `json:"positionIdx"`
	Symbol         string  `json:"symbol"`
	Side           string  `json:"side"`
	Size           flexNum `json:"size"`
	AvgPrice       flexNum `json:"avgPrice"`
	PositionValue  flexNum `json:"positionValue"`
	MarkPrice      flexNum `json:"markPrice"`
	LiqPrice       flexNum `json:"liqPrice"`
	Leverage       flexNum `json:"leverage"`
	UnrealisedPnl  flexNum `json:"unrealisedPnl"`
	CumRealisedPnl flexNum `json:"cumRealisedPnl"`
	TakeProfit     flexNum `json:"takeProfit"`
	StopLoss       flexNum `json:"stopLoss"`
	CreatedTime    flexNum `json:"createdTime"`
	UpdatedTime    flexNum `json:"updatedTime"`
}

func parsePosition(cat messages.Category, w *wirePosition) (messages.Position, error) {
	var d fieldDecoder
	p := messages.Position{
		Category:       cat,
		Symbol:         d.text("symbol", w.Symbol, maxShortText),
		Side:           d.text("side", w.Side, maxShortText),
		Size:           d.decNum("size", w.Size),
		AvgPrice:       d.decNum("avgPrice", w.AvgPrice),
		MarkPrice:      d.decNum("markPrice", w.MarkPrice),
		LiqPrice:       d.decNum("liqPrice", w.LiqPrice),
		UnrealisedPnl:  d.decNum("unrealisedPnl", w.UnrealisedPnl),
		CumRealisedPnl: d.decNum("cumRealisedPnl", w.CumRealisedPnl),
		Leverage:       d.decNum("leverage", w.Leverage),
		TakeProfit:     d.decNum("takeProfit", w.TakeProfit),
		StopLoss:       d.decNum("stopLoss", w.StopLoss),
		PositionValue:  d.decNum("positionValue", w.PositionValue),
		PositionIdx:    int(d.int("positionIdx", w.PositionIdx)),
		CreatedTime:    d.ms("createdTime", w.CreatedTime),
		UpdatedTime:    d.ms("updatedTime", w.UpdatedTime),
	}
	if d.err != nil {
		return messages.Position{}, d.err
	}
	if p.Size.IsNegative() {
		return messages.Position{}, errors.New("field size: negative")
	}
	return p, nil
}

type wireOrder struct {
	Symbol       string   `json:"symbol"`
	OrderID      string   `json:"orderId"`
	OrderLinkID  string   `json:"orderLinkId"`
	Side         string   `json:"side"`
	OrderType    string   `json:"orderType"`
	TimeInForce  string   `json:"timeInForce"`
	Price        flexNum  `json:"price"`
	Qty          flexNum  `json:"qty"`
	AvgPrice     flexNum  `json:"avgPrice"`
	CumExecQty   flexNum  `json:"cumExecQty"`
	CumExecValue flexNum  `json:"cumExecValue"`
	LeavesQty    flexNum  `json:"leavesQty"`
	OrderStatus  string   `json:"orderStatus"`
	RejectReason string   `json:"rejectReason"`
	ReduceOnly   flexBool `json:"reduceOnly"`
	// CloseOnTrigger, StopOrderType and TriggerPrice say whether the
	// order is conditional or protects a position (D73).
	CloseOnTrigger flexBool `json:"closeOnTrigger"`
	StopOrderType  string   `json:"stopOrderType"`
	TriggerPrice   flexNum  `json:"triggerPrice"`
	CreatedTime    flexNum  `json:"createdTime"`
	UpdatedTime    flexNum  `json:"updatedTime"`
}

func parseOrder(cat messages.Category, w *wireOrder) (messages.Order, error) {
	var d fieldDecoder
	o := messages.Order{
		Category:     cat,
		Symbol:       d.text("symbol", w.Symbol, maxShortText),
		OrderID:      d.text("orderId", w.OrderID, maxIDText),
		OrderLinkID:  d.text("orderLinkId", w.OrderLinkID, maxShortText),
		Side:         d.text("side", w.Side, maxShortText),
		OrderType:    d.text("orderType", w.OrderType, maxShortText),
		TimeInForce:  d.text("timeInForce", w.TimeInForce, maxShortText),
		Price:        d.decNum("price", w.Price),
		Qty:          d.decNum("qty", w.Qty),
		AvgPrice:     d.decNum("avgPrice", w.AvgPrice),
		CumExecQty:   d.decNum("cumExecQty", w.CumExecQty),
		CumExecValue: d.decNum("cumExecValue", w.CumExecValue),
		LeavesQty:    d.decNum("leavesQty", w.LeavesQty),
		Status:       d.text("orderStatus", w.OrderStatus, maxShortText),
		RejectReason: d.text("rejectReason", w.RejectReason, maxReasonText),
		ReduceOnly:   bool(w.ReduceOnly),
		// Untrusted text, kept only to be compared with known kinds.
		StopOrderType:  d.text("stopOrderType", w.StopOrderType, maxShortText),
		CloseOnTrigger: bool(w.CloseOnTrigger),
		TriggerPrice:   d.decNum("triggerPrice", w.TriggerPrice),
		CreatedTime:    d.ms("createdTime", w.CreatedTime),
		UpdatedTime:    d.ms("updatedTime", w.UpdatedTime),
	}
	if d.err != nil {
		return messages.Order{}, d.err
	}
	if o.OrderID == "" {
		return messages.Order{}, errors.New("field orderId: missing")
	}
	return o, nil
}

type wireExecution struct {
	Symbol      string   `json:"symbol"`
	ExecID      string   `json:"execId"`
	OrderID     string   `json:"orderId"`
	OrderLinkID string   `json:"orderLinkId"`
	Side        string   `json:"side"`
	ExecPrice   flexNum  `json:"execPrice"`
	ExecQty     flexNum  `json:"execQty"`
	ExecValue   flexNum  `json:"execValue"`
	ExecFee     flexNum  `json:"execFee"`
	FeeRate     flexNum  `json:"feeRate"`
	FeeCurrency string   `json:"feeCurrency"`
	IsMaker     flexBool `json:"isMaker"`
	ExecType    string   `json:"execType"`
	ExecTime    flexNum  `json:"execTime"`
}

func parseExecution(cat messages.Category, w *wireExecution) (messages.Execution, error) {
	var d fieldDecoder
	e := messages.Execution{
		Category:    cat,
		Symbol:      d.text("symbol", w.Symbol, maxShortText),
		ExecID:      d.text("execId", w.ExecID, maxIDText),
		OrderID:     d.text("orderId", w.OrderID, maxIDText),
		OrderLinkID: d.text("orderLinkId", w.OrderLinkID, maxShortText),
		Side:        d.text("side", w.Side, maxShortText),
		ExecPrice:   d.decNum("execPrice", w.ExecPrice),
		ExecQty:     d.decNum("execQty", w.ExecQty),
		ExecValue:   d.decNum("execValue", w.ExecValue),
		ExecFee:     d.decNum("execFee", w.ExecFee),
		FeeRate:     d.decNum("feeRate", w.FeeRate),
		FeeCurrency: d.text("feeCurrency", w.FeeCurrency, maxShortText),
		IsMaker:     bool(w.IsMaker),
		ExecType:    d.text("execType", w.ExecType, maxShortText),
		ExecTime:    d.ms("execTime", w.ExecTime),
	}
	if d.err != nil {
		return messages.Execution{}, d.err
	}
	if e.ExecID == "" {
		return messages.Execution{}, errors.New("field execId: missing")
	}
	return e, nil
}

// flexBool decodes itself.
var _ json.Unmarshaler = (*flexBool)(nil)
