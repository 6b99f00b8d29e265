package sim

import (
	"github.com/shopspring/decimal"
)

// Linear positions (one-way, positionIdx 0) under fills, TP/SL and
// leverage (docs/simulator.md).
//
// A fill on the position's side (or on a flat position) adds to it at a
// size-weighted average price. A fill on the other side closes up to the
// position's size and realises (fill price − average) × closed size (sign
// by side); any rest opens the other side at the fill price (a
// reduce-only order never gets there: matching caps it). Every fill's fee
// is paid from the USDT wallet, and the realised PnL is added to it:
// wallet += pnl − fee, and the position's cumRealisedPnl moves by the same
// amount, as Bybit counts it.

// applyPositionFillLocked books a linear fill on the one-way position and
// the USDT wallet. It returns the closed size and the PnL realised (before
// the fee).
func (s *Sim) applyPositionFillLocked(l *ledger, o *simOrder, in *instrument, qty, price, fee decimal.Decimal, seq uint64, ms int64) (closed, pnl decimal.Decimal) {
	k := posKey{o.symbol, 0}
	p := l.positions[k]
	if p == nil {
		p = &simPosition{symbol: o.symbol, leverage: l.leverageForLocked(o.symbol), createdMs: ms}
	} else {
		cp := *p
		p = &cp
	}
	if !p.size.IsPositive() {
		p.side, p.size, p.avgPrice = "", decimal.Zero, decimal.Zero
		p.createdMs = ms
	}
	switch {
	case p.size.IsZero() || p.side == o.side:
		total := p.size.Add(qty)
		p.avgPrice = p.size.Mul(p.avgPrice).Add(qty.Mul(price)).DivRound(total, amountPlaces)
		p.size, p.side = total, o.side
	default:
		closed = decimal.Min(qty, p.size)
		diff := price.Sub(p.avgPrice)
		if p.side == "Sell" {
			diff = diff.Neg()
		}
		pnl = diff.Mul(closed).Round(amountPlaces)
		p.size = p.size.Sub(closed)
		if rest := qty.Sub(closed); rest.IsPositive() {
			p.side, p.size, p.avgPrice = o.side, rest, price
			p.takeProfit, p.stopLoss = decimal.Zero, decimal.Zero
			p.createdMs = ms
		}
	}
	if closed.IsZero() || p.side == o.side {
		// The fill opened or added: an attached TP/SL now guards the position.
		if o.takeProfit.IsPositive() {
			p.takeProfit = o.takeProfit
		}
		if o.stopLoss.IsPositive() {
			p.stopLoss = o.stopLoss
		}
	}
	p.cumRealisedPnl = p.cumRealisedPnl.Add(pnl).Sub(fee)
	p.updatedMs, p.seq = ms, seq
	l.setBalanceLocked(in.quote, l.balances[in.quote].Add(pnl).Sub(fee))
	if p.size.IsZero() {
		// Flat: the TP/SL go with it; the leverage stays for the symbol.
		l.leverage[o.symbol] = p.leverage
		p.side, p.avgPrice = "", decimal.Zero
		p.takeProfit, p.stopLoss = decimal.Zero, decimal.Zero
	}
	l.setPositionLocked(p)
	return closed, pnl
}

// checkTPSLLocked fires a position's take-profit or stop-loss when the
// last price crossed it at sec: it was on the untriggered side the second
// before (prev) and reached the level now (trigger by LastPrice, Full
// mode). A reduce-only Market order then closes the whole position
// against the book, and both TP and SL are cleared. A level the price was
// already past (a seeded fixture; the endpoints refuse such a level) waits
// for the price to come back and cross it.
func (s *Sim) checkTPSLLocked(a *account, l *ledger, p *simPosition, in *instrument, prev, last decimal.Decimal, sec, ms int64) {
	long := p.side == "Buy"
	up := func(level decimal.Decimal) bool { return prev.LessThan(level) && last.GreaterThanOrEqual(level) }
	down := func(level decimal.Decimal) bool { return prev.GreaterThan(level) && last.LessThanOrEqual(level) }
	var kind string
	switch {
	case p.takeProfit.IsPositive() && ((long && up(p.takeProfit)) || (!long && down(p.takeProfit))):
		kind = "TakeProfit"
	case p.stopLoss.IsPositive() && ((long && down(p.stopLoss)) || (!long && up(p.stopLoss))):
		kind = "StopLoss"
	default:
		return
	}
	side := "Sell"
	if !long {
		side = "Buy"
	}
	ev := s.newEvent(a, catLinear, ms)
	o := &simOrder{
		seq: l.nextSeqLocked(), category: catLinear, symbol: p.symbol,
		side: side, orderType: "Market", timeInForce: "IOC", qty: p.size,
		status: statusNew, rejectReason: reasonNone, cancelType: cancelUnknown,
		reduceOnly: true, closeOnTrigger: true,
		createType: "CreateBy" + kind, stopOrderType: kind,
		lastPriceOnCreated: last, createdMs: ms, updatedMs: ms,
	}
	o.orderID = s.newOrderID(catLinear, a.uid, o.seq)
	o.price = s.protectionPrice(in, side, "", "", sec)
	l.addOrderLocked(o)
	cp := *p
	cp.takeProfit, cp.stopLoss = decimal.Zero, decimal.Zero
	l.setPositionLocked(&cp)
	s.takeLocked(ev, l, o, in, sec, ms)
	ev.position(p.symbol)
	ev.close()
}

// positionLocked returns the one-way position of symbol, or nil when flat.
func positionLocked(l *ledger, symbol string) *simPosition {
	p := l.positions[posKey{symbol, 0}]
	if p == nil || !p.size.IsPositive() {
		return nil
	}
	return p
}
