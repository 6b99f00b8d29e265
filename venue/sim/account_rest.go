package sim

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Account read endpoints (docs/bybit.md "Trade endpoints", "Position endpoints", "Account and key endpoints"); all signed GET,
// all read-only (a read-only key may call them), all reading the calling
// key's account ledger under Sim.mu.
//
//	GET /v5/account/wallet-balance  accountType=UNIFIED (else 10001); coin=A,B optional
//	GET /v5/position/list           category=linear; symbol or settleCoin (else 10001); limit 1..200 (20); cursor
//	GET /v5/order/realtime          category=spot|linear; linear needs symbol|baseCoin|settleCoin|orderId|orderLinkId;
//	                                openOnly 0|1; orderFilter; limit 1..50 (20); cursor; newest createdTime first
//	GET /v5/order/history           category; 7-day window; closed orders; limit 1..50 (20); cursor; newest first
//	GET /v5/execution/list          category; 7-day window; limit 1..100 (50); cursor; newest execTime first

// Message texts of parameter refusals (retCode 10001).
const (
	msgAccountType    = "accountType only support UNIFIED"
	msgLinearNeedsSym = "params error: symbol or settleCoin is required"
	msgOrdersNeedSym  = "params error: symbol, baseCoin or settleCoin is required for linear"
	msgSpotSettleCoin = "params error: settleCoin is not supported for spot"
	msgWindowTooLong  = "params error: the time range between startTime and endTime cannot exceed 7 days"
	msgWindowReversed = "params error: endTime must not be before startTime"
	historyWindowMs   = int64(7 * 24 * time.Hour / time.Millisecond)
	unfilledVisibleMs = int64(24 * time.Hour / time.Millisecond)
	closedRetained    = 500 // closed orders /v5/order/realtime keeps per account and category
)

// accountLedgerLocked returns the ledger of the calling key's account.
// The caller holds s.mu.
func (c *call) accountLedgerLocked() *ledger { return c.key.acct.ledgerLocked() }

// GET /v5/account/wallet-balance

type walletResult struct {
	List []walletAccountJSON `json:"list"`
}

type walletAccountJSON struct {
	AccountType                string           `json:"accountType"`
	AccountLTV                 string           `json:"accountLTV"`
	AccountIMRate              string           `json:"accountIMRate"`
	AccountIMRateByMp          string           `json:"accountIMRateByMp"`
	AccountMMRate              string           `json:"accountMMRate"`
	AccountMMRateByMp          string           `json:"accountMMRateByMp"`
	TotalEquity                string           `json:"totalEquity"`
	TotalWalletBalance         string           `json:"totalWalletBalance"`
	TotalMarginBalance         string           `json:"totalMarginBalance"`
	TotalAvailableBalance      string           `json:"totalAvailableBalance"`
	TotalPerpUPL               string           `json:"totalPerpUPL"`
	TotalInitialMargin         string           `json:"totalInitialMargin"`
	TotalInitialMarginByMp     string           `json:"totalInitialMarginByMp"`
	TotalMaintenanceMargin     string           `json:"totalMaintenanceMargin"`
	TotalMaintenanceMarginByMp string           `json:"totalMaintenanceMarginByMp"`
	Coin                       []walletCoinJSON `json:"coin"`
}

type walletCoinJSON struct {
	Coin                string `json:"coin"`
	Equity              string `json:"equity"`
	UsdValue            string `json:"usdValue"`
	WalletBalance       string `json:"walletBalance"`
	Free                string `json:"free"`
	Locked              string `json:"locked"`
	SpotHedgingQty      string `json:"spotHedgingQty"`
	BorrowAmount        string `json:"borrowAmount"`
	AvailableToWithdraw string `json:"availableToWithdraw"`
	AccruedInterest     string `json:"accruedInterest"`
	TotalOrderIM        string `json:"totalOrderIM"`
	TotalPositionIM     string `json:"totalPositionIM"`
	TotalPositionMM     string `json:"totalPositionMM"`
	UnrealisedPnl       string `json:"unrealisedPnl"`
	CumRealisedPnl      string `json:"cumRealisedPnl"`
	Bonus               string `json:"bonus"`
	MarginCollateral    bool   `json:"marginCollateral"`
	CollateralSwitch    bool   `json:"collateralSwitch"`
	AvailableToBorrow   string `json:"availableToBorrow"`
	SpotBorrow          string `json:"spotBorrow"`
}

// coinTotals accumulates one coin's numbers, in the coin.
type coinTotals struct {
	wallet, upl, realised, locked, orderIM, posIM, posMM decimal.Decimal
}

func (s *Sim) walletBalance(c *call) response {
	if c.query.Get("accountType") != "UNIFIED" {
		return fail(codeParams, msgAccountType)
	}
	var wantCoins []string
	if v := c.query.Get("coin"); v != "" {
		for _, coin := range strings.Split(v, ",") {
			if coin = strings.TrimSpace(coin); coin != "" {
				wantCoins = append(wantCoins, coin)
			}
		}
	}
	sec := c.nowSec()

	s.mu.Lock()
	acct := s.walletViewLocked(c.accountLedgerLocked(), sec, wantCoins)
	s.mu.Unlock()
	return ok(walletResult{List: []walletAccountJSON{acct}})
}

// walletViewLocked derives the UNIFIED account row of a ledger at second
// sec: wallet-balance and the wallet stream show the same numbers.
// wantCoins nil lists every coin with something in it.
func (s *Sim) walletViewLocked(l *ledger, sec int64, wantCoins []string) walletAccountJSON {
	totals := map[string]*coinTotals{}
	get := func(coin string) *coinTotals {
		t := totals[coin]
		if t == nil {
			t = &coinTotals{}
			totals[coin] = t
		}
		return t
	}
	for coin, v := range l.balances {
		get(coin).wallet = v
	}
	for _, p := range l.positions {
		in := s.catalog.get(catLinear, p.symbol)
		if in == nil {
			continue
		}
		v := s.viewPosition(in, p, sec)
		t := get(in.quote)
		t.upl = t.upl.Add(v.upl)
		t.realised = t.realised.Add(p.cumRealisedPnl)
		t.posIM = t.posIM.Add(v.im)
		t.posMM = t.posMM.Add(v.mm)
	}
	for _, o := range l.orders {
		if !o.open() {
			continue
		}
		in := s.catalog.get(o.category, o.symbol)
		if in == nil {
			continue
		}
		leaves := o.leavesQty()
		switch {
		case o.category == catSpot && o.side == "Buy":
			t := get(in.quote)
			t.locked = t.locked.Add(leaves.Mul(o.price))
		case o.category == catSpot:
			t := get(in.baseCoin)
			t.locked = t.locked.Add(leaves)
		default:
			t := get(in.quote)
			t.orderIM = t.orderIM.Add(leaves.Mul(o.price).DivRound(l.leverageForLocked(o.symbol), amountPlaces))
		}
	}
	coins := make([]string, 0, len(totals))
	if wantCoins != nil {
		for _, coin := range wantCoins {
			if s.knownCoin(coin) {
				coins = append(coins, coin)
			}
		}
	} else {
		for coin, t := range totals {
			if !t.wallet.IsZero() || !t.upl.IsZero() || !t.locked.IsZero() || !t.orderIM.IsZero() {
				coins = append(coins, coin)
			}
		}
		sort.Strings(coins)
	}

	var totEquity, totWallet, totUPL, totIM, totMM decimal.Decimal
	acct := walletAccountJSON{AccountType: "UNIFIED", AccountLTV: "0", Coin: make([]walletCoinJSON, 0, len(coins))}
	for _, coin := range coins {
		t := totals[coin]
		if t == nil {
			t = &coinTotals{}
		}
		px, _ := s.coinUSD(coin, sec)
		equity := t.wallet.Add(t.upl)
		usd := equity.Mul(px).Round(amountPlaces)
		totEquity = totEquity.Add(usd)
		totWallet = totWallet.Add(t.wallet.Mul(px).Round(amountPlaces))
		totUPL = totUPL.Add(t.upl.Mul(px).Round(amountPlaces))
		totIM = totIM.Add(t.posIM.Add(t.orderIM).Mul(px).Round(amountPlaces))
		totMM = totMM.Add(t.posMM.Mul(px).Round(amountPlaces))
		acct.Coin = append(acct.Coin, walletCoinJSON{
			Coin:                coin,
			Equity:              num(equity),
			UsdValue:            num(usd),
			WalletBalance:       num(t.wallet),
			Free:                "",
			Locked:              num(t.locked),
			SpotHedgingQty:      "0",
			BorrowAmount:        "0.000000000000000000",
			AvailableToWithdraw: "",
			AccruedInterest:     "0",
			TotalOrderIM:        num(t.orderIM),
			TotalPositionIM:     num(t.posIM),
			TotalPositionMM:     num(t.posMM),
			UnrealisedPnl:       num(t.upl),
			CumRealisedPnl:      num(t.realised),
			Bonus:               "0",
			MarginCollateral:    true,
			CollateralSwitch:    true,
			AvailableToBorrow:   "",
			SpotBorrow:          "0",
		})
	}
	margin := totWallet.Add(totUPL)
	avail := margin.Sub(totIM)
	if avail.IsNegative() {
		avail = decimal.Zero
	}
	imRate, mmRate := decimal.Zero, decimal.Zero
	if margin.IsPositive() {
		imRate = totIM.DivRound(margin, 4)
		mmRate = totMM.DivRound(margin, 4)
	}
	acct.AccountIMRate, acct.AccountIMRateByMp = imRate.String(), imRate.String()
	acct.AccountMMRate, acct.AccountMMRateByMp = mmRate.String(), mmRate.String()
	acct.TotalEquity = num(totEquity)
	acct.TotalWalletBalance = num(totWallet)
	acct.TotalMarginBalance = num(margin)
	acct.TotalAvailableBalance = num(avail)
	acct.TotalPerpUPL = num(totUPL)
	acct.TotalInitialMargin, acct.TotalInitialMarginByMp = num(totIM), num(totIM)
	acct.TotalMaintenanceMargin, acct.TotalMaintenanceMarginByMp = num(totMM), num(totMM)
	return acct
}

// GET /v5/position/list

type pagedResult struct {
	Category       string `json:"category"`
	NextPageCursor string `json:"nextPageCursor"`
	List           []any  `json:"list"`
}

type positionJSON struct {
	PositionIdx            int    `json:"positionIdx"`
	RiskID                 int    `json:"riskId"`
	RiskLimitValue         string `json:"riskLimitValue"`
	Symbol                 string `json:"symbol"`
	Side                   string `json:"side"`
	Size                   string `json:"size"`
	AvgPrice               string `json:"avgPrice"`
	PositionValue          string `json:"positionValue"`
	TradeMode              int    `json:"tradeMode"`
	PositionStatus         string `json:"positionStatus"`
	AutoAddMargin          int    `json:"autoAddMargin"`
	AdlRankIndicator       int    `json:"adlRankIndicator"`
	Leverage               string `json:"leverage"`
	PositionBalance        string `json:"positionBalance"`
	MarkPrice              string `json:"markPrice"`
	LiqPrice               string `json:"liqPrice"`
	BustPrice              string `json:"bustPrice"`
	PositionMM             string `json:"positionMM"`
	PositionMMByMp         string `json:"positionMMByMp"`
	PositionIM             string `json:"positionIM"`
	PositionIMByMp         string `json:"positionIMByMp"`
	TpslMode               string `json:"tpslMode"`
	TakeProfit             string `json:"takeProfit"`
	StopLoss               string `json:"stopLoss"`
	TrailingStop           string `json:"trailingStop"`
	SessionAvgPrice        string `json:"sessionAvgPrice"`
	Delta                  string `json:"delta"`
	Gamma                  string `json:"gamma"`
	Vega                   string `json:"vega"`
	Theta                  string `json:"theta"`
	UnrealisedPnl          string `json:"unrealisedPnl"`
	CurRealisedPnl         string `json:"curRealisedPnl"`
	CumRealisedPnl         string `json:"cumRealisedPnl"`
	Seq                    int64  `json:"seq"`
	IsReduceOnly           bool   `json:"isReduceOnly"`
	MmrSysUpdatedTime      string `json:"mmrSysUpdatedTime"`
	LeverageSysUpdatedTime string `json:"leverageSysUpdatedTime"`
	CreatedTime            string `json:"createdTime"`
	UpdatedTime            string `json:"updatedTime"`
	BreakEvenPrice         string `json:"breakEvenPrice"`
	OpenTime               int64  `json:"openTime"`
}

// priceOrEmpty renders an optional price: "" when zero (unset).
func priceOrEmpty(d decimal.Decimal, places int32) string {
	if d.IsZero() {
		return ""
	}
	return fixed(d, places)
}

func (s *Sim) positionRow(v positionView) positionJSON {
	p, in := v.p, v.in
	lev := p.leverage
	if !lev.IsPositive() {
		lev = defaultLeverage
	}
	row := positionJSON{
		PositionIdx:            p.idx,
		RiskID:                 1,
		RiskLimitValue:         "2000000",
		Symbol:                 p.symbol,
		Side:                   "",
		Size:                   fixed(p.size, in.qtyScale),
		AvgPrice:               "0",
		PositionValue:          "",
		PositionStatus:         "Normal",
		Leverage:               lev.String(),
		PositionBalance:        "0",
		MarkPrice:              fixed(v.mark, in.priceScale),
		PositionMM:             "0",
		PositionMMByMp:         "0",
		PositionIM:             "0",
		PositionIMByMp:         "0",
		TpslMode:               "Full",
		TakeProfit:             priceOrEmpty(p.takeProfit, in.priceScale),
		StopLoss:               priceOrEmpty(p.stopLoss, in.priceScale),
		TrailingStop:           "0",
		CurRealisedPnl:         "0",
		CumRealisedPnl:         num(p.cumRealisedPnl),
		Seq:                    -1,
		MmrSysUpdatedTime:      "",
		LeverageSysUpdatedTime: "",
		CreatedTime:            itoa(p.createdMs),
		UpdatedTime:            itoa(p.updatedMs),
	}
	if p.seq > 0 {
		row.Seq = int64(p.seq)
	}
	if p.size.IsPositive() {
		row.Side = p.side
		row.AvgPrice = p.avgPrice.String()
		row.PositionValue = num(v.value)
		row.AdlRankIndicator = 2
		row.PositionBalance = num(v.im)
		row.LiqPrice = priceOrEmpty(v.liq, in.priceScale)
		row.PositionMM, row.PositionMMByMp = num(v.mm), num(v.mm)
		row.PositionIM, row.PositionIMByMp = num(v.im), num(v.im)
		row.UnrealisedPnl = num(v.upl)
		row.BreakEvenPrice = fixed(v.be, in.priceScale)
		row.OpenTime = p.createdMs
	}
	return row
}

func (s *Sim) positionList(c *call) response {
	if _, r := categoryParam(c, "", catLinear); r != nil {
		return *r
	}
	sym, settle := c.query.Get("symbol"), c.query.Get("settleCoin")
	var in *instrument
	switch {
	case sym != "":
		if in = s.catalog.get(catLinear, sym); in == nil {
			return fail(codeParams, msgSymbolInvalid)
		}
	case settle == "":
		return fail(codeParams, msgLinearNeedsSym)
	}
	limit, r := intParam(c, "limit", 20, 1, 200)
	if r != nil {
		return *r
	}
	cur, r := s.cursorParam(c)
	if r != nil {
		return *r
	}
	sec := c.nowSec()
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	l := c.accountLedgerLocked()
	var rows []*simPosition
	if in != nil {
		idxs := []int{0}
		if l.hedgeSymbolLocked(sym) {
			idxs = []int{1, 2}
		}
		for _, idx := range idxs {
			if p := l.positions[posKey{sym, idx}]; p != nil {
				rows = append(rows, p)
				continue
			}
			rows = append(rows, &simPosition{symbol: sym, idx: idx,
				leverage: l.leverageForLocked(sym), createdMs: nowMs, updatedMs: nowMs})
		}
	} else {
		for _, p := range l.sortedPositionsLocked() {
			pin := s.catalog.get(catLinear, p.symbol)
			if pin != nil && pin.quote == settle && p.size.IsPositive() {
				rows = append(rows, p)
			}
		}
	}
	// Copy what the rows show while the lock is held.
	copies := make([]simPosition, len(rows))
	for i, p := range rows {
		copies[i] = *p
	}
	s.mu.Unlock()

	key := func(p simPosition) cursorPos { return cursorPos{K: p.symbol, S: uint64(p.idx)} }
	page, next := paginate(s, c, copies, key, bySymbol, cur, int(limit))
	list := make([]any, 0, len(page))
	for i := range page {
		p := &page[i]
		list = append(list, s.positionRow(s.viewPosition(s.catalog.get(catLinear, p.symbol), p, sec)))
	}
	return ok(pagedResult{Category: catLinear, NextPageCursor: next, List: list})
}

// Orders: shared filters of /v5/order/realtime and /v5/order/history.

type orderJSON struct {
	OrderID               string            `json:"orderId"`
	OrderLinkID           string            `json:"orderLinkId"`
	BlockTradeID          string            `json:"blockTradeId"`
	ParentOrderLinkID     string            `json:"parentOrderLinkId"`
	Symbol                string            `json:"symbol"`
	Price                 string            `json:"price"`
	Qty                   string            `json:"qty"`
	Side                  string            `json:"side"`
	IsLeverage            string            `json:"isLeverage"`
	PositionIdx           int               `json:"positionIdx"`
	OrderStatus           string            `json:"orderStatus"`
	CreateType            string            `json:"createType,omitempty"`
	CancelType            string            `json:"cancelType"`
	RejectReason          string            `json:"rejectReason"`
	AvgPrice              string            `json:"avgPrice"`
	LeavesQty             string            `json:"leavesQty"`
	LeavesValue           string            `json:"leavesValue"`
	CumExecQty            string            `json:"cumExecQty"`
	CumExecValue          string            `json:"cumExecValue"`
	CumExecFee            string            `json:"cumExecFee"`
	CumFeeDetail          map[string]string `json:"cumFeeDetail"`
	TimeInForce           string            `json:"timeInForce"`
	OrderType             string            `json:"orderType"`
	StopOrderType         string            `json:"stopOrderType"`
	OrderIv               string            `json:"orderIv"`
	MarketUnit            string            `json:"marketUnit"`
	SlippageToleranceType string            `json:"slippageToleranceType"`
	SlippageTolerance     string            `json:"slippageTolerance"`
	TriggerPrice          string            `json:"triggerPrice"`
	TakeProfit            string            `json:"takeProfit"`
	StopLoss              string            `json:"stopLoss"`
	TpslMode              string            `json:"tpslMode"`
	OcoTriggerBy          string            `json:"ocoTriggerBy"`
	TpLimitPrice          string            `json:"tpLimitPrice"`
	SlLimitPrice          string            `json:"slLimitPrice"`
	TpTriggerBy           string            `json:"tpTriggerBy"`
	SlTriggerBy           string            `json:"slTriggerBy"`
	TriggerDirection      int               `json:"triggerDirection"`
	TriggerBy             string            `json:"triggerBy"`
	LastPriceOnCreated    string            `json:"lastPriceOnCreated"`
	BasePrice             string            `json:"basePrice"`
	ReduceOnly            bool              `json:"reduceOnly"`
	CloseOnTrigger        bool              `json:"closeOnTrigger"`
	PlaceType             string            `json:"placeType"`
	SmpType               string            `json:"smpType"`
	SmpGroup              int               `json:"smpGroup"`
	SmpOrderID            string            `json:"smpOrderId"`
	CreatedTime           string            `json:"createdTime"`
	UpdatedTime           string            `json:"updatedTime"`
	ExtraFees             string            `json:"extraFees"`
}

func (s *Sim) orderRow(o *simOrder) orderJSON {
	in := s.catalog.get(o.category, o.symbol)
	ps, qs := in.priceScale, in.qtyScale
	leaves := o.leavesQty()
	row := orderJSON{
		OrderID:               o.orderID,
		OrderLinkID:           o.orderLinkID,
		Symbol:                o.symbol,
		Price:                 fixed(o.price, ps),
		Qty:                   fixed(o.qty, qs),
		Side:                  o.side,
		PositionIdx:           o.positionIdx,
		OrderStatus:           o.status,
		CancelType:            o.cancelType,
		RejectReason:          o.rejectReason,
		LeavesQty:             fixed(leaves, qs),
		LeavesValue:           num(leaves.Mul(o.price)),
		CumExecQty:            fixed(o.cumExecQty, qs),
		CumExecValue:          num(o.cumExecValue),
		CumExecFee:            num(o.cumExecFee),
		CumFeeDetail:          map[string]string{},
		TimeInForce:           o.timeInForce,
		OrderType:             o.orderType,
		SlippageToleranceType: "UNKNOWN",
		SlippageTolerance:     "0",
		StopOrderType:         o.stopOrderType,
		TakeProfit:            priceOrEmpty(o.takeProfit, ps),
		StopLoss:              priceOrEmpty(o.stopLoss, ps),
		CloseOnTrigger:        o.closeOnTrigger,
		ReduceOnly:            o.reduceOnly,
		SmpType:               "None",
		CreatedTime:           itoa(o.createdMs),
		UpdatedTime:           itoa(o.updatedMs),
	}
	if !o.cumExecFee.IsZero() {
		row.CumFeeDetail[o.feeCoin] = num(o.cumExecFee)
	}
	if o.quoteQty {
		// A spot buy by value: qty and leavesValue are quote amounts.
		row.LeavesQty = fixed(decimal.Zero, qs)
		row.LeavesValue = num(o.qty.Sub(o.cumExecValue))
	}
	if o.slipType != "" {
		row.SlippageToleranceType, row.SlippageTolerance = o.slipType, o.slip
	}
	if o.category == catSpot {
		row.IsLeverage = "0"
		row.AvgPrice = fixed(o.avgPrice, ps)
		row.TriggerPrice = fixed(decimal.Zero, ps)
		if o.orderType == "Market" {
			row.Price = "0" // spot shows no protection price (recorded sample §14)
			row.MarketUnit = "baseCoin"
			if o.marketUnit != "" {
				row.MarketUnit = o.marketUnit
			}
		}
	} else {
		row.CreateType = "CreateByUser"
		if o.createType != "" {
			row.CreateType = o.createType
		}
		if !o.takeProfit.IsZero() || !o.stopLoss.IsZero() {
			row.TpslMode = "Full"
			row.TpTriggerBy, row.SlTriggerBy = "LastPrice", "LastPrice"
		}
		row.TpLimitPrice, row.SlLimitPrice = "0", "0"
		row.LastPriceOnCreated = fixed(o.lastPriceOnCreated, ps)
		if o.avgPrice.IsPositive() {
			row.AvgPrice = o.avgPrice.String()
		}
	}
	return row
}

// orderFilters are the row filters common to both order endpoints.
type orderFilters struct {
	category, symbol, baseCoin, settleCoin, orderID, orderLinkID, status string
	none                                                                 bool // orderFilter names a kind the simulator never has
}

// parseOrderFilters reads category, symbol, baseCoin, settleCoin, orderId,
// orderLinkId and orderFilter.
func (s *Sim) parseOrderFilters(c *call) (orderFilters, *response) {
	cat, r := categoryParam(c, "", catSpot, catLinear)
	if r != nil {
		return orderFilters{}, r
	}
	f := orderFilters{
		category:    cat,
		symbol:      c.query.Get("symbol"),
		baseCoin:    c.query.Get("baseCoin"),
		settleCoin:  c.query.Get("settleCoin"),
		orderID:     c.query.Get("orderId"),
		orderLinkID: c.query.Get("orderLinkId"),
	}
	if f.symbol != "" && s.catalog.get(cat, f.symbol) == nil {
		r := fail(codeParams, msgSymbolInvalid)
		return f, &r
	}
	if cat == catSpot && f.settleCoin != "" {
		r := fail(codeParams, msgSpotSettleCoin)
		return f, &r
	}
	switch of := c.query.Get("orderFilter"); of {
	case "", "Order":
	case "StopOrder", "tpslOrder", "OcoOrder", "BidirectionalTpslOrder":
		f.none = true
	default:
		r := fail(codeParams, "params error: orderFilter is invalid")
		return f, &r
	}
	return f, nil
}

// match applies the filters to an order; an order id wins over the client
// order id, which wins over symbol, baseCoin and settleCoin.
func (s *Sim) matchOrder(f orderFilters, o *simOrder) bool {
	if f.none || o.category != f.category {
		return false
	}
	switch {
	case f.orderID != "":
		return o.orderID == f.orderID
	case f.orderLinkID != "":
		return o.orderLinkID == f.orderLinkID
	}
	in := s.catalog.get(o.category, o.symbol)
	return (f.symbol == "" || o.symbol == f.symbol) &&
		(f.baseCoin == "" || in.baseCoin == f.baseCoin) &&
		(f.settleCoin == "" || in.quote == f.settleCoin)
}

func orderKey(o *simOrder) cursorPos { return cursorPos{T: o.createdMs, S: o.seq} }

// GET /v5/order/realtime

func (s *Sim) orderRealtime(c *call) response {
	f, r := s.parseOrderFilters(c)
	if r != nil {
		return *r
	}
	if f.category == catLinear && f.symbol == "" && f.baseCoin == "" && f.settleCoin == "" &&
		f.orderID == "" && f.orderLinkID == "" {
		return fail(codeParams, msgOrdersNeedSym)
	}
	openOnly, r := intParam(c, "openOnly", 0, 0, 1)
	if r != nil {
		return *r
	}
	limit, r := intParam(c, "limit", 20, 1, 50)
	if r != nil {
		return *r
	}
	cur, r := s.cursorParam(c)
	if r != nil {
		return *r
	}
	byID := f.orderID != "" || f.orderLinkID != ""

	s.mu.Lock()
	l := c.accountLedgerLocked()
	// The closed orders realtime still shows: the 500 most recently
	// updated of the category.
	var closed []*simOrder
	for _, o := range l.orders {
		if !o.open() && o.status != statusCreated && o.category == f.category {
			closed = append(closed, o)
		}
	}
	sort.SliceStable(closed, func(i, j int) bool { return closed[i].updatedMs > closed[j].updatedMs })
	retained := make(map[*simOrder]bool, min(len(closed), closedRetained))
	for i := 0; i < len(closed) && i < closedRetained; i++ {
		retained[closed[i]] = true
	}
	var rows []*simOrder
	for _, o := range l.orders {
		if !s.matchOrder(f, o) {
			continue
		}
		if o.status != statusCreated && (o.open() || ((byID || openOnly == 1) && retained[o])) {
			cp := *o
			rows = append(rows, &cp)
		}
	}
	s.mu.Unlock()

	return s.orderPage(c, f.category, rows, cur, int(limit))
}

// orderPage answers one page of orders, newest first, for realtime and
// history alike.
func (s *Sim) orderPage(c *call, category string, rows []*simOrder, cur *cursorPos, limit int) response {
	page, next := paginate(s, c, rows, orderKey, newestFirst, cur, limit)
	list := make([]any, 0, len(page))
	for _, o := range page {
		list = append(list, s.orderRow(o))
	}
	return ok(pagedResult{Category: category, NextPageCursor: next, List: list})
}

// windowParams resolves startTime/endTime by the 7-day rules of reference
// §5.6: neither → the last 7 days; only start → [start, start+7d]; only
// end → [end−7d, end]; both → end−start ≤ 7 days, else 10001.
func windowParams(c *call) (startMs, endMs int64, resp *response) {
	parse := func(name string) (int64, bool, *response) {
		v := c.query.Get(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			r := fail(codeParams, "params error: "+name+" must be a timestamp in milliseconds")
			return 0, false, &r
		}
		return n, true, nil
	}
	start, hasStart, r := parse("startTime")
	if r != nil {
		return 0, 0, r
	}
	end, hasEnd, r := parse("endTime")
	if r != nil {
		return 0, 0, r
	}
	switch {
	case hasStart && hasEnd:
		if end < start {
			r := fail(codeParams, msgWindowReversed)
			return 0, 0, &r
		}
		if end-start > historyWindowMs {
			r := fail(codeParams, msgWindowTooLong)
			return 0, 0, &r
		}
		return start, end, nil
	case hasStart:
		return start, start + historyWindowMs, nil
	case hasEnd:
		return end - historyWindowMs, end, nil
	default:
		now := c.now.UnixMilli()
		return now - historyWindowMs, now, nil
	}
}

// GET /v5/order/history

func (s *Sim) orderHistory(c *call) response {
	f, r := s.parseOrderFilters(c)
	if r != nil {
		return *r
	}
	f.status = c.query.Get("orderStatus")
	if f.status != "" && !knownOrderStatuses[f.status] {
		return fail(codeParams, "params error: orderStatus is invalid")
	}
	start, end, r := windowParams(c)
	if r != nil {
		return *r
	}
	limit, r := intParam(c, "limit", 20, 1, 50)
	if r != nil {
		return *r
	}
	cur, r := s.cursorParam(c)
	if r != nil {
		return *r
	}
	now := c.now.UnixMilli()

	s.mu.Lock()
	l := c.accountLedgerLocked()
	var rows []*simOrder
	for _, o := range l.orders {
		if o.open() || o.status == statusCreated || !s.matchOrder(f, o) || (f.status != "" && o.status != f.status) {
			continue
		}
		if o.createdMs < start || o.createdMs > end {
			continue
		}
		filled := o.cumExecQty.IsPositive()
		switch o.status {
		case "Cancelled", "Rejected", "Deactivated":
			// Unfilled cancels stay visible for 24 hours only.
			if !filled && o.updatedMs < now-unfilledVisibleMs {
				continue
			}
		}
		if o.createdMs < now-historyWindowMs && !filled {
			// Beyond 7 days only orders with fills are kept.
			continue
		}
		cp := *o
		rows = append(rows, &cp)
	}
	s.mu.Unlock()

	return s.orderPage(c, f.category, rows, cur, int(limit))
}

// GET /v5/execution/list

type executionJSON struct {
	Symbol          string `json:"symbol"`
	OrderID         string `json:"orderId"`
	OrderLinkID     string `json:"orderLinkId"`
	Side            string `json:"side"`
	OrderPrice      string `json:"orderPrice"`
	OrderQty        string `json:"orderQty"`
	LeavesQty       string `json:"leavesQty"`
	CreateType      string `json:"createType,omitempty"`
	OrderType       string `json:"orderType"`
	StopOrderType   string `json:"stopOrderType"`
	ExecFee         string `json:"execFee"`
	ExecFeeV2       string `json:"execFeeV2"`
	ExecID          string `json:"execId"`
	ExecPrice       string `json:"execPrice"`
	ExecQty         string `json:"execQty"`
	ExecType        string `json:"execType"`
	ExecValue       string `json:"execValue"`
	ExecTime        string `json:"execTime"`
	FeeCurrency     string `json:"feeCurrency"`
	IsMaker         bool   `json:"isMaker"`
	FeeRate         string `json:"feeRate"`
	TradeIv         string `json:"tradeIv"`
	MarkIv          string `json:"markIv"`
	MarkPrice       string `json:"markPrice"`
	IndexPrice      string `json:"indexPrice"`
	UnderlyingPrice string `json:"underlyingPrice"`
	BlockTradeID    string `json:"blockTradeId"`
	ClosedSize      string `json:"closedSize"`
	Seq             int64  `json:"seq"`
	ExtraFees       string `json:"extraFees"`
	MarketUnit      string `json:"marketUnit"`
}

func (s *Sim) executionRow(e *simExecution) executionJSON {
	in := s.catalog.get(e.category, e.symbol)
	ps, qs := in.priceScale, in.qtyScale
	row := executionJSON{
		Symbol:        e.symbol,
		OrderID:       e.orderID,
		OrderLinkID:   e.orderLinkID,
		Side:          e.side,
		OrderPrice:    fixed(e.orderPrice, ps),
		OrderQty:      fixed(e.orderQty, qs),
		LeavesQty:     fixed(e.leavesQty, qs),
		OrderType:     e.orderType,
		StopOrderType: "UNKNOWN",
		ExecFee:       num(e.execFee),
		ExecFeeV2:     "",
		ExecID:        e.execID,
		ExecPrice:     e.execPrice.String(),
		ExecQty:       fixed(e.execQty, qs),
		ExecType:      e.execType,
		ExecValue:     num(e.execValue),
		ExecTime:      itoa(e.execMs),
		FeeCurrency:   e.feeCurrency,
		IsMaker:       e.isMaker,
		FeeRate:       e.feeRate.String(),
		Seq:           int64(e.seq),
	}
	if e.category == catSpot {
		row.StopOrderType = ""
		row.MarketUnit = "baseCoin"
	} else {
		row.CreateType = "CreateByUser"
		if e.createType != "" {
			row.CreateType = e.createType
		}
		if e.stopOrder != "" {
			row.StopOrderType = e.stopOrder
		}
		row.MarkPrice = fixed(e.markPrice, ps)
		row.ClosedSize = fixed(e.closedSize, qs)
	}
	return row
}

func (s *Sim) executionList(c *call) response {
	cat, r := categoryParam(c, "", catSpot, catLinear)
	if r != nil {
		return *r
	}
	sym, baseCoin, settle := c.query.Get("symbol"), c.query.Get("baseCoin"), c.query.Get("settleCoin")
	orderID, link, execType := c.query.Get("orderId"), c.query.Get("orderLinkId"), c.query.Get("execType")
	if sym != "" && s.catalog.get(cat, sym) == nil {
		return fail(codeParams, msgSymbolInvalid)
	}
	if cat == catSpot && settle != "" {
		return fail(codeParams, msgSpotSettleCoin)
	}
	start, end, r := windowParams(c)
	if r != nil {
		return *r
	}
	limit, r := intParam(c, "limit", 50, 1, 100)
	if r != nil {
		return *r
	}
	cur, r := s.cursorParam(c)
	if r != nil {
		return *r
	}

	s.mu.Lock()
	l := c.accountLedgerLocked()
	var rows []*simExecution
	for _, e := range l.execs {
		if e.category != cat || e.execMs < start || e.execMs > end || (execType != "" && e.execType != execType) {
			continue
		}
		in := s.catalog.get(e.category, e.symbol)
		switch {
		case orderID != "":
			if e.orderID != orderID {
				continue
			}
		case link != "":
			if e.orderLinkID != link {
				continue
			}
		default:
			if (sym != "" && e.symbol != sym) || (baseCoin != "" && in.baseCoin != baseCoin) ||
				(settle != "" && in.quote != settle) {
				continue
			}
		}
		cp := *e
		rows = append(rows, &cp)
	}
	s.mu.Unlock()

	key := func(e *simExecution) cursorPos { return cursorPos{T: e.execMs, S: e.seq} }
	page, next := paginate(s, c, rows, key, newestFirst, cur, int(limit))
	list := make([]any, 0, len(page))
	for _, e := range page {
		list = append(list, s.executionRow(e))
	}
	return ok(pagedResult{Category: cat, NextPageCursor: next, List: list})
}
