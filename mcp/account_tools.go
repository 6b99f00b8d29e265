package mcp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Account tools (docs/tools.md): reads of the principal's own exchange account
// with the user's stored key. Every one is KindRead, visible to every
// profile, and goes through Backend.Account, which refuses without a key
// (exchange_credentials_invalid) and otherwise asks the user's venue actor.
// Backend failures are returned unchanged (they already carry docs/errors.md
// codes).
//
// Answers are built to stay small (docs/tools.md): list limits are 1..50 (default
// 20), every row is a handful of validated fields (untrusted.go), and after
// building, an answer of answerBudget bytes or more is shortened — by asking
// the backend again for exactly the rows that fit, so that next_cursor
// resumes right after the last row shown, or, if that is not possible, by
// cutting rows without a cursor and saying so in notice. Every answer is
// therefore below 20,000 characters and valid JSON.
//
// Paging: has_more is true when the exchange has a next page; next_cursor
// is this server's signed wrapper of the exchange cursor (cursor.go), bound
// to the tool, the user, the category, the symbol and the effective window.
//
// History windows (get_order_history, get_trades) follow Bybit's 7-day rule
// and are checked here, before anything is sent: both times given must span
// at most 7 days with end ≥ start, otherwise invalid_params with a next_step
// naming a valid window; only start_time means [start, start+7d]; only
// end_time means [end−7d, end]; neither means the venue's last 7 days.

// Limits of the account tools.
const (
	listDefaultLimit = 20
	listMaxLimit     = 50
	// answerBudget is the size, in bytes of JSON, at which an answer is
	// shortened (docs/tools.md asks for answers well under 20,000 characters).
	answerBudget = 18000
	// maxCoins bounds the coins get_balances lists.
	maxCoins = 50
	// historyWindow is Bybit's longest history window (docs/bybit.md "Trade endpoints"),
	// the one rule in messages.
	historyWindow = messages.MaxHistoryWindow
)

// accountReader serves the account tools; it holds the server's cursor
// signer. Immutable after construction.
type accountReader struct {
	s       *server
	cursors *cursorSigner
}

// accountTools lists the account tools. The cursor key is Options.CursorKey
// or, when nil, a random key made here (at NewServer).
func (s *server) accountTools() []*tool {
	a := &accountReader{s: s, cursors: newCursorSigner(s.opts.CursorKey)}
	return []*tool{
		{
			name:        "get_balances",
			title:       "Get balances",
			description: "Your balances: USD totals and, per coin, equity, wallet, locked, unrealised PnL.",
			kind:        KindRead,
			schema:      inputSchema[noArgs](),
			handle:      a.getBalances,
		},
		{
			name:        "get_positions",
			title:       "Get positions",
			description: "Your open linear positions: size, side, entry, mark, unrealised PnL, leverage, TP/SL.",
			kind:        KindRead,
			schema:      inputSchema[positionsArgs](),
			handle:      a.getPositions,
		},
		{
			name:        "get_open_orders",
			title:       "Get open orders",
			description: "Your open orders in one category, newest first. To wait for a fill, use wait_for_update.",
			kind:        KindRead,
			schema:      inputSchema[openOrdersArgs](),
			handle:      a.getOpenOrders,
		},
		{
			name:        "get_order_history",
			title:       "Get order history",
			description: "Your closed orders in one category within at most 7 days, newest first.",
			kind:        KindRead,
			schema:      inputSchema[historyListArgs](),
			handle:      a.getOrderHistory,
		},
		{
			name:        "get_trades",
			title:       "Get trades",
			description: "Your fills (and linear funding) in one category within at most 7 days, newest first.",
			kind:        KindRead,
			schema:      inputSchema[historyListArgs](),
			handle:      a.getTrades,
		},
	}
}

// Balances.

type balancesOut struct {
	Venue                    string    `json:"venue"`
	AccountType              string    `json:"account_type,omitempty"`
	TotalEquityUSD           string    `json:"total_equity_usd,omitempty"`
	TotalAvailableBalanceUSD string    `json:"total_available_balance_usd,omitempty"`
	TotalWalletBalanceUSD    string    `json:"total_wallet_balance_usd,omitempty"`
	Coins                    []coinRow `json:"coins"`
	Omitted                  int       `json:"omitted,omitempty"`
	Notice                   string    `json:"notice,omitempty"`
}

type coinRow struct {
	Coin          string `json:"coin"`
	Equity        string `json:"equity"`
	WalletBalance string `json:"wallet_balance"`
	Locked        string `json:"locked"`
	UnrealisedPnl string `json:"unrealised_pnl"`
	UsdValue      string `json:"usd_value"`
}

func (a *accountReader) getBalances(ctx context.Context, c *call) (any, error) {
	if err := c.args.done(); err != nil {
		return nil, err
	}
	res, err := a.s.opts.Backend.Account(ctx, &messages.GetBalancesRequest{User: c.principal.User})
	if err != nil {
		return nil, err
	}
	wb, ok := res.(*messages.WalletBalance)
	if !ok || wb == nil {
		return nil, messages.Internal(fmt.Errorf("get_balances: unexpected answer %T", res))
	}
	return a.balancesOut(wb), nil
}

func (a *accountReader) balancesOut(wb *messages.WalletBalance) balancesOut {
	out := balancesOut{Venue: a.s.opts.Venue, Coins: []coinRow{}}
	if slices.Contains(messages.AccountTypes, wb.AccountType) {
		out.AccountType = wb.AccountType // one of Bybit's own; anything else is left out
	}
	var notices []string
	var totals rowCheck
	out.TotalEquityUSD = totals.dec(wb.TotalEquity)
	out.TotalAvailableBalanceUSD = totals.dec(wb.TotalAvailableBalance)
	out.TotalWalletBalanceUSD = totals.dec(wb.TotalWalletBalance)
	if totals.bad {
		notices = append(notices, "a total failed validation and is not shown.")
	}
	type ranked struct {
		row coinRow
		usd float64 // for ordering only; the shown value is the string
	}
	var coins []ranked
	for i := range wb.Coins {
		cb := &wb.Coins[i]
		var v rowCheck
		r := coinRow{
			Coin: v.match(coinPattern, cb.Coin), Equity: v.dec(cb.Equity), WalletBalance: v.dec(cb.WalletBalance),
			Locked: v.dec(cb.Locked), UnrealisedPnl: v.dec(cb.UnrealisedPnl), UsdValue: v.dec(cb.UsdValue),
		}
		if v.bad {
			out.Omitted++
			continue
		}
		usd, _ := cb.UsdValue.Float64()
		coins = append(coins, ranked{r, usd})
	}
	if out.Omitted > 0 {
		notices = append(notices, strconv.Itoa(out.Omitted)+" coins failed validation and are not shown.")
	}
	keep := len(coins)
	if keep > maxCoins {
		keep = maxCoins
	}
	for {
		shown := coins
		if keep < len(coins) {
			shown = slices.Clone(coins)
			slices.SortStableFunc(shown, func(x, y ranked) int { return cmp.Compare(y.usd, x.usd) })
			shown = shown[:keep]
		}
		out.Coins = out.Coins[:0]
		for _, r := range shown {
			out.Coins = append(out.Coins, r.row)
		}
		ns := notices
		if keep < len(coins) {
			ns = append(slices.Clone(notices), fmt.Sprintf("%d coins with the smallest USD value are not shown, to keep the answer small.", len(coins)-keep))
		}
		out.Notice = strings.Join(ns, " ")
		if keep == 0 || len(mustJSON(out)) < answerBudget {
			return out
		}
		keep--
	}
}

// Lists.

// listTail is the common end of every list answer.
type listTail struct {
	HasMore       bool   `json:"has_more"`
	NextCursor    string `json:"next_cursor,omitempty"`
	Omitted       int    `json:"omitted,omitempty"`
	Notice        string `json:"notice,omitempty"`
	UntrustedText string `json:"untrusted_text,omitempty"`
}

// listing describes one list read: how to fetch a page, how to turn an
// item into a row, and how to wrap the rows into the answer.
type listing[T, R any] struct {
	cursors *cursorSigner
	scope   cursorScope
	limit   int
	// cursor is the exchange cursor of the page asked for ("" = first).
	cursor string
	fetch  func(ctx context.Context, limit int, cursor string) (*messages.Page[T], error)
	// row validates one item; ok false makes it unrepresentable. It adds
	// the item's exchange text to u only when ok.
	row  func(item *T, u *untrustedText) (r R, ok bool)
	wrap func(rows []R, tail listTail) any
}

// run reads the page and builds an answer under answerBudget. A page that
// renders too large is asked for again with a limit of the rows that fit,
// so that its next_cursor resumes exactly after the last row shown; if that
// fails, the rows are cut without a cursor and notice says how to narrow
// the call.
func (l *listing[T, R]) run(ctx context.Context) (any, error) {
	page, err := l.fetch(ctx, l.limit, l.cursor)
	if err != nil {
		return nil, err
	}
	items, cut := page.Items, false
	if len(items) > l.limit { // a backend that ignored the limit: no exact cursor for the rest
		items, cut = items[:l.limit], true
	}
	out, size := l.build(items, page.NextCursor, cut, "")
	if size < answerBudget {
		return out, nil
	}
	// Find how many items fit, then ask for exactly that many so that the
	// exchange cursor resumes right after the last one shown.
	k := len(items) - 1
	for ; k > 0; k-- {
		if _, n := l.build(items[:k], "", true, ""); n < answerBudget {
			break
		}
	}
	if k > 0 && !cut {
		if p2, err := l.fetch(ctx, k, l.cursor); err == nil && len(p2.Items) <= k {
			notice := fmt.Sprintf("this page holds at most %d rows, fewer than the limit, to keep the answer small; next_cursor continues right after them.", k)
			if out2, n := l.build(p2.Items, p2.NextCursor, false, notice); n < answerBudget {
				return out2, nil
			}
		}
	}
	for ; k >= 0; k-- {
		if out, n := l.build(items[:k], "", true, ""); n < answerBudget || k == 0 {
			return out, nil
		}
	}
	return out, nil // not reached
}

// build renders items. next is the exchange cursor after them; cut says the
// items are a prefix of the page with no exact cursor for the rest.
func (l *listing[T, R]) build(items []T, next string, cut bool, notice string) (any, int) {
	var u untrustedText
	rows := make([]R, 0, len(items))
	tail := listTail{}
	for i := range items {
		r, ok := l.row(&items[i], &u)
		if !ok {
			tail.Omitted++
			continue
		}
		rows = append(rows, r)
	}
	var notices []string
	if notice != "" {
		notices = append(notices, notice)
	}
	switch {
	case cut:
		tail.HasMore = true
		notices = append(notices, fmt.Sprintf("the list was cut after %d rows to keep the answer small and cannot be continued from here: "+
			"call again with the same arguments and limit %d or less, or pass a symbol, to page through without gaps.", len(items), max(len(items), 1)))
	case next != "":
		tail.HasMore = true
		if cur, ok := l.cursors.issue(l.scope, next); ok {
			tail.NextCursor = cur
			notices = append(notices, "more rows: pass next_cursor as cursor, with the same other arguments, for the next page.")
		} else {
			notices = append(notices, "more rows exist but the exchange's page cursor cannot be handed out; narrow the query (symbol, time window) to see them.")
		}
	}
	if tail.Omitted > 0 {
		notices = append(notices, fmt.Sprintf("%d rows failed validation and are not shown.", tail.Omitted))
	}
	tail.Notice = strings.Join(notices, " ")
	tail.UntrustedText = u.String()
	out := l.wrap(rows, tail)
	return out, len(mustJSON(out))
}

// pageOf checks the backend's answer type.
func pageOf[T any](tool string, res any, err error) (*messages.Page[T], error) {
	if err != nil {
		return nil, err
	}
	p, ok := res.(*messages.Page[T])
	if !ok || p == nil {
		return nil, messages.Internal(fmt.Errorf("%s: unexpected answer %T", tool, res))
	}
	return p, nil
}

// Positions.

type positionsOut struct {
	Venue     string        `json:"venue"`
	Category  string        `json:"category"`
	Symbol    string        `json:"symbol,omitempty"`
	Positions []positionRow `json:"positions"`
	listTail
}

type positionRow struct {
	Symbol        string `json:"symbol"`
	Side          string `json:"side,omitempty"`
	Size          string `json:"size"`
	AvgPrice      string `json:"avg_price"`
	MarkPrice     string `json:"mark_price"`
	LiqPrice      string `json:"liq_price,omitempty"`
	UnrealisedPnl string `json:"unrealised_pnl"`
	Leverage      string `json:"leverage"`
	TakeProfit    string `json:"take_profit,omitempty"`
	StopLoss      string `json:"stop_loss,omitempty"`
	PositionValue string `json:"position_value"`
}

func positionRowOf(p *messages.Position, _ *untrustedText) (positionRow, bool) {
	var v rowCheck
	r := positionRow{
		Symbol: v.match(symbolPattern, p.Symbol), Size: v.dec(p.Size), AvgPrice: v.dec(p.AvgPrice),
		MarkPrice: v.dec(p.MarkPrice), LiqPrice: v.optDec(p.LiqPrice), UnrealisedPnl: v.dec(p.UnrealisedPnl),
		Leverage: v.dec(p.Leverage), TakeProfit: v.optDec(p.TakeProfit), StopLoss: v.optDec(p.StopLoss),
		PositionValue: v.dec(p.PositionValue),
	}
	switch {
	case p.Size.IsPositive():
		r.Side = v.oneOf(sides, p.Side)
	case p.Side != "" && p.Side != "None": // flat: no side
		v.oneOf(sides, p.Side)
	}
	return r, !v.bad
}

func (a *accountReader) getPositions(ctx context.Context, c *call) (any, error) {
	sym := c.args.str("symbol", false, symbolPattern, symbolReason)
	limit := c.args.integer("limit", listDefaultLimit, 1, listMaxLimit)
	raw := c.args.str("cursor", false, nil, "")
	if err := c.args.done(); err != nil {
		return nil, err
	}
	cat := string(messages.CategoryLinear)
	scope := cursorScope{Tool: "get_positions", User: c.principal.User, Category: cat, Symbol: sym}
	venueCursor, cerr := a.cursors.open(raw, scope)
	if cerr != nil {
		return nil, cerr
	}
	l := &listing[messages.Position, positionRow]{
		cursors: a.cursors, scope: scope, limit: limit, cursor: venueCursor,
		fetch: func(ctx context.Context, limit int, cursor string) (*messages.Page[messages.Position], error) {
			res, err := a.s.opts.Backend.Account(ctx, &messages.GetPositionsRequest{User: c.principal.User, Symbol: sym, Limit: limit, Cursor: cursor})
			return pageOf[messages.Position]("get_positions", res, err)
		},
		row: positionRowOf,
		wrap: func(rows []positionRow, tail listTail) any {
			return positionsOut{Venue: a.s.opts.Venue, Category: cat, Symbol: sym, Positions: rows, listTail: tail}
		},
	}
	return l.run(ctx)
}

// Orders.

type ordersOut struct {
	Venue     string     `json:"venue"`
	Category  string     `json:"category"`
	Symbol    string     `json:"symbol,omitempty"`
	StartTime string     `json:"start_time,omitempty"`
	EndTime   string     `json:"end_time,omitempty"`
	Orders    []orderRow `json:"orders"`
	listTail
}

type orderRow struct {
	Symbol           string `json:"symbol"`
	Side             string `json:"side"`
	OrderType        string `json:"order_type"`
	Status           string `json:"status"`
	OrderID          string `json:"order_id"`
	Price            string `json:"price"`
	Qty              string `json:"qty"`
	FilledQty        string `json:"filled_qty"`
	LeavesQty        string `json:"leaves_qty,omitempty"`
	AvgPrice         string `json:"avg_price,omitempty"`
	TimeInForce      string `json:"time_in_force,omitempty"`
	ReduceOnly       bool   `json:"reduce_only,omitempty"`
	CreatedTime      string `json:"created_time,omitempty"`
	UpdatedTime      string `json:"updated_time,omitempty"`
	ClientOrderIDRef int    `json:"client_order_id_ref,omitempty"`
	RejectReasonRef  int    `json:"reject_reason_ref,omitempty"`
}

func orderRowOf(o *messages.Order, u *untrustedText) (orderRow, bool) {
	var v rowCheck
	r := orderRow{
		Symbol: v.match(symbolPattern, o.Symbol), Side: v.oneOf(sides, o.Side), OrderType: v.oneOf(orderTypes, o.OrderType),
		Status: v.oneOf(orderStatuses, o.Status), OrderID: v.match(venueIDPattern, o.OrderID),
		Price: v.dec(o.Price), Qty: v.dec(o.Qty), FilledQty: v.dec(o.CumExecQty), LeavesQty: v.optDec(o.LeavesQty),
		AvgPrice: v.optDec(o.AvgPrice), TimeInForce: v.optOneOf(timeInForces, o.TimeInForce), ReduceOnly: o.ReduceOnly,
		CreatedTime: v.time(o.CreatedTime), UpdatedTime: v.time(o.UpdatedTime),
	}
	if v.bad {
		return r, false
	}
	r.ClientOrderIDRef = u.add("client_order_id", o.OrderLinkID)
	if o.RejectReason != "EC_NoError" {
		r.RejectReasonRef = u.add("reject_reason", o.RejectReason)
	}
	return r, true
}

func (a *accountReader) getOpenOrders(ctx context.Context, c *call) (any, error) {
	cat := c.args.category()
	sym := c.args.str("symbol", false, symbolPattern, symbolReason)
	limit := c.args.integer("limit", listDefaultLimit, 1, listMaxLimit)
	raw := c.args.str("cursor", false, nil, "")
	if err := c.args.done(); err != nil {
		return nil, err
	}
	scope := cursorScope{Tool: "get_open_orders", User: c.principal.User, Category: string(cat), Symbol: sym}
	venueCursor, cerr := a.cursors.open(raw, scope)
	if cerr != nil {
		return nil, cerr
	}
	l := &listing[messages.Order, orderRow]{
		cursors: a.cursors, scope: scope, limit: limit, cursor: venueCursor,
		fetch: func(ctx context.Context, limit int, cursor string) (*messages.Page[messages.Order], error) {
			res, err := a.s.opts.Backend.Account(ctx, &messages.GetOpenOrdersRequest{User: c.principal.User, Category: cat, Symbol: sym, Limit: limit, Cursor: cursor})
			return pageOf[messages.Order]("get_open_orders", res, err)
		},
		row: orderRowOf,
		wrap: func(rows []orderRow, tail listTail) any {
			return ordersOut{Venue: a.s.opts.Venue, Category: string(cat), Symbol: sym, Orders: rows, listTail: tail}
		},
	}
	return l.run(ctx)
}

func (a *accountReader) getOrderHistory(ctx context.Context, c *call) (any, error) {
	h, err := readHistoryArgs(c, "get_order_history")
	if err != nil {
		return nil, err
	}
	venueCursor, cerr := a.cursors.open(h.rawCursor, h.scope)
	if cerr != nil {
		return nil, cerr
	}
	l := &listing[messages.Order, orderRow]{
		cursors: a.cursors, scope: h.scope, limit: h.limit, cursor: venueCursor,
		fetch: func(ctx context.Context, limit int, cursor string) (*messages.Page[messages.Order], error) {
			res, err := a.s.opts.Backend.Account(ctx, &messages.GetOrderHistoryRequest{
				User: c.principal.User, Category: h.category, Symbol: h.symbol, Start: h.win.start, End: h.win.end, Limit: limit, Cursor: cursor,
			})
			return pageOf[messages.Order]("get_order_history", res, err)
		},
		row: orderRowOf,
		wrap: func(rows []orderRow, tail listTail) any {
			return ordersOut{Venue: a.s.opts.Venue, Category: string(h.category), Symbol: h.symbol,
				StartTime: rfc3339(h.win.start), EndTime: rfc3339(h.win.end), Orders: rows, listTail: tail}
		},
	}
	return l.run(ctx)
}

// Trades.

type tradesOut struct {
	Venue     string     `json:"venue"`
	Category  string     `json:"category"`
	Symbol    string     `json:"symbol,omitempty"`
	StartTime string     `json:"start_time,omitempty"`
	EndTime   string     `json:"end_time,omitempty"`
	Trades    []tradeRow `json:"trades"`
	listTail
}

type tradeRow struct {
	Symbol           string `json:"symbol"`
	Side             string `json:"side,omitempty"`
	ExecType         string `json:"exec_type,omitempty"`
	ExecTypeRef      int    `json:"exec_type_ref,omitempty"`
	OrderID          string `json:"order_id,omitempty"`
	ExecID           string `json:"exec_id"`
	Price            string `json:"price"`
	Qty              string `json:"qty"`
	Value            string `json:"value"`
	Fee              string `json:"fee"`
	FeeRate          string `json:"fee_rate"`
	FeeCurrency      string `json:"fee_currency,omitempty"`
	FeeCurrencyRef   int    `json:"fee_currency_ref,omitempty"`
	IsMaker          bool   `json:"is_maker"`
	Time             string `json:"time,omitempty"`
	ClientOrderIDRef int    `json:"client_order_id_ref,omitempty"`
}

func tradeRowOf(e *messages.Execution, u *untrustedText) (tradeRow, bool) {
	var v rowCheck
	r := tradeRow{
		Symbol: v.match(symbolPattern, e.Symbol), Side: v.optOneOf(sides, e.Side),
		OrderID: v.optMatch(venueIDPattern, e.OrderID), ExecID: v.match(venueIDPattern, e.ExecID),
		Price: v.dec(e.ExecPrice), Qty: v.dec(e.ExecQty), Value: v.dec(e.ExecValue), Fee: v.dec(e.ExecFee),
		FeeRate: v.dec(e.FeeRate), IsMaker: e.IsMaker, Time: v.time(e.ExecTime),
	}
	if v.bad {
		return r, false
	}
	if slices.Contains(execTypes, e.ExecType) {
		r.ExecType = e.ExecType
	} else if e.ExecType != "" {
		r.ExecType = "other"
		r.ExecTypeRef = u.add("exec_type", e.ExecType)
	}
	if coinPattern.MatchString(e.FeeCurrency) {
		r.FeeCurrency = e.FeeCurrency
	} else {
		r.FeeCurrencyRef = u.add("fee_currency", e.FeeCurrency)
	}
	r.ClientOrderIDRef = u.add("client_order_id", e.OrderLinkID)
	return r, true
}

func (a *accountReader) getTrades(ctx context.Context, c *call) (any, error) {
	h, err := readHistoryArgs(c, "get_trades")
	if err != nil {
		return nil, err
	}
	venueCursor, cerr := a.cursors.open(h.rawCursor, h.scope)
	if cerr != nil {
		return nil, cerr
	}
	l := &listing[messages.Execution, tradeRow]{
		cursors: a.cursors, scope: h.scope, limit: h.limit, cursor: venueCursor,
		fetch: func(ctx context.Context, limit int, cursor string) (*messages.Page[messages.Execution], error) {
			res, err := a.s.opts.Backend.Account(ctx, &messages.GetTradesRequest{
				User: c.principal.User, Category: h.category, Symbol: h.symbol, Start: h.win.start, End: h.win.end, Limit: limit, Cursor: cursor,
			})
			return pageOf[messages.Execution]("get_trades", res, err)
		},
		row: tradeRowOf,
		wrap: func(rows []tradeRow, tail listTail) any {
			return tradesOut{Venue: a.s.opts.Venue, Category: string(h.category), Symbol: h.symbol,
				StartTime: rfc3339(h.win.start), EndTime: rfc3339(h.win.end), Trades: rows, listTail: tail}
		},
	}
	return l.run(ctx)
}

// History arguments and the 7-day window.

// historyArgs are the checked arguments of get_order_history and get_trades.
type historyArgs struct {
	category  messages.Category
	symbol    string
	limit     int
	rawCursor string
	win       window
	scope     cursorScope
}

const symbolReason = messages.SymbolReason

// readHistoryArgs reads and checks the arguments, the window included;
// nothing has been sent when it fails.
func readHistoryArgs(c *call, tool string) (*historyArgs, error) {
	h := &historyArgs{category: c.args.category()}
	h.symbol = c.args.str("symbol", false, symbolPattern, symbolReason)
	start := historyTime(c.args, "start_time")
	end := historyTime(c.args, "end_time")
	h.limit = c.args.integer("limit", listDefaultLimit, 1, listMaxLimit)
	h.rawCursor = c.args.str("cursor", false, nil, "")
	if err := c.args.done(); err != nil {
		return nil, err
	}
	win, err := resolveWindow(start, end)
	if err != nil {
		return nil, err
	}
	h.win = win
	h.scope = cursorScope{Tool: tool, User: c.principal.User, Category: string(h.category), Symbol: h.symbol, Start: defaultWindow, End: defaultWindow}
	if !win.start.IsZero() {
		h.scope.Start, h.scope.End = rfc3339(win.start), rfc3339(win.end)
	}
	return h, nil
}

// historyTime reads an optional RFC 3339 time at millisecond precision (what
// the venue sends). A given time that parses to Go's zero time (year 1) is
// returned as a time before 1970, which resolveWindow refuses, rather than
// taken as "not given".
func historyTime(a *args, name string) time.Time {
	t := a.timestamp(name)
	if a.err != nil {
		return time.Time{}
	}
	if t.IsZero() {
		if _, given := a.raw(name); given {
			// resolveWindow refuses it, with a next_step.
			return time.Unix(0, 0).UTC().Add(-time.Millisecond)
		}
		return time.Time{}
	}
	return t.Truncate(time.Millisecond)
}

// window is an effective history window; both zero means the venue's
// default (the last 7 days).
type window struct {
	start, end time.Time
}

// resolveWindow applies the 7-day rule (docs/bybit.md "Trade endpoints") to the given times
// (zero = not given). A refusal names the field and, in next_step, a valid
// window computed from the request: the 7 days up to end_time.
func resolveWindow(start, end time.Time) (window, *messages.Error) {
	epoch := time.Unix(0, 0).UTC()
	switch {
	case !start.IsZero() && start.Before(epoch):
		e := messages.InvalidParams("start_time", "must not be before 1970-01-01T00:00:00Z")
		e.NextStep = "use a start_time on or after 1970-01-01T00:00:00Z"
		return window{}, e
	case !end.IsZero() && end.Before(epoch):
		e := messages.InvalidParams("end_time", "must not be before 1970-01-01T00:00:00Z")
		e.NextStep = "use an end_time on or after 1970-01-01T00:00:00Z"
		return window{}, e
	case !start.IsZero() && !end.IsZero():
		switch {
		case end.Before(start):
			return window{}, windowError(end, "must not be before start_time")
		case end.Sub(start) > historyWindow:
			return window{}, windowError(end, "the window may span at most 7 days")
		}
		return window{start, end}, nil
	case !start.IsZero():
		return window{start, start.Add(historyWindow)}, nil
	case !end.IsZero():
		return window{maxTime(end.Add(-historyWindow), epoch), end}, nil
	}
	return window{}, nil
}

// windowError refuses a window and names a valid one: [end−7d, end].
func windowError(end time.Time, reason string) *messages.Error {
	start := maxTime(end.Add(-historyWindow), time.Unix(0, 0).UTC())
	e := messages.InvalidParams("end_time", reason)
	e.NextStep = "use start_time " + plainTime(start) + " and end_time " + plainTime(end) +
		" (the 7 days up to your end_time); for a longer period, call once per 7-day window"
	e.Details["valid_start_time"] = plainTime(start)
	e.Details["valid_end_time"] = plainTime(end)
	return e
}

// plainTime is RFC 3339 UTC, with milliseconds only when there are any.
func plainTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond() == 0 {
		return t.Format(time.RFC3339)
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
