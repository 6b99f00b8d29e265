package sim

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// Order request parsing and validation (docs/bybit.md "Trade endpoints";
// docs/venue-errors.md; docs/simulator.md "Validation codes"). Every refusal
// is synchronous and changes nothing; codes and messages follow Bybit's:
// 10001 for parameter errors on linear,
// the 170xxx family on spot, 110xxx for derivatives order rules.

// Return codes of the order engine.
const (
	codeOrderNotExists   = 110001
	codePriceRange       = 110003
	codeBalance          = 110007
	codeReduceOnly       = 110017
	codeLeverageSame     = 110043
	codeAmendQty         = 110064
	codeDuplicateLink    = 110072
	codeMinNotional      = 110094
	codeNotModified      = 34040
	codeSpotBalance      = 170131
	codeSpotInvalidSym   = 170121
	codeSpotTIF          = 170115
	codeSpotOrderType    = 170116
	codeSpotSide         = 170117
	codeSpotQtyMax       = 170135
	codeSpotQtyMin       = 170136
	codeSpotQtyDecimals  = 170137
	codeSpotPriceDecimal = 170134
	codeSpotValueMin     = 170140
	codeSpotDuplicate    = 170141
	codeSpotAmountDec    = 170148
	codeSpotBuyTooHigh   = 170193
	codeSpotSellTooLow   = 170194
	codeSpotNotExists    = 170213
	codeSpotAmendQty     = 170313
)

// params is a POST body: a JSON object whose values are read leniently
// (a number where Bybit wants a string is taken as its text, as Bybit's
// gateway does).
type params map[string]json.RawMessage

// parseParams decodes a POST body; a body that is not one JSON object is a
// 10001.
func parseParams(body []byte) (params, *response) {
	var p params
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if len(bytes.TrimSpace(body)) == 0 || dec.Decode(&p) != nil || p == nil {
		r := fail(codeParams, "params error: the body must be a JSON object")
		return nil, &r
	}
	return p, nil
}

// str returns a string field ("" when absent or null); ok is false for a
// value that is neither a string nor a number.
func (p params) str(name string) (string, bool) {
	raw, found := p[name]
	if !found || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}

// flag returns a boolean field (false when absent); ok is false for a
// value that is not a boolean.
func (p params) flag(name string) (bool, bool) {
	raw, found := p[name]
	if !found || string(raw) == "null" {
		return false, true
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, false
	}
	return b, true
}

// integer returns an integer field (0 when absent); a numeric string is
// accepted.
func (p params) integer(name string) (int, bool) {
	s, ok := p.str(name)
	if !ok {
		return 0, false
	}
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// strings reads several string fields; the first bad one is a 10001.
func (p params) strings(names ...string) (map[string]string, *response) {
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, ok := p.str(n)
		if !ok {
			r := fail(codeParams, "params error: "+n+" must be a string")
			return nil, &r
		}
		out[n] = v
	}
	return out, nil
}

var linkIDPattern = regexp.MustCompile(`^[0-9A-Za-z_-]{1,36}$`)

// orderCategory reads a category the engine trades (spot, linear).
func orderCategory(cat string) *response {
	switch cat {
	case catSpot, catLinear:
		return nil
	case "":
		r := fail(codeParams, "params error: category is required")
		return &r
	default:
		r := fail(codeParams, "Illegal category")
		return &r
	}
}

// orderInstrument finds the symbol of an order request.
func (s *Sim) orderInstrument(cat, sym string) (*instrument, *response) {
	if sym == "" {
		r := fail(codeParams, "params error: symbol is required")
		return nil, &r
	}
	in := s.catalog.get(cat, sym)
	if in == nil {
		r := fail(codeParams, msgSymbolInvalid)
		if cat == catSpot {
			r = fail(codeSpotInvalidSym, "Invalid symbol.")
		}
		return nil, &r
	}
	return in, nil
}

// refuse picks the linear or the spot form of a refusal.
func refuse(cat string, linCode int, linMsg string, spotCode int, spotMsg string) *response {
	r := fail(linCode, linMsg)
	if cat == catSpot {
		r = fail(spotCode, spotMsg)
	}
	return &r
}

// positiveDecimal parses a positive decimal.
func positiveDecimal(v string) (decimal.Decimal, bool) {
	d, err := decimal.NewFromString(v)
	if err != nil || !d.IsPositive() || strings.ContainsAny(v, "eE") {
		return decimal.Zero, false
	}
	return d, true
}

// onGrid reports whether d is a whole multiple of step.
func onGrid(d, step decimal.Decimal) bool {
	_, r := d.QuoRem(step, 0)
	return r.IsZero()
}

// checkQty validates an order quantity for in (quote: a spot market buy by
// value). market selects the market-order maximum.
func checkQty(in *instrument, qty decimal.Decimal, market, quote bool) *response {
	if in.category == catLinear {
		switch {
		case !onGrid(qty, in.step):
			r := fail(codeParams, "params error: qty must be a multiple of qtyStep "+in.stepStr)
			return &r
		case qty.LessThan(decimal.RequireFromString(in.minOrderQty)):
			r := fail(codeParams, "The number of contracts is below the minimum limit allowed: minOrderQty "+in.minOrderQty)
			return &r
		}
		max := in.maxOrderQty
		if market {
			max = in.maxMktOrderQty
		}
		if qty.GreaterThan(decimal.RequireFromString(max)) {
			r := fail(codeParams, "The number of contracts exceeds maximum limit allowed: max_qty "+max)
			return &r
		}
		return nil
	}
	if quote {
		if !onGrid(qty, decimal.RequireFromString(in.quotePrecision)) {
			r := fail(codeSpotAmountDec, "Market order amount decimal too long.")
			return &r
		}
		if qty.GreaterThan(decimal.RequireFromString(in.maxOrderAmt)) {
			r := fail(170124, "Order amount too large.")
			return &r
		}
		return nil
	}
	switch {
	case !onGrid(qty, in.step):
		r := fail(codeSpotQtyDecimals, "Order quantity has too many decimals.")
		return &r
	case qty.LessThan(decimal.RequireFromString(in.spotMinOrderQty)):
		r := fail(codeSpotQtyMin, "Order quantity exceeded lower limit.")
		return &r
	}
	max := in.maxLimitOrderQty
	if market {
		max = in.maxMarketOrderQty
	}
	if qty.GreaterThan(decimal.RequireFromString(max)) {
		r := fail(codeSpotQtyMax, "Order quantity exceeded upper limit.")
		return &r
	}
	return nil
}

// checkPrice validates a limit price: positive, on tick, inside the price
// band of docs/bybit.md "Market endpoints" (buy at most buyLmt, sell at least sellLmt).
func (s *Sim) checkPrice(in *instrument, side, v string, sec int64) (decimal.Decimal, *response) {
	price, okP := positiveDecimal(v)
	if !okP {
		r := fail(codeParams, "params error: price must be a positive decimal")
		return price, &r
	}
	if !onGrid(price, in.tick) {
		return price, refuse(in.category, codeParams, "params error: price must be a multiple of tickSize "+in.tickStr,
			codeSpotPriceDecimal, "Order price has too many decimals.")
	}
	buy, sell := s.priceLimits(in, sec)
	if in.category == catLinear {
		if price.LessThan(decimal.RequireFromString(in.minPrice)) || price.GreaterThan(decimal.RequireFromString(in.maxPrice)) ||
			(side == "Buy" && price.GreaterThan(buy)) || (side == "Sell" && price.LessThan(sell)) {
			r := fail(codePriceRange, "Order price is out of permissible range: buy at most "+fixed(buy, in.priceScale)+", sell at least "+fixed(sell, in.priceScale))
			return price, &r
		}
		return price, nil
	}
	if side == "Buy" && price.GreaterThan(buy) {
		r := fail(codeSpotBuyTooHigh, "Buy order price cannot be higher than "+fixed(buy, in.priceScale)+".")
		return price, &r
	}
	if side == "Sell" && price.LessThan(sell) {
		r := fail(codeSpotSellTooLow, "Sell order price cannot be lower than "+fixed(sell, in.priceScale)+".")
		return price, &r
	}
	return price, nil
}

// checkTPSL validates attached take-profit and stop-loss prices against a
// reference price (the order's price, or the last price for Market): a
// Buy's TP above it and SL below, a Sell's the other way. "0" or "" is
// unset.
func checkTPSL(in *instrument, side, tpV, slV string, ref decimal.Decimal) (tp, sl decimal.Decimal, bad *response) {
	parse := func(name, v string) (decimal.Decimal, *response) {
		if v == "" || v == "0" {
			return decimal.Zero, nil
		}
		d, ok := positiveDecimal(v)
		if !ok || !onGrid(d, in.tick) {
			r := fail(codeParams, "params error: "+name+" must be a positive price on tickSize "+in.tickStr)
			return d, &r
		}
		return d, nil
	}
	if tp, bad = parse("takeProfit", tpV); bad != nil {
		return
	}
	if sl, bad = parse("stopLoss", slV); bad != nil {
		return
	}
	long := side == "Buy"
	if tp.IsPositive() && ((long && !tp.GreaterThan(ref)) || (!long && !tp.LessThan(ref))) {
		r := fail(codeParams, "params error: takeProfit for a "+side+" must be on the profit side of "+fixed(ref, in.priceScale))
		return tp, sl, &r
	}
	if sl.IsPositive() && ((long && !sl.LessThan(ref)) || (!long && !sl.GreaterThan(ref))) {
		r := fail(codeParams, "params error: stopLoss for a "+side+" must be on the loss side of "+fixed(ref, in.priceScale))
		return tp, sl, &r
	}
	return tp, sl, nil
}

// availableLocked is what coin the account can still commit: its wallet
// balance less what open spot orders lock, and for USDT (the margin coin)
// plus unrealised PnL less position and order initial margin.
func (s *Sim) availableLocked(l *ledger, coin string, sec int64) decimal.Decimal {
	avail := l.balances[coin]
	l.compactLiveLocked()
	orderValue := map[string]decimal.Decimal{} // linear symbol -> open order value
	for _, o := range l.live {
		if !o.open() {
			continue
		}
		in := s.catalog.get(o.category, o.symbol)
		switch {
		case o.category == catSpot && o.side == "Buy" && in.quote == coin:
			avail = avail.Sub(o.leavesQty().Mul(o.price))
		case o.category == catSpot && o.side == "Sell" && in.baseCoin == coin:
			avail = avail.Sub(o.leavesQty())
		case o.category == catLinear && in.quote == coin && !o.reduceOnly:
			orderValue[o.symbol] = orderValue[o.symbol].Add(o.leavesQty().Mul(o.price))
		}
	}
	for sym, v := range orderValue {
		avail = avail.Sub(v.DivRound(l.leverageForLocked(sym), amountPlaces))
	}
	for _, p := range l.positions {
		in := s.catalog.get(catLinear, p.symbol)
		if in == nil || in.quote != coin {
			continue
		}
		v := s.viewPosition(in, p, sec)
		avail = avail.Add(v.upl).Sub(v.im)
	}
	return avail
}
