package sim

import (
	"github.com/shopspring/decimal"
)

// Trade and position write endpoints (docs/bybit.md "Trade endpoints", "Position endpoints"). All
// signed POST, all refused with 10005 for a read-only key (route.write).
// Each one validates synchronously (a refusal changes nothing), then
// accepts: the change is a command applied at accept time +
// Config.VisibilityDelay (engine.go), and the answer is only the ids.
//
//	POST /v5/order/create          -> {"orderId","orderLinkId"}
//	POST /v5/order/amend           -> {"orderId","orderLinkId"}
//	POST /v5/order/cancel          -> {"orderId","orderLinkId"}
//	POST /v5/order/cancel-all      -> {"list":[{"orderId","orderLinkId"}],"success":"1"}
//	POST /v5/position/set-leverage -> {}
//	POST /v5/position/trading-stop -> {}

type orderIDResult struct {
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
}

type cancelAllResult struct {
	List    []orderIDResult `json:"list"`
	Success string          `json:"success"`
}

const msgPositionIdx = "position idx not match position mode"

// POST /v5/order/create

func (s *Sim) orderCreate(c *call) response {
	p, bad := parseParams(c.body)
	if bad != nil {
		return *bad
	}
	f, bad := p.strings("category", "symbol", "side", "orderType", "qty", "price", "timeInForce", "orderLinkId",
		"takeProfit", "stopLoss", "marketUnit", "triggerPrice", "tpslMode", "slippageToleranceType", "slippageTolerance", "orderFilter")
	if bad != nil {
		return *bad
	}
	reduceOnly, ok1 := p.flag("reduceOnly")
	closeOnTrigger, ok2 := p.flag("closeOnTrigger")
	posIdx, ok3 := p.integer("positionIdx")
	if !ok1 || !ok2 {
		return fail(codeParams, "params error: reduceOnly and closeOnTrigger must be booleans")
	}
	if !ok3 {
		return fail(codeParams, "params error: positionIdx must be an integer")
	}
	cat := f["category"]
	if r := orderCategory(cat); r != nil {
		return *r
	}
	in, bad := s.orderInstrument(cat, f["symbol"])
	if bad != nil {
		return *bad
	}
	side := f["side"]
	if side != "Buy" && side != "Sell" {
		return *refuse(cat, codeParams, "params error: side must be Buy or Sell", codeSpotSide, "Invalid side.")
	}
	typ := f["orderType"]
	if typ != "Market" && typ != "Limit" {
		return *refuse(cat, codeParams, "params error: orderType must be Market or Limit", codeSpotOrderType, "Invalid orderType.")
	}
	tif := f["timeInForce"]
	switch tif {
	case "":
		tif = "GTC"
	case "GTC", "IOC", "FOK", "PostOnly":
	default:
		return *refuse(cat, codeParams, "params error: timeInForce must be GTC, IOC, FOK or PostOnly", codeSpotTIF, "Invalid timeInForce.")
	}
	market := typ == "Market"
	if market {
		tif = "IOC" // Bybit runs every market order as IOC
	}
	switch {
	case f["triggerPrice"] != "":
		return fail(codeParams, "params error: conditional orders (triggerPrice) are not simulated")
	case cat == catSpot && f["orderFilter"] != "" && f["orderFilter"] != "Order":
		return fail(codeParams, "params error: orderFilter "+f["orderFilter"]+" is not simulated")
	case f["tpslMode"] != "" && f["tpslMode"] != "Full":
		return fail(codeParams, "params error: only tpslMode Full is simulated")
	case cat == catLinear && posIdx != 0:
		return fail(codeParams, msgPositionIdx)
	case cat == catSpot && reduceOnly:
		return fail(codeParams, "params error: reduceOnly is for derivatives only")
	case f["orderLinkId"] != "" && !linkIDPattern.MatchString(f["orderLinkId"]):
		return fail(codeParams, "params error: orderLinkId must be 1 to 36 characters of [0-9A-Za-z_-]")
	case cat == catSpot && (f["takeProfit"] != "" || f["stopLoss"] != ""):
		return fail(codeParams, "params error: spot TP/SL orders are not simulated")
	case reduceOnly && (f["takeProfit"] != "" || f["stopLoss"] != ""):
		return fail(codeParams, "params error: takeProfit and stopLoss are not allowed on a reduce-only order")
	}
	unit := ""
	if cat == catSpot && market {
		unit = f["marketUnit"]
		switch unit {
		case "":
			unit = "baseCoin"
			if side == "Buy" {
				unit = "quoteCoin" // a spot market buy is by value unless told otherwise
			}
		case "baseCoin", "quoteCoin":
		default:
			return fail(codeParams, "params error: marketUnit must be baseCoin or quoteCoin")
		}
	}
	quote := unit == "quoteCoin"
	slipType, slip := f["slippageToleranceType"], f["slippageTolerance"]
	if slipType != "" || slip != "" {
		if r := checkSlippage(market, slipType, slip); r != nil {
			return *r
		}
	}
	qty, okQ := positiveDecimal(f["qty"])
	if !okQ {
		return fail(codeParams, "params error: qty must be a positive decimal")
	}
	if r := checkQty(in, qty, market, quote); r != nil {
		return *r
	}
	sec := c.nowSec()
	var price decimal.Decimal
	ref := s.model.last(in, sec)
	if !market {
		if f["price"] == "" {
			return fail(codeParams, "params error: price is required for a Limit order")
		}
		var r *response
		if price, r = s.checkPrice(in, side, f["price"], sec); r != nil {
			return *r
		}
		ref = price
	}
	value := qty.Mul(ref)
	if quote {
		value = qty
	}
	if cat == catLinear && !reduceOnly && value.LessThan(decimal.RequireFromString(in.minNotionalValue)) {
		return fail(codeMinNotional, "Order does not meet minimum order value "+in.minNotionalValue+"USDT")
	}
	if cat == catSpot && value.LessThan(decimal.RequireFromString(in.minOrderAmt)) {
		return fail(codeSpotValueMin, "Order value exceeded lower limit.")
	}
	tp, sl, bad := checkTPSL(in, side, f["takeProfit"], f["stopLoss"], ref)
	if bad != nil {
		return *bad
	}
	link := f["orderLinkId"]
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	defer s.unlockAndFlush()
	s.advanceLocked(c.now)
	a := c.key.acct
	l := a.ledgerLocked()
	if cat == catLinear && l.hedgeSymbolLocked(in.symbol) {
		return fail(codeParams, msgPositionIdx)
	}
	if l.orderByLinkLocked(cat, link) != nil {
		return *refuse(cat, codeDuplicateLink, "OrderLinkedID is duplicate", codeSpotDuplicate, "Duplicate clientOrderId.")
	}
	if r := s.checkFundsLocked(l, in, side, qty, ref, market, quote, reduceOnly, sec); r != nil {
		return *r
	}

	o := &simOrder{
		seq: l.nextSeqLocked(), category: cat, symbol: in.symbol, orderLinkID: link,
		side: side, orderType: typ, timeInForce: tif, price: price, qty: qty,
		status: statusCreated, rejectReason: reasonNone, cancelType: cancelUnknown,
		reduceOnly: reduceOnly, closeOnTrigger: closeOnTrigger,
		marketUnit: unit, quoteQty: quote, takeProfit: tp, stopLoss: sl,
		slipType: slipType, slip: slip, createdMs: nowMs, updatedMs: nowMs,
	}
	o.orderID = s.newOrderID(cat, a.uid, o.seq)
	if cat == catSpot && link == "" {
		o.orderLinkID = s.newSpotLinkID(a.uid, o.seq)
	}
	l.addOrderLocked(o)
	s.markChangedLocked()
	s.orders = append(s.orders, orderRecord{
		OrderID: o.orderID, OrderLinkID: o.orderLinkID, APIKey: c.key.key, Category: cat, Symbol: in.symbol,
		Side: side, OrderType: typ, Qty: f["qty"], Price: f["price"], Status: statusCreated,
		AcceptedAt: c.now.UTC().Format("2006-01-02T15:04:05.000Z07:00"), order: o,
	})
	if len(s.orders) >= 2*maxOrderRecords {
		// GET /sim/orders lists the newest maxOrderRecords (D145).
		n := copy(s.orders, s.orders[len(s.orders)-maxOrderRecords:])
		clear(s.orders[n:])
		s.orders = s.orders[:n]
	}
	s.enqueueLocked(nowMs, func(at int64) { s.applyCreateLocked(a, o, at) })
	s.startSweeper()
	return ok(orderIDResult{OrderID: o.orderID, OrderLinkID: o.orderLinkID})
}

// checkSlippage validates slippageToleranceType/slippageTolerance (market
// orders only): TickSize 1..10000, Percent 0.01..10.
func checkSlippage(market bool, typ, v string) *response {
	bad := func(msg string) *response { r := fail(codeParams, "params error: "+msg); return &r }
	if !market {
		return bad("slippageTolerance is for Market orders only")
	}
	d, ok := positiveDecimal(v)
	switch {
	case !ok:
		return bad("slippageTolerance must be a positive decimal")
	case typ == "TickSize" && (!d.IsInteger() || d.GreaterThan(decimal.NewFromInt(10000))):
		return bad("slippageTolerance for TickSize must be an integer in [1, 10000]")
	case typ == "Percent" && (d.LessThan(decimal.RequireFromString("0.01")) || d.GreaterThan(decimal.NewFromInt(10))):
		return bad("slippageTolerance for Percent must be in [0.01, 10]")
	case typ != "TickSize" && typ != "Percent":
		return bad("slippageToleranceType must be TickSize or Percent")
	}
	return nil
}

// checkFundsLocked refuses an order the account cannot pay for: linear
// needs initial margin (the opening part / leverage) plus the taker fee
// in available USDT (110007); a reduce-only order needs a position on the
// other side (110017); spot needs the quote (buy) or base (sell) coin free
// (170131).
func (s *Sim) checkFundsLocked(l *ledger, in *instrument, side string, qty, ref decimal.Decimal, market, quote, reduceOnly bool, sec int64) *response {
	if in.category == catLinear {
		pos := positionLocked(l, in.symbol)
		if reduceOnly {
			if pos == nil || pos.side == side {
				r := fail(codeReduceOnly, "Reduce-only rule not satisfied")
				return &r
			}
			return nil
		}
		opening := qty
		if pos != nil && pos.side != side {
			opening = decimal.Max(decimal.Zero, qty.Sub(pos.size))
		}
		need := opening.Mul(ref).Div(l.leverageForLocked(in.symbol)).Add(qty.Mul(ref).Mul(linearTakerFee))
		if need.GreaterThan(s.availableLocked(l, in.quote, sec)) {
			r := fail(codeBalance, "ab not enough for new order")
			return &r
		}
		return nil
	}
	var coin string
	var need decimal.Decimal
	switch {
	case side == "Sell":
		coin, need = in.baseCoin, qty
	case quote:
		coin, need = in.quote, qty
	case market:
		coin, need = in.quote, qty.Mul(s.protectionPrice(in, side, "", "", sec))
	default:
		coin, need = in.quote, qty.Mul(ref)
	}
	if need.GreaterThan(s.availableLocked(l, coin, sec)) {
		r := fail(codeSpotBalance, "Insufficient balance.")
		return &r
	}
	return nil
}

// applyCreateLocked puts an accepted order into play at ms: it becomes
// New, a Market order gets its protection price, and it takes what it can.
func (s *Sim) applyCreateLocked(a *account, o *simOrder, ms int64) {
	if o.status != statusCreated {
		return
	}
	l := a.ledgerLocked()
	in := s.catalog.get(o.category, o.symbol)
	sec := floorDiv(ms, 1000)
	o.status, o.updatedMs = statusNew, ms
	o.lastPriceOnCreated = s.model.last(in, sec)
	if o.orderType == "Market" {
		o.price = s.protectionPrice(in, o.side, o.slipType, o.slip, sec)
	}
	ev := s.newEvent(a, o.category, ms)
	ev.order(o)
	if o.reduceOnly && reduceCapLocked(l, o).IsZero() {
		// The position went away between accept and apply.
		s.closeOrderLocked(ev, o, statusCancelled, reasonNone, cancelReduceOnly, ms)
	} else {
		s.takeLocked(ev, l, o, in, sec, ms)
	}
	if o.category == catLinear {
		ev.position(o.symbol)
	}
	ev.close()
}

// findOrderLocked finds the order of an amend or cancel: orderId wins over
// orderLinkId; it must be of the category and symbol and still working
// (or accepted and not yet applied).
func findOrderLocked(l *ledger, cat, sym, id, link string) *simOrder {
	var o *simOrder
	if id != "" {
		o = l.byID[id]
	} else {
		o = l.orderByLinkLocked(cat, link)
	}
	if o == nil || o.category != cat || o.symbol != sym || (!o.open() && o.status != statusCreated) {
		return nil
	}
	return o
}

// orderTarget reads the body of an amend or a cancel: the fields that name
// the order (category, symbol, orderId, orderLinkId) and those in extra. It
// checks the category and the instrument, and that an order is named.
func (s *Sim) orderTarget(c *call, extra ...string) (map[string]string, *instrument, *response) {
	p, bad := parseParams(c.body)
	if bad != nil {
		return nil, nil, bad
	}
	f, bad := p.strings(append([]string{"category", "symbol", "orderId", "orderLinkId"}, extra...)...)
	if bad != nil {
		return nil, nil, bad
	}
	if r := orderCategory(f["category"]); r != nil {
		return nil, nil, r
	}
	in, bad := s.orderInstrument(f["category"], f["symbol"])
	if bad != nil {
		return nil, nil, bad
	}
	if f["orderId"] == "" && f["orderLinkId"] == "" {
		r := fail(codeParams, "params error: orderId or orderLinkId is required")
		return nil, nil, &r
	}
	return f, in, nil
}

// POST /v5/order/amend

func (s *Sim) orderAmend(c *call) response {
	f, in, bad := s.orderTarget(c, "qty", "price", "takeProfit", "stopLoss", "triggerPrice")
	if bad != nil {
		return *bad
	}
	cat := f["category"]
	if f["qty"] == "" && f["price"] == "" && f["takeProfit"] == "" && f["stopLoss"] == "" {
		return fail(codeParams, "params error: nothing to amend: give qty, price, takeProfit or stopLoss")
	}
	if f["triggerPrice"] != "" {
		return fail(codeParams, "params error: conditional orders (triggerPrice) are not simulated")
	}
	if cat == catSpot && (f["takeProfit"] != "" || f["stopLoss"] != "") {
		return fail(codeParams, "params error: spot TP/SL orders are not simulated")
	}
	var newQty decimal.Decimal
	if f["qty"] != "" {
		q, okQ := positiveDecimal(f["qty"])
		if !okQ {
			return fail(codeParams, "params error: qty must be a positive decimal")
		}
		if r := checkQty(in, q, false, false); r != nil {
			return *r
		}
		newQty = q
	}
	sec := c.nowSec()
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	defer s.unlockAndFlush()
	s.advanceLocked(c.now)
	a := c.key.acct
	l := a.ledgerLocked()
	o := findOrderLocked(l, cat, in.symbol, f["orderId"], f["orderLinkId"])
	if o == nil || o.orderType != "Limit" {
		return *refuse(cat, codeOrderNotExists, "order not exists or too late to replace", codeSpotNotExists, "Order does not exist.")
	}
	if newQty.IsPositive() && !newQty.GreaterThan(o.cumExecQty) {
		return *refuse(cat, codeAmendQty, "The order remaining quantity must be greater than the filled quantity",
			codeSpotAmendQty, "Modified quantity cannot be less than the filled quantity.")
	}
	newPrice := o.price
	if f["price"] != "" {
		var r *response
		if newPrice, r = s.checkPrice(in, o.side, f["price"], sec); r != nil {
			return *r
		}
	}
	tp, sl := o.takeProfit, o.stopLoss
	if f["takeProfit"] != "" || f["stopLoss"] != "" {
		tpV, slV := f["takeProfit"], f["stopLoss"]
		if tpV == "" {
			tpV = priceOrEmpty(tp, in.priceScale)
		}
		if slV == "" {
			slV = priceOrEmpty(sl, in.priceScale)
		}
		var r *response
		if tp, sl, r = checkTPSL(in, o.side, tpV, slV, newPrice); r != nil {
			return *r
		}
	}
	priceChanged := f["price"] != ""
	s.enqueueLocked(nowMs, func(at int64) {
		if !o.open() {
			return // filled or cancelled in between: too late to replace
		}
		ev := s.newEvent(a, o.category, at)
		if newQty.IsPositive() && newQty.GreaterThan(o.cumExecQty) {
			o.qty = newQty
		}
		o.price, o.takeProfit, o.stopLoss, o.updatedMs = newPrice, tp, sl, at
		ev.order(o)
		if priceChanged && s.crossesBook(in, o.side, o.price, floorDiv(at, 1000)) {
			s.takeLocked(ev, l, o, in, floorDiv(at, 1000), at)
		}
		if o.category == catLinear {
			ev.position(o.symbol)
		}
		ev.close()
	})
	return ok(orderIDResult{OrderID: o.orderID, OrderLinkID: o.orderLinkID})
}

// POST /v5/order/cancel

func (s *Sim) orderCancel(c *call) response {
	f, in, bad := s.orderTarget(c, "orderFilter")
	if bad != nil {
		return *bad
	}
	cat := f["category"]
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	defer s.unlockAndFlush()
	s.advanceLocked(c.now)
	a := c.key.acct
	o := findOrderLocked(a.ledgerLocked(), cat, in.symbol, f["orderId"], f["orderLinkId"])
	if o == nil {
		return *refuse(cat, codeOrderNotExists, "Order does not exist", codeSpotNotExists, "Order does not exist.")
	}
	s.enqueueLocked(nowMs, func(at int64) { s.applyCancelLocked(a, []*simOrder{o}, at) })
	return ok(orderIDResult{OrderID: o.orderID, OrderLinkID: o.orderLinkID})
}

// applyCancelLocked cancels orders at ms. One that filled between accept
// and apply stays Filled; the refused cancel shows as a second Filled
// message with cancelType CancelByUser and EC_OrigClOrdIDDoesNotExist, as
// Bybit reports a cancel that lost the race (docs/bybit.md "Trade endpoints").
func (s *Sim) applyCancelLocked(a *account, list []*simOrder, ms int64) {
	if len(list) == 0 {
		return
	}
	ev := s.newEvent(a, list[0].category, ms)
	var late []*simOrder
	for _, o := range list {
		if !o.open() && o.status != statusCreated {
			if o.status == statusFilled {
				cp := *o
				cp.cancelType, cp.rejectReason = cancelByUser, reasonCancelledLate
				late = append(late, &cp)
			}
			continue
		}
		status := statusCancelled
		if o.category == catSpot && o.cumExecQty.IsPositive() {
			status = statusPFCancelled
		}
		s.closeOrderLocked(ev, o, status, reasonNone, cancelByUser, ms)
	}
	for _, o := range late {
		ev.order(o)
	}
	ev.close()
}

// POST /v5/order/cancel-all

func (s *Sim) orderCancelAll(c *call) response {
	p, bad := parseParams(c.body)
	if bad != nil {
		return *bad
	}
	f, bad := p.strings("category", "symbol", "baseCoin", "settleCoin", "orderFilter", "stopOrderType")
	if bad != nil {
		return *bad
	}
	cat := f["category"]
	if r := orderCategory(cat); r != nil {
		return *r
	}
	sym, base, settle := f["symbol"], f["baseCoin"], f["settleCoin"]
	switch {
	case cat == catLinear && sym == "" && base == "" && settle == "":
		return fail(codeParams, "params error: symbol, baseCoin or settleCoin is required for linear")
	case cat == catSpot && settle != "":
		return fail(codeParams, msgSpotSettleCoin)
	}
	if sym != "" {
		if _, bad := s.orderInstrument(cat, sym); bad != nil {
			return *bad
		}
	}
	plain := true
	switch f["orderFilter"] {
	case "", "Order", "OpenOrder":
	case "StopOrder", "tpslOrder", "OcoOrder", "BidirectionalTpslOrder":
		plain = false // the simulator has no such orders resting
	default:
		return fail(codeParams, "params error: orderFilter is invalid")
	}
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	defer s.unlockAndFlush()
	s.advanceLocked(c.now)
	a := c.key.acct
	l := a.ledgerLocked()
	res := cancelAllResult{List: []orderIDResult{}, Success: "1"}
	var list []*simOrder
	for _, o := range l.orders {
		if !plain || o.category != cat || (!o.open() && o.status != statusCreated) {
			continue
		}
		in := s.catalog.get(o.category, o.symbol)
		switch {
		case sym != "":
			if o.symbol != sym {
				continue
			}
		case base != "":
			if in.baseCoin != base {
				continue
			}
		case settle != "":
			if in.quote != settle {
				continue
			}
		}
		if cat == catLinear && len(list) == 500 {
			break
		}
		list = append(list, o)
		res.List = append(res.List, orderIDResult{OrderID: o.orderID, OrderLinkID: o.orderLinkID})
	}
	s.enqueueLocked(nowMs, func(at int64) { s.applyCancelLocked(a, list, at) })
	return ok(res)
}

// POST /v5/position/set-leverage

func (s *Sim) positionSetLeverage(c *call) response {
	p, bad := parseParams(c.body)
	if bad != nil {
		return *bad
	}
	f, bad := p.strings("category", "symbol", "buyLeverage", "sellLeverage")
	if bad != nil {
		return *bad
	}
	if f["category"] != catLinear {
		if f["category"] == "" {
			return fail(codeParams, "params error: category is required")
		}
		return fail(codeParams, "Illegal category")
	}
	in, bad := s.orderInstrument(catLinear, f["symbol"])
	if bad != nil {
		return *bad
	}
	buy, okB := positiveDecimal(f["buyLeverage"])
	sell, okS := positiveDecimal(f["sellLeverage"])
	if !okB || !okS {
		return fail(codeParams, "params error: buyLeverage and sellLeverage must be positive decimals")
	}
	if !buy.Equal(sell) {
		return fail(codeParams, "params error: buyLeverage must equal sellLeverage in one-way mode")
	}
	lo, hi := decimal.RequireFromString(in.minLeverage), decimal.RequireFromString(in.maxLeverage)
	if buy.LessThan(lo) || buy.GreaterThan(hi) || !onGrid(buy, decimal.RequireFromString(in.leverageStep)) {
		return fail(codeParams, "params error: leverage must be in ["+in.minLeverage+", "+in.maxLeverage+"] in steps of "+in.leverageStep)
	}
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	defer s.unlockAndFlush()
	s.advanceLocked(c.now)
	a := c.key.acct
	l := a.ledgerLocked()
	if l.leverageForLocked(in.symbol).Equal(buy) {
		return fail(codeLeverageSame, "Set leverage has not been modified.")
	}
	lev := buy
	s.enqueueLocked(nowMs, func(at int64) {
		l.leverage[in.symbol] = lev
		if pos := l.positions[posKey{in.symbol, 0}]; pos != nil {
			cp := *pos
			cp.leverage, cp.updatedMs = lev, at
			l.setPositionLocked(&cp)
		}
		ev := s.newEvent(a, catLinear, at)
		ev.position(in.symbol)
		ev.wallet = true
		ev.close()
	})
	return ok(emptyObject)
}

// POST /v5/position/trading-stop

func (s *Sim) positionTradingStop(c *call) response {
	p, bad := parseParams(c.body)
	if bad != nil {
		return *bad
	}
	f, bad := p.strings("category", "symbol", "tpslMode", "takeProfit", "stopLoss", "trailingStop", "activePrice",
		"tpTriggerBy", "slTriggerBy", "tpSize", "slSize", "tpLimitPrice", "slLimitPrice", "tpOrderType", "slOrderType")
	if bad != nil {
		return *bad
	}
	idx, okIdx := p.integer("positionIdx")
	if f["category"] != catLinear {
		if f["category"] == "" {
			return fail(codeParams, "params error: category is required")
		}
		return fail(codeParams, "Illegal category")
	}
	in, bad := s.orderInstrument(catLinear, f["symbol"])
	if bad != nil {
		return *bad
	}
	switch {
	case !okIdx || idx != 0:
		return fail(codeParams, msgPositionIdx)
	case f["tpslMode"] == "Partial":
		return fail(codeParams, "params error: only tpslMode Full is simulated")
	case f["tpslMode"] != "" && f["tpslMode"] != "Full":
		return fail(codeParams, "params error: tpslMode must be Full or Partial")
	case f["trailingStop"] != "" && f["trailingStop"] != "0":
		return fail(codeParams, "params error: trailingStop is not simulated")
	}
	for _, k := range []string{"tpTriggerBy", "slTriggerBy"} {
		if v := f[k]; v != "" && v != "LastPrice" {
			return fail(codeParams, "params error: only "+k+"=LastPrice is simulated")
		}
	}
	if f["takeProfit"] == "" && f["stopLoss"] == "" {
		return fail(codeNotModified, "not modified")
	}
	sec := c.nowSec()
	nowMs := c.now.UnixMilli()

	s.mu.Lock()
	defer s.unlockAndFlush()
	s.advanceLocked(c.now)
	a := c.key.acct
	l := a.ledgerLocked()
	pos := positionLocked(l, in.symbol)
	if pos == nil {
		return fail(codeParams, "can not set tp/sl/ts for zero position")
	}
	tpV, slV := f["takeProfit"], f["stopLoss"]
	if tpV == "" {
		tpV = priceOrEmpty(pos.takeProfit, in.priceScale)
	}
	if slV == "" {
		slV = priceOrEmpty(pos.stopLoss, in.priceScale)
	}
	tp, sl, r := checkTPSL(in, pos.side, tpV, slV, s.model.last(in, sec))
	if r != nil {
		return *r
	}
	if tp.Equal(pos.takeProfit) && sl.Equal(pos.stopLoss) {
		return fail(codeNotModified, "not modified")
	}
	side := pos.side
	s.enqueueLocked(nowMs, func(at int64) {
		cur := positionLocked(l, in.symbol)
		if cur == nil || cur.side != side {
			return
		}
		cp := *cur
		cp.takeProfit, cp.stopLoss, cp.updatedMs = tp, sl, at
		l.setPositionLocked(&cp)
		ev := s.newEvent(a, catLinear, at)
		ev.position(in.symbol)
		ev.close()
	})
	return ok(emptyObject)
}
