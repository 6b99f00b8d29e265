package sim

import (
	"fmt"
	"sort"

	"github.com/shopspring/decimal"
)

// Account state (docs/bybit.md "Trade endpoints", "Position endpoints", "Account and key endpoints").
//
// Every account has one ledger: wallet balances per coin, positions per
// (symbol, positionIdx), every order it ever had, and every execution. The
// account read endpoints (account_rest.go) only read it; the test
// endpoints (account_testapi.go) and, later, the order engine write it
// through the *Locked methods below, so both feed the same views. All of
// it is guarded by Sim.mu.
//
// Derived numbers (mark price, unrealised PnL, margins, USD values) are
// never stored: they are computed from the ledger and the price model at
// the moment of the read, so they are always consistent with each other.

// Hash-stream tags for account state. They start at 0x100 so they never
// collide with the tag block in accounts.go, which grows by appending.
const (
	tagOrderID uint64 = 0x100 + iota
	tagExecID
	tagCursor
	tagLinkID
	tagTPSLID
	tagIDNonce
)

// Fee and margin constants of the simulated account (Bybit non-VIP
// defaults).
var (
	linearTakerFee     = decimal.RequireFromString("0.00055")
	linearMakerFee     = decimal.RequireFromString("0.0002")
	spotFee            = decimal.RequireFromString("0.001")
	maintenanceRate    = decimal.RequireFromString("0.005")
	defaultLeverage    = decimal.NewFromInt(10)
	usdStable          = map[string]bool{"USDT": true, "USDC": true}
	openOrderStatuses  = map[string]bool{"New": true, "PartiallyFilled": true, "Untriggered": true}
	knownOrderStatuses = map[string]bool{
		"New": true, "PartiallyFilled": true, "Untriggered": true, "Rejected": true,
		"PartiallyFilledCanceled": true, "Filled": true, "Cancelled": true, "Deactivated": true,
	}
)

// amountPlaces is the number of decimals of computed amounts (fees, PnL,
// margins, USD values), as Bybit shows them.
const amountPlaces = 8

// num renders a computed amount: rounded to amountPlaces, trailing zeros
// dropped.
func num(d decimal.Decimal) string { return d.Round(amountPlaces).String() }

// A ledger is the trading state of one account.
type ledger struct {
	balances  map[string]decimal.Decimal // coin -> wallet balance; zero balances are removed
	positions map[posKey]*simPosition
	orders    []*simOrder                // in creation order
	byID      map[string]*simOrder       // orderId -> order
	byLink    map[string]*simOrder       // category + "/" + orderLinkId -> order
	execs     []*simExecution            // in creation order
	seq       uint64                     // last sequence number handed out
	leverage  map[string]decimal.Decimal // symbol -> leverage set while flat (set-leverage)
	live      []*simOrder                // orders that may still be working, in creation order (compacted by the engine)
	resets    []*accountReset            // paper resets (paper.go), oldest first
	// dropped are the orders the history bound removed (D145) since the
	// state file last stored the account, kept only with trackDrops (a
	// Sim with a state file): its cache of encodings forgets them.
	dropped    []*simOrder
	trackDrops bool
}

// posKey identifies a position: one per symbol in one-way mode (idx 0),
// two (idx 1 buy side, 2 sell side) in hedge mode.
type posKey struct {
	symbol string
	idx    int
}

// A simPosition is one linear position. Size is ≥ 0; Side is "Buy" or
// "Sell" while Size > 0.
type simPosition struct {
	symbol         string
	idx            int
	side           string
	size           decimal.Decimal
	avgPrice       decimal.Decimal
	leverage       decimal.Decimal
	takeProfit     decimal.Decimal // zero = unset
	stopLoss       decimal.Decimal // zero = unset
	cumRealisedPnl decimal.Decimal
	createdMs      int64
	updatedMs      int64
	seq            uint64
}

// A simOrder is one order with its fill state. Quantities are in the base
// coin; cumExecFee is in feeCoin.
type simOrder struct {
	seq                uint64
	category           string
	symbol             string
	orderID            string
	orderLinkID        string
	side               string
	orderType          string
	timeInForce        string
	price              decimal.Decimal
	qty                decimal.Decimal
	cumExecQty         decimal.Decimal
	cumExecValue       decimal.Decimal
	cumExecFee         decimal.Decimal
	feeCoin            string
	avgPrice           decimal.Decimal // zero when nothing filled
	status             string
	rejectReason       string
	cancelType         string
	reduceOnly         bool
	positionIdx        int
	lastPriceOnCreated decimal.Decimal
	createdMs          int64
	updatedMs          int64

	// Order-engine fields; zero values for seeded orders.
	marketUnit     string          // spot market orders: "baseCoin" or "quoteCoin"
	quoteQty       bool            // qty is a quote amount (spot market buy by value)
	createType     string          // linear: "" = CreateByUser
	stopOrderType  string          // "" plain; TakeProfit / StopLoss for TP/SL closes
	takeProfit     decimal.Decimal // attached TP, applied to the position on fill
	stopLoss       decimal.Decimal
	closeOnTrigger bool
	closedPnl      decimal.Decimal // linear: realised PnL of the order's closing fills
	slipType       string          // slippageToleranceType as sent ("" = UNKNOWN)
	slip           string          // slippageTolerance as sent
	seeded         bool            // made by POST /sim/accounts/{key}/orders: never filled by price
}

// open reports whether the order is still working (docs/bybit.md "Order statuses").
func (o *simOrder) open() bool { return openOrderStatuses[o.status] }

// leavesQty is what is still working: qty − cumExecQty while open, else 0.
func (o *simOrder) leavesQty() decimal.Decimal {
	if !o.open() {
		return decimal.Zero
	}
	return o.qty.Sub(o.cumExecQty)
}

// A simExecution is one fill (or funding row) of an order.
type simExecution struct {
	seq         uint64
	category    string
	symbol      string
	execID      string
	orderID     string
	orderLinkID string
	side        string
	orderType   string
	orderPrice  decimal.Decimal
	orderQty    decimal.Decimal
	leavesQty   decimal.Decimal
	execPrice   decimal.Decimal
	execQty     decimal.Decimal
	execValue   decimal.Decimal
	execFee     decimal.Decimal
	feeRate     decimal.Decimal
	feeCurrency string
	isMaker     bool
	execType    string
	markPrice   decimal.Decimal // linear only
	closedSize  decimal.Decimal
	execPnl     decimal.Decimal // linear: PnL this fill realised (before fee)
	createType  string          // as the order's
	stopOrder   string          // as the order's stopOrderType
	execMs      int64
}

// ledgerLocked returns the account's ledger, creating it on first use.
func (a *account) ledgerLocked() *ledger {
	if a.ledger == nil {
		a.ledger = &ledger{
			balances:  make(map[string]decimal.Decimal),
			positions: make(map[posKey]*simPosition),
			byID:      make(map[string]*simOrder),
			byLink:    make(map[string]*simOrder),
			leverage:  make(map[string]decimal.Decimal),
		}
	}
	return a.ledger
}

// nextSeqLocked hands out the account's next sequence number (orders,
// executions and positions share it, so it orders every change).
func (l *ledger) nextSeqLocked() uint64 {
	l.seq++
	return l.seq
}

// setBalanceLocked sets a coin's wallet balance; zero removes the coin.
func (l *ledger) setBalanceLocked(coin string, v decimal.Decimal) {
	if v.IsZero() {
		delete(l.balances, coin)
		return
	}
	l.balances[coin] = v
}

// linkKey is the uniqueness scope of an orderLinkId: account + category.
func linkKey(category, link string) string { return category + "/" + link }

// orderByLinkLocked returns the order with this orderLinkId, or nil.
func (l *ledger) orderByLinkLocked(category, link string) *simOrder {
	if link == "" {
		return nil
	}
	return l.byLink[linkKey(category, link)]
}

// addOrderLocked stores a new order. The caller has checked that its
// orderLinkId is unused (orderByLinkLocked) and set seq.
func (l *ledger) addOrderLocked(o *simOrder) {
	l.orders = append(l.orders, o)
	l.live = append(l.live, o)
	l.byID[o.orderID] = o
	if o.orderLinkID != "" {
		l.byLink[linkKey(o.category, o.orderLinkID)] = o
	}
	if len(l.orders)%trimEvery == 0 {
		l.trimUnfilledLocked()
	}
}

// The history bound (D145): an account keeps its newest
// maxUnfilledHistory final orders that filled nothing (cancelled,
// rejected, deactivated with no fill); older ones leave the history, the
// id and orderLinkId look-ups with it. Every open order and every order
// with a fill stays (executions and closed PnL name them). An order that
// filled nothing moved no money and no position: it only fills the
// history, which a place-and-cancel loop would grow without end (memory,
// and the state file rewritten on every change).
var (
	maxUnfilledHistory = 1000
	trimEvery          = 256 // orders between trims: each trim walks the history once
)

// unfilledFinal reports whether o is final and filled nothing.
func (o *simOrder) unfilledFinal() bool {
	return !o.open() && o.status != statusCreated && !o.cumExecQty.IsPositive()
}

// trimUnfilledLocked drops the oldest unfilled final orders past
// maxUnfilledHistory.
func (l *ledger) trimUnfilledLocked() {
	n := 0
	for _, o := range l.orders {
		if o.unfilledFinal() {
			n++
		}
	}
	drop := n - maxUnfilledHistory
	if drop <= 0 {
		return
	}
	kept := l.orders[:0]
	for _, o := range l.orders {
		if drop > 0 && o.unfilledFinal() {
			drop--
			if l.trackDrops {
				l.dropped = append(l.dropped, o)
			}
			delete(l.byID, o.orderID)
			if k := linkKey(o.category, o.orderLinkID); o.orderLinkID != "" && l.byLink[k] == o {
				delete(l.byLink, k)
			}
			continue
		}
		kept = append(kept, o)
	}
	clear(l.orders[len(kept):])
	l.orders = kept
	l.compactLiveLocked()
}

// addExecutionLocked stores a new execution (seq already set).
func (l *ledger) addExecutionLocked(e *simExecution) { l.execs = append(l.execs, e) }

// setPositionLocked replaces the position at (symbol, idx). A position of
// size zero stays as a flat row (side "", size 0) with its leverage and
// cumRealisedPnl, as Bybit keeps it: the realised PnL of a closed
// position is still read and pushed. Positions of the other mode for the
// same symbol are removed: a symbol is either one-way (idx 0) or hedge
// (1, 2).
func (l *ledger) setPositionLocked(p *simPosition) {
	for k := range l.positions {
		if k.symbol == p.symbol && (k.idx == 0) != (p.idx == 0) {
			delete(l.positions, k)
		}
	}
	l.positions[posKey{p.symbol, p.idx}] = p
}

// hedgeSymbolLocked reports whether symbol is in hedge mode.
func (l *ledger) hedgeSymbolLocked(symbol string) bool {
	for k := range l.positions {
		if k.symbol == symbol && k.idx != 0 {
			return true
		}
	}
	return false
}

// sortedPositionsLocked returns the positions by symbol, then idx.
func (l *ledger) sortedPositionsLocked() []*simPosition {
	out := make([]*simPosition, 0, len(l.positions))
	for _, p := range l.positions {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].symbol != out[j].symbol {
			return out[i].symbol < out[j].symbol
		}
		return out[i].idx < out[j].idx
	})
	return out
}

// leverageForLocked is the leverage of symbol's position, or the default.
func (l *ledger) leverageForLocked(symbol string) decimal.Decimal {
	for k, p := range l.positions {
		if k.symbol == symbol && p.leverage.IsPositive() {
			return p.leverage
		}
	}
	if v, ok := l.leverage[symbol]; ok {
		return v
	}
	return defaultLeverage
}

// newOrderID derives an order id the way Bybit shapes them: a UUID on
// linear, a 19-digit number on spot.
func (s *Sim) newOrderID(category string, uid int64, seq uint64) string {
	if category == catSpot {
		return numericID(s.idHash(tagOrderID, uint64(uid), seq))
	}
	return s.uuid(tagOrderID, uint64(uid), seq)
}

// newExecID derives an execution id: a UUID on linear, a 19-digit number
// on spot.
func (s *Sim) newExecID(category string, uid int64, seq uint64) string {
	if category == catSpot {
		return numericID(s.idHash(tagExecID, uint64(uid), seq))
	}
	return s.uuid(tagExecID, uint64(uid), seq)
}

// newSpotLinkID is the orderLinkId Bybit assigns to a spot order sent
// without one (a numeric string).
func (s *Sim) newSpotLinkID(uid int64, seq uint64) string {
	return numericID(s.idHash(tagLinkID, uint64(uid), seq))
}

// idWords is words followed by Config.IDNonce when there is one: the
// hash input of an id the simulator hands out, so ids of two runs with the
// same seed differ while a zero nonce keeps the seed's own ids.
func (s *Sim) idWords(words ...uint64) []uint64 {
	if s.idNonce == 0 {
		return words
	}
	return append(words[:len(words):len(words)], tagIDNonce, s.idNonce)
}

// idHash is the hash of an id's words (idWords).
func (s *Sim) idHash(words ...uint64) uint64 { return s.model.hash(s.idWords(words...)...) }

// uuid formats two hashes of words (and the id nonce) as a version-4
// style UUID.
func (s *Sim) uuid(words ...uint64) string {
	a := s.idHash(words...)
	b := mix(a ^ 0x6a09e667f3bcc908)
	x := fmt.Sprintf("%016x%016x", a, b)
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-" + string("89ab"[b>>62]) + x[17:20] + "-" + x[20:32]
}

// numericID is a 19-digit decimal id starting with 1.
func numericID(h uint64) string { return fmt.Sprintf("1%018d", h%1_000_000_000_000_000_000) }

// coinUSD is the USD price of a coin: 1 for USDT and USDC, else the spot
// last price of COINUSDT. ok is false for a coin the simulator does not
// list.
func (s *Sim) coinUSD(coin string, sec int64) (price decimal.Decimal, ok bool) {
	if usdStable[coin] {
		return decimal.NewFromInt(1), true
	}
	in := s.catalog.get(catSpot, coin+"USDT")
	if in == nil {
		return decimal.Zero, false
	}
	return s.model.last(in, sec), true
}

// knownCoin reports whether coin may hold a balance in the simulator.
func (s *Sim) knownCoin(coin string) bool {
	_, ok := s.coinUSD(coin, 0)
	return ok
}

// positionView is a position with its derived numbers at one second.
type positionView struct {
	p     *simPosition
	in    *instrument
	mark  decimal.Decimal
	value decimal.Decimal // size × avgPrice
	upl   decimal.Decimal // rounded to amountPlaces
	im    decimal.Decimal // value / leverage, rounded
	mm    decimal.Decimal // value × maintenanceRate, rounded
	liq   decimal.Decimal // zero when none
	be    decimal.Decimal // break-even price, zero when flat
}

// viewPosition derives the numbers of p at second sec. p may be flat.
func (s *Sim) viewPosition(in *instrument, p *simPosition, sec int64) positionView {
	v := positionView{p: p, in: in, mark: s.model.mark(in, sec)}
	if p.size.IsZero() {
		return v
	}
	v.value = p.size.Mul(p.avgPrice)
	diff := v.mark.Sub(p.avgPrice)
	if p.side == "Sell" {
		diff = diff.Neg()
	}
	v.upl = diff.Mul(p.size).Round(amountPlaces)
	lev := p.leverage
	if !lev.IsPositive() {
		lev = defaultLeverage
	}
	v.im = v.value.DivRound(lev, amountPlaces)
	v.mm = v.value.Mul(maintenanceRate).Round(amountPlaces)
	inv := decimal.NewFromInt(1).DivRound(lev, 16)
	two := linearTakerFee.Mul(decimal.NewFromInt(2))
	if p.side == "Buy" {
		v.liq = p.avgPrice.Mul(decimal.NewFromInt(1).Sub(inv).Add(maintenanceRate))
		v.be = p.avgPrice.Mul(decimal.NewFromInt(1).Add(two))
	} else {
		v.liq = p.avgPrice.Mul(decimal.NewFromInt(1).Add(inv).Sub(maintenanceRate))
		v.be = p.avgPrice.Mul(decimal.NewFromInt(1).Sub(two))
	}
	v.liq = roundToTick(v.liq, in.tick)
	v.be = roundToTick(v.be, in.tick)
	if !v.liq.IsPositive() {
		v.liq = decimal.Zero
	}
	return v
}

// roundToTick rounds d to a multiple of tick.
func roundToTick(d, tick decimal.Decimal) decimal.Decimal {
	if !tick.IsPositive() {
		return d
	}
	return d.Div(tick).Round(0).Mul(tick)
}
