package sim

import (
	"github.com/shopspring/decimal"
)

// Matching (docs/simulator.md).
//
// A taking order walks the seeded book of its second (prices.go) level by
// level, best first, while the level's price is within its limit (a Market
// order's limit is its protection price), filling min(level size, what is
// left) at the level's price. The book is not depleted by the simulator's
// own fills: each order walks the book of its second afresh. What is left
// then rests (GTC), is cancelled (IOC, Market), or, for FOK when the walk
// could not fill everything, nothing fills at all. PostOnly that would
// take is cancelled with EC_PostOnlyWillTakeLiquidity.
//
// A resting Limit order fills completely, as maker at its own price, at
// the first second whose last price reaches it (Buy: last <= price; Sell:
// last >= price); engine.go evaluates every second.

// matchDepth bounds the levels one taking order walks.
const matchDepth = 500

// Order statuses and reasons the engine sets (docs/bybit.md "Trade endpoints", "Order statuses").
const (
	statusCreated         = "Created" // accepted, not applied yet: hidden from every read
	statusNew             = "New"
	statusPartiallyFilled = "PartiallyFilled"
	statusFilled          = "Filled"
	statusCancelled       = "Cancelled"
	statusPFCancelled     = "PartiallyFilledCanceled"

	reasonNone          = "EC_NoError"
	reasonPostOnly      = "EC_PostOnlyWillTakeLiquidity"
	reasonNoImmediate   = "EC_NoImmediateQtyToFill"
	reasonNoFullFill    = "EC_CancelForNoFullFill"
	reasonCancelledLate = "EC_OrigClOrdIDDoesNotExist"

	cancelUnknown    = "UNKNOWN"
	cancelByUser     = "CancelByUser"
	cancelReduceOnly = "CancelByReduceOnly"
)

// crossesBook reports whether a limit order at price would take at sec.
func (s *Sim) crossesBook(in *instrument, side string, price decimal.Decimal, sec int64) bool {
	bid, ask := s.model.top(in, sec)
	if side == "Buy" {
		return price.GreaterThanOrEqual(ask)
	}
	return price.LessThanOrEqual(bid)
}

// reduceCapLocked is how much of a reduce-only order may still fill: the
// size of the opposite position (zero when flat or on the same side).
func reduceCapLocked(l *ledger, o *simOrder) decimal.Decimal {
	p := l.positions[posKey{o.symbol, 0}]
	if p == nil || !p.size.IsPositive() || p.side == o.side {
		return decimal.Zero
	}
	return p.size
}

// wantQty is what o may still fill now: its leaves, capped for reduce-only.
func wantQty(l *ledger, o *simOrder) decimal.Decimal {
	want := o.qty.Sub(o.cumExecQty)
	if o.reduceOnly {
		want = decimal.Min(want, reduceCapLocked(l, o))
	}
	return want
}

// takeLocked matches the open order o as a taker at sec (ms: the moment)
// and settles what is left by its time in force. It is the whole life of
// a Market, IOC or FOK order, and the start of a GTC or PostOnly one.
func (s *Sim) takeLocked(ev *event, l *ledger, o *simOrder, in *instrument, sec, ms int64) {
	if o.timeInForce == "PostOnly" {
		if s.crossesBook(in, o.side, o.price, sec) {
			s.closeOrderLocked(ev, o, statusCancelled, reasonPostOnly, cancelUnknown, ms)
			return
		}
		s.restLocked(ev, o)
		return
	}
	if o.timeInForce == "FOK" && !s.canFillAllLocked(l, o, in, sec) {
		s.closeOrderLocked(ev, o, statusCancelled, reasonNoFullFill, cancelUnknown, ms)
		return
	}
	s.walkBookLocked(ev, l, o, in, sec, ms)
	switch {
	case !o.open():
		// Filled, or cut by reduce-only.
	case o.timeInForce == "GTC":
		s.restLocked(ev, o)
	case o.quoteQty && o.cumExecValue.GreaterThanOrEqual(o.qty):
		// A buy by value spent its whole budget. One that could not (less
		// than a step's worth left) ends PartiallyFilledCanceled below, as
		// Bybit reports it (recorded sample §14).
		o.status, o.updatedMs = statusFilled, ms
		ev.order(o)
	case o.cumExecQty.IsZero():
		s.closeOrderLocked(ev, o, statusCancelled, reasonNoImmediate, cancelUnknown, ms)
	case o.category == catSpot:
		s.closeOrderLocked(ev, o, statusPFCancelled, reasonNoFullFill, cancelUnknown, ms)
	default:
		s.closeOrderLocked(ev, o, statusCancelled, reasonNoFullFill, cancelUnknown, ms)
	}
}

// restLocked leaves o on the book.
func (s *Sim) restLocked(ev *event, o *simOrder) {
	s.engine.restingN++
	ev.order(o)
}

// closeOrderLocked ends an open order without (further) fills.
func (s *Sim) closeOrderLocked(ev *event, o *simOrder, status, reason, cancelType string, ms int64) {
	o.status, o.rejectReason, o.cancelType, o.updatedMs = status, reason, cancelType, ms
	ev.order(o)
	if o.category == catLinear {
		ev.position(o.symbol)
	}
}

// canFillAllLocked reports whether the book at sec holds o's whole
// quantity within its limit price (FOK).
func (s *Sim) canFillAllLocked(l *ledger, o *simOrder, in *instrument, sec int64) bool {
	want := wantQty(l, o)
	if o.reduceOnly && want.LessThan(o.qty.Sub(o.cumExecQty)) {
		return false
	}
	it := s.model.side(in, sec, o.side == "Buy")
	for i := 0; i < matchDepth && want.IsPositive(); i++ {
		lv, ok := it.next()
		if !ok || !withinLimit(o.side, lv.price, o.price) {
			break
		}
		want = want.Sub(lv.size)
	}
	return !want.IsPositive()
}

func withinLimit(side string, px, limit decimal.Decimal) bool {
	if side == "Buy" {
		return px.LessThanOrEqual(limit)
	}
	return px.GreaterThanOrEqual(limit)
}

// walkBookLocked fills o against the book at sec within its limit.
func (s *Sim) walkBookLocked(ev *event, l *ledger, o *simOrder, in *instrument, sec, ms int64) {
	it := s.model.side(in, sec, o.side == "Buy")
	for i := 0; i < matchDepth && o.open(); i++ {
		lv, ok := it.next()
		if !ok || !withinLimit(o.side, lv.price, o.price) {
			return
		}
		var q decimal.Decimal
		if o.quoteQty {
			budget := o.qty.Sub(o.cumExecValue)
			q = decimal.Min(lv.size, budget.Div(lv.price).Div(in.step).Floor().Mul(in.step))
		} else {
			q = decimal.Min(lv.size, wantQty(l, o))
		}
		if !q.IsPositive() {
			s.finishReduceOnlyLocked(ev, l, o, ms)
			return
		}
		s.fillLocked(ev, l, o, in, q, lv.price, false, ms)
	}
}

// fillRestingLocked fills a resting order whose price the market reached:
// everything it may still fill, as maker at its price, at ms.
func (s *Sim) fillRestingLocked(ev *event, l *ledger, o *simOrder, in *instrument, ms int64) {
	q := wantQty(l, o)
	if q.IsPositive() {
		s.fillLocked(ev, l, o, in, q, o.price, true, ms)
	}
	s.finishReduceOnlyLocked(ev, l, o, ms)
}

// finishReduceOnlyLocked cancels what is left of a reduce-only order once
// there is no position left for it to reduce: it never opens or flips one.
func (s *Sim) finishReduceOnlyLocked(ev *event, l *ledger, o *simOrder, ms int64) {
	if !o.open() || !o.reduceOnly || reduceCapLocked(l, o).IsPositive() {
		return
	}
	s.closeOrderLocked(ev, o, statusCancelled, reasonNone, cancelReduceOnly, ms)
}

// fillLocked books one fill of qty at price: the execution, the order's
// totals and status, the wallet, and (linear) the position.
func (s *Sim) fillLocked(ev *event, l *ledger, o *simOrder, in *instrument, qty, price decimal.Decimal, maker bool, ms int64) {
	value := qty.Mul(price)
	rate := spotFee
	var fee decimal.Decimal
	feeCoin := in.quote
	switch {
	case o.category == catSpot && o.side == "Buy":
		feeCoin = in.baseCoin
		fee = qty.Mul(rate).Round(amountPlaces)
	case o.category == catSpot:
		fee = value.Mul(rate).Round(amountPlaces)
	default:
		rate = linearTakerFee
		if maker {
			rate = linearMakerFee
		}
		fee = value.Mul(rate).Round(amountPlaces)
	}

	o.cumExecQty = o.cumExecQty.Add(qty)
	o.cumExecValue = o.cumExecValue.Add(value)
	o.cumExecFee = o.cumExecFee.Add(fee)
	o.feeCoin = feeCoin
	o.avgPrice = o.cumExecValue.DivRound(o.cumExecQty, amountPlaces)
	o.updatedMs = ms
	switch {
	case o.quoteQty:
		o.status = statusPartiallyFilled
	case o.cumExecQty.GreaterThanOrEqual(o.qty):
		o.status = statusFilled
	default:
		o.status = statusPartiallyFilled
	}

	e := &simExecution{
		seq: l.nextSeqLocked(), category: o.category, symbol: o.symbol,
		orderID: o.orderID, orderLinkID: o.orderLinkID, side: o.side, orderType: o.orderType,
		orderPrice: o.price, orderQty: o.qty, leavesQty: leavesAfterFill(o),
		execPrice: price, execQty: qty, execValue: value, execFee: fee, feeRate: rate,
		feeCurrency: feeCoin, isMaker: maker, execType: "Trade", execMs: ms,
		createType: o.createType, stopOrder: o.stopOrderType,
	}
	e.execID = s.newExecID(o.category, ev.acct.uid, e.seq)

	if o.category == catSpot {
		bal := func(c string) decimal.Decimal { return l.balances[c] }
		if o.side == "Buy" {
			l.setBalanceLocked(in.quote, bal(in.quote).Sub(value))
			l.setBalanceLocked(in.baseCoin, bal(in.baseCoin).Add(qty).Sub(fee))
		} else {
			l.setBalanceLocked(in.baseCoin, bal(in.baseCoin).Sub(qty))
			l.setBalanceLocked(in.quote, bal(in.quote).Add(value).Sub(fee))
		}
	} else {
		e.markPrice = s.model.mark(in, floorDiv(ms, 1000))
		closed, pnl := s.applyPositionFillLocked(l, o, in, qty, price, fee, e.seq, ms)
		e.closedSize, e.execPnl = closed, pnl
		o.closedPnl = o.closedPnl.Add(pnl).Sub(fee)
		ev.position(o.symbol)
	}
	l.addExecutionLocked(e)
	ev.exec(e)
	ev.order(o)
	ev.wallet = true
}

// protectionPrice is the limit a Market order gets (docs/bybit.md "Trade endpoints"): the
// best opposite price moved by slippageTolerance when the order carried
// one, else the instrument's price-limit band around the reference price.
func (s *Sim) protectionPrice(in *instrument, side, slipType, slip string, sec int64) decimal.Decimal {
	bid, ask := s.model.top(in, sec)
	buyLmt, sellLmt := s.priceLimits(in, sec)
	tol, err := decimal.NewFromString(slip)
	switch {
	case slipType == "TickSize" && err == nil:
		if side == "Buy" {
			return decimal.Min(ask.Add(in.tick.Mul(tol)), buyLmt)
		}
		return decimal.Max(bid.Sub(in.tick.Mul(tol)), sellLmt)
	case slipType == "Percent" && err == nil:
		f := tol.Div(decimal.NewFromInt(100))
		if side == "Buy" {
			return decimal.Min(ask.Mul(decimal.NewFromInt(1).Add(f)).Div(in.tick).Floor().Mul(in.tick), buyLmt)
		}
		return decimal.Max(bid.Mul(decimal.NewFromInt(1).Sub(f)).Div(in.tick).Ceil().Mul(in.tick), sellLmt)
	}
	if side == "Buy" {
		return buyLmt
	}
	return sellLmt
}

// leavesAfterFill is the leaves quantity an execution shows: zero for a
// spot buy by value, whose qty is a quote amount.
func leavesAfterFill(o *simOrder) decimal.Decimal {
	if o.quoteQty {
		return decimal.Zero
	}
	return o.leavesQty()
}
