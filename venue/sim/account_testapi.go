package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// Account test endpoints (docs/simulator.md "Test endpoints"; loopback only, plain JSON like the
// other /sim/ endpoints). {api_key} names any key of the account; the
// state is per account.
//
//	POST /sim/accounts/{api_key}/balances   {"USDT": "10000", "BTC": "0.5"}
//	     Sets the wallet balance of each coin named ("0" removes it); other
//	     coins are kept. Coins: USDT, USDC and every spot base coin.
//	     -> {"USDT": "10000", "BTC": "0.5"} (every non-zero balance)
//	POST /sim/accounts/{api_key}/positions  [{"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "67200",
//	                                          "leverage": "10", "positionIdx": 0, "takeProfit": "", "stopLoss": "",
//	                                          "cumRealisedPnl": "0"}]
//	     Sets linear positions; size "0" closes one (a flat row stays, with
//	     its cumRealisedPnl, as after a trade). positionIdx 1 (Buy) or
//	     2 (Sell) puts the symbol in hedge mode (the unsupported-mode path);
//	     0 puts it back in one-way mode. -> {"positions": N}
//	POST /sim/accounts/{api_key}/orders     [{"category", "symbol", "side", "orderType", "qty", "price", "status",
//	                                          "orderLinkId", "createdTime", "updatedTime", "cumExecQty", "avgPrice",
//	                                          "timeInForce", "reduceOnly", "rejectReason"}]
//	     Project-specific seeding until the order engine exists: stores
//	     orders in the account as they would look after the engine handled
//	     them (open ones show in /v5/order/realtime, closed ones in
//	     /v5/order/history) and, for a filled quantity, one matching
//	     execution at updatedTime. Seeded orders move no balance or
//	     position and are not "accepted": GET /sim/orders does not list
//	     them. -> [{"orderId", "orderLinkId"}] in body order.
//
// Every body is validated whole before anything is stored; a bad item
// answers HTTP 400 naming its index and field, and nothing changes.

const accountsPrefix = "/sim/accounts/"

var seedLinkIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,36}$`)

// serveAccountsTestAPI routes /sim/accounts/{api_key}/{what}.
func (s *Sim) serveAccountsTestAPI(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, accountsPrefix)
	apiKey, what, found := strings.Cut(rest, "/")
	if !found || apiKey == "" || strings.Contains(what, "/") {
		testAPIError(w, http.StatusNotFound, "no such test endpoint")
		return
	}
	var handler func(http.ResponseWriter, *http.Request, *account)
	switch what {
	case "balances":
		handler = s.testSetBalances
	case "positions":
		handler = s.testSetPositions
	case "orders":
		handler = s.testSeedOrders
	default:
		testAPIError(w, http.StatusNotFound, "no such test endpoint")
		return
	}
	k := s.lookupKey(apiKey)
	if k == nil {
		testAPIError(w, http.StatusNotFound, "unknown api key")
		return
	}
	if r.Method != http.MethodPost {
		testAPIError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	handler(w, r, k.acct)
}

// seedDecimal parses an optional decimal string of a seed body.
func seedDecimal(where, field, v string) (decimal.Decimal, error) {
	if v == "" {
		return decimal.Zero, nil
	}
	d, err := decimal.NewFromString(v)
	if err != nil {
		return decimal.Zero, fmt.Errorf("%s: %s is not a decimal string", where, field)
	}
	return d, nil
}

func (s *Sim) testSetBalances(w http.ResponseWriter, r *http.Request, acct *account) {
	var body map[string]string
	if err := decodeStrict(r, &body); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body: "+err.Error())
		return
	}
	set := make(map[string]decimal.Decimal, len(body))
	for coin, v := range body {
		if !s.knownCoin(coin) {
			testAPIError(w, http.StatusBadRequest, "unknown coin "+strconv.Quote(coin))
			return
		}
		d, err := decimal.NewFromString(v)
		if err != nil || d.IsNegative() {
			testAPIError(w, http.StatusBadRequest, coin+": balance must be a non-negative decimal string")
			return
		}
		set[coin] = d
	}
	out := map[string]string{}
	s.mu.Lock()
	l := acct.ledgerLocked()
	for coin, d := range set {
		l.setBalanceLocked(coin, d)
	}
	for coin, d := range l.balances {
		out[coin] = d.String()
	}
	s.mu.Unlock()
	writePlainJSON(w, http.StatusOK, out)
}

type seedPosition struct {
	Symbol         string `json:"symbol"`
	Side           string `json:"side"`
	Size           string `json:"size"`
	AvgPrice       string `json:"avgPrice"`
	PositionIdx    int    `json:"positionIdx"`
	Leverage       string `json:"leverage"`
	TakeProfit     string `json:"takeProfit"`
	StopLoss       string `json:"stopLoss"`
	CumRealisedPnl string `json:"cumRealisedPnl"`
}

func (s *Sim) testSetPositions(w http.ResponseWriter, r *http.Request, acct *account) {
	var body []seedPosition
	if err := decodeStrict(r, &body); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body (want a JSON array): "+err.Error())
		return
	}
	nowMs := s.now().UnixMilli()
	ps := make([]*simPosition, 0, len(body))
	for i, sp := range body {
		p, err := s.checkSeedPosition(fmt.Sprintf("item %d", i), &sp)
		if err != nil {
			testAPIError(w, http.StatusBadRequest, err.Error())
			return
		}
		ps = append(ps, p)
	}
	s.mu.Lock()
	l := acct.ledgerLocked()
	for _, p := range ps {
		if old := l.positions[posKey{p.symbol, p.idx}]; old != nil {
			p.createdMs = old.createdMs
		} else {
			p.createdMs = nowMs
		}
		p.updatedMs = nowMs
		p.seq = l.nextSeqLocked()
		l.setPositionLocked(p)
	}
	s.mu.Unlock()
	writePlainJSON(w, http.StatusOK, map[string]int{"positions": len(ps)})
}

func (s *Sim) checkSeedPosition(where string, sp *seedPosition) (*simPosition, error) {
	in := s.catalog.get(catLinear, sp.Symbol)
	if in == nil {
		return nil, fmt.Errorf("%s: symbol must be a linear symbol of the simulator", where)
	}
	p := &simPosition{symbol: sp.Symbol, idx: sp.PositionIdx, side: sp.Side}
	var err error
	if p.size, err = seedDecimal(where, "size", sp.Size); err != nil {
		return nil, err
	}
	if p.avgPrice, err = seedDecimal(where, "avgPrice", sp.AvgPrice); err != nil {
		return nil, err
	}
	if p.leverage, err = seedDecimal(where, "leverage", sp.Leverage); err != nil {
		return nil, err
	}
	if p.takeProfit, err = seedDecimal(where, "takeProfit", sp.TakeProfit); err != nil {
		return nil, err
	}
	if p.stopLoss, err = seedDecimal(where, "stopLoss", sp.StopLoss); err != nil {
		return nil, err
	}
	if p.cumRealisedPnl, err = seedDecimal(where, "cumRealisedPnl", sp.CumRealisedPnl); err != nil {
		return nil, err
	}
	switch {
	case p.size.IsNegative():
		return nil, fmt.Errorf("%s: size must not be negative", where)
	case p.size.IsPositive() && p.side != "Buy" && p.side != "Sell":
		return nil, fmt.Errorf("%s: side must be Buy or Sell", where)
	case p.size.IsZero() && p.side != "" && p.side != "Buy" && p.side != "Sell":
		return nil, fmt.Errorf("%s: side must be Buy, Sell or empty", where)
	case p.size.IsPositive() && !p.avgPrice.IsPositive():
		return nil, fmt.Errorf("%s: avgPrice must be positive for an open position", where)
	case p.idx < 0 || p.idx > 2:
		return nil, fmt.Errorf("%s: positionIdx must be 0, 1 or 2", where)
	case p.idx == 1 && p.size.IsPositive() && p.side != "Buy", p.idx == 2 && p.size.IsPositive() && p.side != "Sell":
		return nil, fmt.Errorf("%s: positionIdx 1 is the Buy side and 2 the Sell side", where)
	case p.takeProfit.IsNegative() || p.stopLoss.IsNegative():
		return nil, fmt.Errorf("%s: takeProfit and stopLoss must not be negative", where)
	}
	if p.leverage.IsZero() {
		p.leverage = defaultLeverage
	}
	maxLev := decimal.RequireFromString(in.maxLeverage)
	if p.leverage.LessThan(decimal.NewFromInt(1)) || p.leverage.GreaterThan(maxLev) {
		return nil, fmt.Errorf("%s: leverage must be between 1 and %s", where, in.maxLeverage)
	}
	if p.size.IsZero() {
		p.side, p.avgPrice = "", decimal.Zero
	}
	return p, nil
}

// seedOrder is one item of POST /sim/accounts/{api_key}/orders.
type seedOrder struct {
	Category     string  `json:"category"`
	Symbol       string  `json:"symbol"`
	Side         string  `json:"side"`
	OrderType    string  `json:"orderType"`
	Qty          string  `json:"qty"`
	Price        string  `json:"price"`
	Status       string  `json:"status"`
	OrderLinkID  string  `json:"orderLinkId"`
	CreatedTime  msValue `json:"createdTime"`
	UpdatedTime  msValue `json:"updatedTime"`
	CumExecQty   string  `json:"cumExecQty"`
	AvgPrice     string  `json:"avgPrice"`
	TimeInForce  string  `json:"timeInForce"`
	ReduceOnly   bool    `json:"reduceOnly"`
	RejectReason string  `json:"rejectReason"`
	// StopOrderType and CloseOnTrigger describe a conditional order as
	// Bybit lists it (a position's SL/TP: Untriggered, "StopLoss",
	// reduce-only, close-on-trigger); the engine never triggers it.
	StopOrderType  string `json:"stopOrderType"`
	CloseOnTrigger bool   `json:"closeOnTrigger"`
}

// msValue is a millisecond timestamp given as a JSON number or a numeric
// string; absent is unset.
type msValue struct {
	ms  int64
	set bool
}

// UnmarshalJSON accepts 1717245296789, "1717245296789" and null.
func (m *msValue) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(bytes.TrimSpace(b), `"`)
	if string(b) == "null" || len(b) == 0 {
		*m = msValue{}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want a millisecond timestamp")
	}
	*m = msValue{ms: n, set: true}
	return nil
}

type seededOrder struct {
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
}

func (s *Sim) testSeedOrders(w http.ResponseWriter, r *http.Request, acct *account) {
	var body []seedOrder
	if err := decodeStrict(r, &body); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body (want a JSON array): "+err.Error())
		return
	}
	nowMs := s.now().UnixMilli()
	orders := make([]*simOrder, 0, len(body))
	seen := map[string]bool{}
	for i := range body {
		o, err := s.checkSeedOrder(fmt.Sprintf("item %d", i), &body[i], nowMs)
		if err != nil {
			testAPIError(w, http.StatusBadRequest, err.Error())
			return
		}
		if o.orderLinkID != "" {
			k := linkKey(o.category, o.orderLinkID)
			if seen[k] {
				testAPIError(w, http.StatusBadRequest, fmt.Sprintf("item %d: orderLinkId repeats an earlier item", i))
				return
			}
			seen[k] = true
		}
		orders = append(orders, o)
	}

	out := make([]seededOrder, 0, len(orders))
	s.mu.Lock()
	l := acct.ledgerLocked()
	for i, o := range orders {
		if l.orderByLinkLocked(o.category, o.orderLinkID) != nil {
			s.mu.Unlock()
			testAPIError(w, http.StatusBadRequest, fmt.Sprintf("item %d: orderLinkId is already used in this account and category", i))
			return
		}
	}
	for _, o := range orders {
		o.seq = l.nextSeqLocked()
		o.orderID = s.newOrderID(o.category, acct.uid, o.seq)
		if o.orderLinkID == "" && o.category == catSpot {
			o.orderLinkID = s.newSpotLinkID(acct.uid, o.seq)
		}
		o.seeded = true // a fixture: the engine never fills it by price
		l.addOrderLocked(o)
		if o.cumExecQty.IsPositive() {
			s.addSeedExecutionLocked(l, acct.uid, o)
		}
		out = append(out, seededOrder{OrderID: o.orderID, OrderLinkID: o.orderLinkID})
	}
	s.mu.Unlock()
	writePlainJSON(w, http.StatusOK, out)
}

// checkSeedOrder validates one seeded order and fills its defaults.
func (s *Sim) checkSeedOrder(where string, so *seedOrder, nowMs int64) (*simOrder, error) {
	if so.Category != catSpot && so.Category != catLinear {
		return nil, fmt.Errorf("%s: category must be spot or linear", where)
	}
	in := s.catalog.get(so.Category, so.Symbol)
	if in == nil {
		return nil, fmt.Errorf("%s: symbol is not listed in this category", where)
	}
	o := &simOrder{
		category:     so.Category,
		symbol:       so.Symbol,
		orderLinkID:  so.OrderLinkID,
		side:         so.Side,
		orderType:    so.OrderType,
		timeInForce:  so.TimeInForce,
		status:       so.Status,
		rejectReason: so.RejectReason,
		cancelType:   "UNKNOWN",
		reduceOnly:   so.ReduceOnly,
		createdMs:    nowMs,

		stopOrderType:  so.StopOrderType,
		closeOnTrigger: so.CloseOnTrigger,
	}
	switch o.stopOrderType {
	case "", "TakeProfit", "StopLoss", "TrailingStop", "Stop", "PartialTakeProfit", "PartialStopLoss", "tpslOrder":
	default:
		return nil, fmt.Errorf("%s: stopOrderType is not one the simulator lists", where)
	}
	if so.Side != "Buy" && so.Side != "Sell" {
		return nil, fmt.Errorf("%s: side must be Buy or Sell", where)
	}
	if so.OrderType != "Limit" && so.OrderType != "Market" {
		return nil, fmt.Errorf("%s: orderType must be Limit or Market", where)
	}
	if o.orderLinkID != "" && !seedLinkIDRE.MatchString(o.orderLinkID) {
		return nil, fmt.Errorf("%s: orderLinkId must be 1 to 36 characters of A-Z, a-z, 0-9, _ and -", where)
	}
	if o.reduceOnly && o.category == catSpot {
		return nil, fmt.Errorf("%s: reduceOnly is for linear only", where)
	}
	if o.status == "" {
		o.status = "New"
	}
	if !knownOrderStatuses[o.status] {
		return nil, fmt.Errorf("%s: status is not a Bybit order status", where)
	}
	if o.status == "PartiallyFilledCanceled" && o.category != catSpot {
		return nil, fmt.Errorf("%s: PartiallyFilledCanceled is a spot status", where)
	}
	switch o.timeInForce {
	case "":
		o.timeInForce = "GTC"
		if o.orderType == "Market" {
			o.timeInForce = "IOC"
		}
	case "GTC", "IOC", "FOK", "PostOnly":
	default:
		return nil, fmt.Errorf("%s: timeInForce must be GTC, IOC, FOK or PostOnly", where)
	}
	if so.CreatedTime.set {
		o.createdMs = so.CreatedTime.ms
	}
	o.updatedMs = o.createdMs
	if so.UpdatedTime.set {
		if so.UpdatedTime.ms < o.createdMs {
			return nil, fmt.Errorf("%s: updatedTime must not be before createdTime", where)
		}
		o.updatedMs = so.UpdatedTime.ms
	}
	var err error
	if o.qty, err = seedDecimal(where, "qty", so.Qty); err != nil {
		return nil, err
	}
	if !o.qty.IsPositive() {
		return nil, fmt.Errorf("%s: qty must be positive", where)
	}
	if o.price, err = seedDecimal(where, "price", so.Price); err != nil {
		return nil, err
	}
	last := s.model.last(in, floorDiv(o.createdMs, 1000))
	switch {
	case o.price.IsNegative():
		return nil, fmt.Errorf("%s: price must not be negative", where)
	case o.price.IsZero() && o.orderType == "Limit":
		return nil, fmt.Errorf("%s: a Limit order needs a positive price", where)
	case o.price.IsZero():
		o.price = last // a market order shows its protection price
	}
	if o.category == catLinear {
		o.lastPriceOnCreated = last
	}
	if o.cumExecQty, err = seedDecimal(where, "cumExecQty", so.CumExecQty); err != nil {
		return nil, err
	}
	if so.CumExecQty == "" && o.status == "Filled" {
		o.cumExecQty = o.qty
	}
	filled, full := o.cumExecQty.IsPositive(), o.cumExecQty.Equal(o.qty)
	switch {
	case o.cumExecQty.IsNegative() || o.cumExecQty.GreaterThan(o.qty):
		return nil, fmt.Errorf("%s: cumExecQty must be between 0 and qty", where)
	case o.status == "Filled" && !full:
		return nil, fmt.Errorf("%s: a Filled order has cumExecQty equal to qty", where)
	case (o.status == "PartiallyFilled" || o.status == "PartiallyFilledCanceled") && (!filled || full):
		return nil, fmt.Errorf("%s: a %s order has 0 < cumExecQty < qty", where, o.status)
	case (o.status == "New" || o.status == "Untriggered" || o.status == "Rejected" || o.status == "Deactivated") && filled:
		return nil, fmt.Errorf("%s: a %s order has no fills", where, o.status)
	case o.status == "Cancelled" && full:
		return nil, fmt.Errorf("%s: a Cancelled order has cumExecQty below qty", where)
	}
	if o.avgPrice, err = seedDecimal(where, "avgPrice", so.AvgPrice); err != nil {
		return nil, err
	}
	switch {
	case !filled:
		o.avgPrice = decimal.Zero
	case o.avgPrice.IsNegative():
		return nil, fmt.Errorf("%s: avgPrice must be positive", where)
	case o.avgPrice.IsZero():
		o.avgPrice = o.price
	}
	if o.rejectReason == "" {
		o.rejectReason = "EC_NoError"
	}
	if o.status == "Cancelled" {
		o.cancelType = "CancelByUser"
	}
	if filled {
		o.cumExecValue = o.cumExecQty.Mul(o.avgPrice)
	}
	return o, nil
}

// feeFor returns the fee rate, whether the fill was maker, the fee coin
// and the fee of a fill of o with value value and quantity qty.
func (s *Sim) feeFor(o *simOrder, qty, value decimal.Decimal) (rate decimal.Decimal, maker bool, coin string, fee decimal.Decimal) {
	in := s.catalog.get(o.category, o.symbol)
	maker = o.orderType == "Limit" && (o.timeInForce == "GTC" || o.timeInForce == "PostOnly")
	if o.category == catSpot {
		if o.side == "Buy" {
			return spotFee, maker, in.baseCoin, qty.Mul(spotFee).Round(amountPlaces)
		}
		return spotFee, maker, in.quote, value.Mul(spotFee).Round(amountPlaces)
	}
	rate = linearTakerFee
	if maker {
		rate = linearMakerFee
	}
	return rate, maker, in.quote, value.Mul(rate).Round(amountPlaces)
}

// addSeedExecutionLocked records the fill of a seeded order as one
// execution at its updatedTime, and books the fee on the order.
func (s *Sim) addSeedExecutionLocked(l *ledger, uid int64, o *simOrder) {
	in := s.catalog.get(o.category, o.symbol)
	rate, maker, coin, fee := s.feeFor(o, o.cumExecQty, o.cumExecValue)
	o.cumExecFee, o.feeCoin = fee, coin
	e := &simExecution{
		seq:         l.nextSeqLocked(),
		category:    o.category,
		symbol:      o.symbol,
		orderID:     o.orderID,
		orderLinkID: o.orderLinkID,
		side:        o.side,
		orderType:   o.orderType,
		orderPrice:  o.price,
		orderQty:    o.qty,
		leavesQty:   o.leavesQty(),
		execPrice:   o.avgPrice,
		execQty:     o.cumExecQty,
		execValue:   o.cumExecValue,
		execFee:     fee,
		feeRate:     rate,
		feeCurrency: coin,
		isMaker:     maker,
		execType:    "Trade",
		execMs:      o.updatedMs,
	}
	e.execID = s.newExecID(o.category, uid, e.seq)
	if o.category == catLinear {
		e.markPrice = s.model.mark(in, floorDiv(e.execMs, 1000))
	}
	l.addExecutionLocked(e)
}

var _ json.Unmarshaler = (*msValue)(nil)
