package sim

import (
	"github.com/shopspring/decimal"
)

// Closed PnL and the transaction log (docs/simulator.md). Both are read
// from the account's executions (ledger.go), the same records the fills
// booked into the wallet and the positions, so they always agree with the
// balances and the positions' realised PnL; there is no second ledger to
// keep in step. Funding is not charged by the simulator, so neither shows
// funding rows.
//
//	GET /v5/position/closed-pnl       -> {"category","list":[...],"nextPageCursor"}
//	GET /v5/account/transaction-log   -> {"list":[...],"nextPageCursor"}

// A closedPnlRecord is one order's closing of a linear position: every
// fill of the order that reduced the position, added up.
type closedPnlRecord struct {
	order                 *simOrder
	leverage              decimal.Decimal
	closedSize            decimal.Decimal
	entryValue, exitValue decimal.Decimal
	pnl                   decimal.Decimal // before fees
	openFee, closeFee     decimal.Decimal
	fills                 int
	firstMs, lastMs       int64
	lastSeq               uint64
}

// openLot is what a replay of the executions knows about one symbol's
// position: its size and the fees paid to open it not yet charged to a
// closing.
type openLot struct {
	size    decimal.Decimal
	openFee decimal.Decimal
}

// closedPnlLocked replays the account's linear executions in order and
// returns one record per order that closed some position, in the order of
// their first closing fill. A closing fill's share of the fees paid to
// open the position is the closed part of the size, as Bybit counts
// openFee; of a fill that both closes and opens, the closing part's share
// of its fee is the closeFee and the rest opens the new side.
func closedPnlLocked(l *ledger) []*closedPnlRecord {
	lots := map[string]*openLot{}
	byOrder := map[string]*closedPnlRecord{}
	var out []*closedPnlRecord
	resets := l.resets
	for _, e := range l.execs {
		for ; len(resets) > 0 && resets[0].seq < e.seq; resets = resets[1:] {
			clear(lots) // a reset closed every position without a fill
		}
		if e.category != catLinear || e.execType != "Trade" || !e.execQty.IsPositive() {
			continue
		}
		lot := lots[e.symbol]
		if lot == nil {
			lot = &openLot{}
			lots[e.symbol] = lot
		}
		closeFee := e.execFee.Mul(e.closedSize).DivRound(e.execQty, amountPlaces)
		if e.closedSize.IsPositive() {
			share := decimal.Zero
			if lot.size.IsPositive() {
				share = lot.openFee.Mul(decimal.Min(e.closedSize, lot.size)).DivRound(lot.size, amountPlaces)
			}
			lot.openFee = lot.openFee.Sub(share)
			lot.size = decimal.Max(decimal.Zero, lot.size.Sub(e.closedSize))
			if lot.size.IsZero() {
				lot.openFee = decimal.Zero
			}
			r := byOrder[e.orderID]
			if r == nil {
				o := l.byID[e.orderID]
				if o == nil {
					continue
				}
				r = &closedPnlRecord{order: o, leverage: l.leverageForLocked(e.symbol), firstMs: e.execMs}
				byOrder[e.orderID] = r
				out = append(out, r)
			}
			exit := e.execPrice.Mul(e.closedSize)
			entry := exit.Sub(e.execPnl) // closing a long: pnl = exit − entry
			if e.side == "Buy" {
				entry = exit.Add(e.execPnl) // closing a short: pnl = entry − exit
			}
			r.closedSize = r.closedSize.Add(e.closedSize)
			r.entryValue = r.entryValue.Add(entry)
			r.exitValue = r.exitValue.Add(exit)
			r.pnl = r.pnl.Add(e.execPnl)
			r.openFee = r.openFee.Add(share)
			r.closeFee = r.closeFee.Add(closeFee)
			r.fills++
			r.lastMs, r.lastSeq = e.execMs, e.seq
		}
		if opened := e.execQty.Sub(e.closedSize); opened.IsPositive() {
			lot.size = lot.size.Add(opened)
			lot.openFee = lot.openFee.Add(e.execFee.Sub(closeFee))
		}
	}
	return out
}

// historyPage reads the window (windowParams), limit (1..most, default
// def) and cursor of a paged history read.
func (s *Sim) historyPage(c *call, def, most int64) (start, end, limit int64, cur *cursorPos, r *response) {
	if start, end, r = windowParams(c); r != nil {
		return
	}
	if limit, r = intParam(c, "limit", def, 1, most); r != nil {
		return
	}
	cur, r = s.cursorParam(c)
	return
}

// GET /v5/position/closed-pnl

type closedPnlJSON struct {
	Symbol        string `json:"symbol"`
	OrderType     string `json:"orderType"`
	Leverage      string `json:"leverage"`
	UpdatedTime   string `json:"updatedTime"`
	Side          string `json:"side"`
	OrderID       string `json:"orderId"`
	OrderLinkID   string `json:"orderLinkId"`
	ClosedPnl     string `json:"closedPnl"`
	AvgEntryPrice string `json:"avgEntryPrice"`
	Qty           string `json:"qty"`
	CumEntryValue string `json:"cumEntryValue"`
	CreatedTime   string `json:"createdTime"`
	OrderPrice    string `json:"orderPrice"`
	ClosedSize    string `json:"closedSize"`
	AvgExitPrice  string `json:"avgExitPrice"`
	ExecType      string `json:"execType"`
	FillCount     string `json:"fillCount"`
	CumExitValue  string `json:"cumExitValue"`
	OpenFee       string `json:"openFee"`
	CloseFee      string `json:"closeFee"`
}

func (s *Sim) closedPnlRow(r *closedPnlRecord) closedPnlJSON {
	o := r.order
	in := s.catalog.get(o.category, o.symbol)
	ps, qs := in.priceScale, in.qtyScale
	return closedPnlJSON{
		Symbol: o.symbol, OrderType: o.orderType, Leverage: r.leverage.String(),
		UpdatedTime: itoa(r.lastMs), CreatedTime: itoa(r.firstMs),
		Side: o.side, OrderID: o.orderID, OrderLinkID: o.orderLinkID,
		ClosedPnl:     num(r.pnl.Sub(r.openFee).Sub(r.closeFee)),
		AvgEntryPrice: fixed(r.entryValue.DivRound(r.closedSize, ps), ps),
		AvgExitPrice:  fixed(r.exitValue.DivRound(r.closedSize, ps), ps),
		Qty:           fixed(o.qty, qs), OrderPrice: fixed(o.price, ps),
		ClosedSize:    fixed(r.closedSize, qs),
		CumEntryValue: num(r.entryValue), CumExitValue: num(r.exitValue),
		ExecType: "Trade", FillCount: itoa(int64(r.fills)),
		OpenFee: num(r.openFee), CloseFee: num(r.closeFee),
	}
}

// positionClosedPnl lists the account's closed PnL records of linear
// positions, newest first by their last closing fill, within the 7-day
// window rules of the history reads; limit 1..100 (default 50).
func (s *Sim) positionClosedPnl(c *call) response {
	cat, r := categoryParam(c, "", catLinear)
	if r != nil {
		return *r
	}
	sym := c.query.Get("symbol")
	if sym != "" && s.catalog.get(cat, sym) == nil {
		return fail(codeParams, msgSymbolInvalid)
	}
	start, end, limit, cur, r := s.historyPage(c, 50, 100)
	if r != nil {
		return *r
	}

	s.mu.Lock()
	var recs []*closedPnlRecord
	for _, rec := range closedPnlLocked(c.accountLedgerLocked()) {
		if (sym == "" || rec.order.symbol == sym) && rec.lastMs >= start && rec.lastMs <= end {
			recs = append(recs, rec)
		}
	}
	key := func(r *closedPnlRecord) cursorPos { return cursorPos{T: r.lastMs, S: r.lastSeq} }
	page, next := paginate(s, c, recs, key, newestFirst, cur, int(limit))
	list := make([]any, 0, len(page))
	for _, rec := range page {
		list = append(list, s.closedPnlRow(rec))
	}
	s.mu.Unlock()
	return ok(pagedResult{Category: cat, NextPageCursor: next, List: list})
}

// GET /v5/account/transaction-log

type transactionJSON struct {
	ID              string `json:"id"`
	Symbol          string `json:"symbol"`
	Category        string `json:"category"`
	Side            string `json:"side"`
	TransactionTime string `json:"transactionTime"`
	Type            string `json:"type"`
	Qty             string `json:"qty"`
	Size            string `json:"size"`
	Currency        string `json:"currency"`
	TradePrice      string `json:"tradePrice"`
	Funding         string `json:"funding"`
	Fee             string `json:"fee"`
	CashFlow        string `json:"cashFlow"`
	Change          string `json:"change"`
	CashBalance     string `json:"cashBalance"`
	FeeRate         string `json:"feeRate"`
	BonusChange     string `json:"bonusChange"`
	TradeID         string `json:"tradeId"`
	OrderID         string `json:"orderId"`
	OrderLinkID     string `json:"orderLinkId"`
	ExtraFees       string `json:"extraFees"`
}

// A transaction is one wallet movement of one coin caused by a fill, or
// by a reset (e nil).
type transaction struct {
	e        *simExecution
	ms       int64
	typ      string // TRADE, or TRANSFER_IN / TRANSFER_OUT for a reset
	coin     string
	change   decimal.Decimal // what the wallet balance moved by
	cashFlow decimal.Decimal // before the fee: realised PnL (linear), the traded amount (spot)
	fee      decimal.Decimal // charged in this coin
	size     decimal.Decimal // linear: the position after the fill, negative when short
	balance  decimal.Decimal // the coin's wallet balance after the movement
	key      cursorPos
}

// transactionsLocked turns the account's executions into wallet movements,
// oldest first: a linear fill moves the settle coin by its realised PnL
// minus its fee; a spot fill moves both coins. Balances after each
// movement are counted back from the current wallet, so the newest row
// ends at today's balance. A reset moves each coin it changed
// (TRANSFER_IN or TRANSFER_OUT) and starts the position sizes from flat.
// (A balance set through /sim/ is not a transaction and is not logged.)
func transactionsLocked(s *Sim, l *ledger) []*transaction {
	var out []*transaction
	sizes := map[string]decimal.Decimal{} // linear position per symbol, signed
	resets := l.resets
	applyResets := func(before uint64) {
		for ; len(resets) > 0 && resets[0].seq < before; resets = resets[1:] {
			r := resets[0]
			clear(sizes)
			for i := range r.moves {
				m := &r.moves[i]
				typ := "TRANSFER_IN"
				if m.change.IsNegative() {
					typ = "TRANSFER_OUT"
				}
				out = append(out, &transaction{ms: r.ms, typ: typ, coin: m.coin, change: m.change,
					cashFlow: m.change, key: cursorPos{T: r.ms, S: m.seq * 2}})
			}
		}
	}
	for _, e := range l.execs {
		if e.execType != "Trade" {
			continue
		}
		applyResets(e.seq)
		in := s.catalog.get(e.category, e.symbol)
		key := func(i uint64) cursorPos { return cursorPos{T: e.execMs, S: e.seq*2 + i} }
		if e.category == catLinear {
			signed := e.execQty
			if e.side == "Sell" {
				signed = signed.Neg()
			}
			sizes[e.symbol] = sizes[e.symbol].Add(signed)
			out = append(out, &transaction{e: e, ms: e.execMs, typ: "TRADE", coin: in.quote, change: e.execPnl.Sub(e.execFee),
				cashFlow: e.execPnl, fee: e.execFee, size: sizes[e.symbol], key: key(0)})
			continue
		}
		base := &transaction{e: e, ms: e.execMs, typ: "TRADE", coin: in.baseCoin, key: key(0)}
		quote := &transaction{e: e, ms: e.execMs, typ: "TRADE", coin: in.quote, key: key(1)}
		if e.side == "Buy" {
			base.cashFlow, quote.cashFlow = e.execQty, e.execValue.Neg()
		} else {
			base.cashFlow, quote.cashFlow = e.execQty.Neg(), e.execValue
		}
		for _, t := range []*transaction{base, quote} {
			if t.coin == e.feeCurrency {
				t.fee = e.execFee
			}
			t.change = t.cashFlow.Sub(t.fee)
		}
		out = append(out, base, quote)
	}
	applyResets(l.seq + 1)
	running := map[string]decimal.Decimal{}
	for coin, v := range l.balances {
		running[coin] = v
	}
	for i := len(out) - 1; i >= 0; i-- {
		t := out[i]
		t.balance = running[t.coin]
		running[t.coin] = t.balance.Sub(t.change)
	}
	return out
}

func (s *Sim) transactionRow(t *transaction) transactionJSON {
	e := t.e
	if e == nil {
		// A reset's move: a transfer of the coin, no trade behind it.
		return transactionJSON{
			ID: itoa(int64(t.key.S)) + "_" + t.coin, Side: "None", TransactionTime: itoa(t.ms), Type: t.typ,
			Qty: "0", Size: "0", Currency: t.coin, TradePrice: "0", Fee: "0",
			CashFlow: num(t.cashFlow), Change: num(t.change), CashBalance: num(t.balance), FeeRate: "0",
		}
	}
	in := s.catalog.get(e.category, e.symbol)
	row := transactionJSON{
		ID: itoa(int64(t.key.S)) + "_" + t.coin, Symbol: e.symbol, Category: e.category, Side: e.side,
		TransactionTime: itoa(e.execMs), Type: "TRADE", Qty: fixed(e.execQty, in.qtyScale),
		Currency: t.coin, TradePrice: e.execPrice.String(), Fee: num(t.fee),
		CashFlow: num(t.cashFlow), Change: num(t.change), CashBalance: num(t.balance),
		FeeRate: e.feeRate.String(), TradeID: e.execID, OrderID: e.orderID, OrderLinkID: e.orderLinkID,
	}
	if e.category == catLinear {
		row.Size = fixed(t.size, in.qtyScale)
	}
	return row
}

// accountTransactionLog lists the account's wallet movements, newest
// first, filtered by category, currency, baseCoin and type (TRADE, and
// TRANSFER_IN / TRANSFER_OUT for a paper reset), within the 7-day window
// rules; limit 1..50 (default 20).
func (s *Sim) accountTransactionLog(c *call) response {
	if at := c.query.Get("accountType"); at != "" && at != "UNIFIED" {
		return fail(codeParams, "params error: accountType must be UNIFIED")
	}
	cat, coin, base, typ := c.query.Get("category"), c.query.Get("currency"), c.query.Get("baseCoin"), c.query.Get("type")
	if cat != "" && !knownCategory(cat) {
		return fail(codeParams, "Illegal category")
	}
	start, end, limit, cur, r := s.historyPage(c, 20, 50)
	if r != nil {
		return *r
	}

	s.mu.Lock()
	var rows []*transaction
	for _, t := range transactionsLocked(s, c.accountLedgerLocked()) {
		if (coin != "" && t.coin != coin) || (typ != "" && typ != t.typ) || t.ms < start || t.ms > end {
			continue
		}
		if e := t.e; e == nil && (cat != "" || base != "") ||
			e != nil && ((cat != "" && e.category != cat) || (base != "" && s.catalog.get(e.category, e.symbol).baseCoin != base)) {
			continue // a reset's move has no category or base coin
		}
		rows = append(rows, t)
	}
	page, next := paginate(s, c, rows, func(t *transaction) cursorPos { return t.key }, newestFirst, cur, int(limit))
	list := make([]any, 0, len(page))
	for _, t := range page {
		list = append(list, s.transactionRow(t))
	}
	s.mu.Unlock()
	return ok(transactionLogResult{NextPageCursor: next, List: list})
}

type transactionLogResult struct {
	NextPageCursor string `json:"nextPageCursor"`
	List           []any  `json:"list"`
}
