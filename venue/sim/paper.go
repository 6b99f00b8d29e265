package sim

import (
	"errors"
	"sort"

	"github.com/shopspring/decimal"
)

// The paper account at a glance, and starting it over: what `paper status`
// and `paper reset` show and do (docs/simulator.md "Durable state").

// cancelByAdmin is Bybit's cancelType for an order the exchange cancelled
// itself; a reset cancels every open order with it.
const cancelByAdmin = "CancelByAdmin"

// PaperAccount is one account at a glance: its wallet balances (coins
// with a balance), its open orders and its open positions.
type PaperAccount struct {
	Balances   map[string]decimal.Decimal
	OpenOrders []PaperOrder
	Positions  []PaperPosition
}

// PaperOrder is an open order of a PaperAccount.
type PaperOrder struct {
	Category    string
	Symbol      string
	OrderID     string
	OrderLinkID string
	Side        string
	OrderType   string
	Status      string
	Price       decimal.Decimal
	Qty         decimal.Decimal
	LeavesQty   decimal.Decimal
}

// PaperPosition is an open linear position of a PaperAccount.
type PaperPosition struct {
	Symbol         string
	Side           string
	Size           decimal.Decimal
	AvgPrice       decimal.Decimal
	Leverage       decimal.Decimal
	TakeProfit     decimal.Decimal
	StopLoss       decimal.Decimal
	CumRealisedPnl decimal.Decimal
}

// An accountReset is one ResetAccount in the ledger's history: it closed
// every position without a fill and moved the wallet to the opening
// balances, one walletMove per coin that changed. The transaction log
// shows the moves, and the closed PnL and position sizes it replays from
// the executions start from flat after it (closedpnl.go).
type accountReset struct {
	seq   uint64 // orders it among the executions
	ms    int64
	moves []walletMove
}

// A walletMove is one coin's change of a reset; seq keys its row in the
// transaction log.
type walletMove struct {
	seq    uint64
	coin   string
	change decimal.Decimal
}

// ErrUnknownKey is the answer of Account and ResetAccount for an API key
// the simulator does not hold.
var ErrUnknownKey = errors.New("sim: no account holds this API key")

// Account returns the account of apiKey as it stands now (fills due by
// now included).
func (s *Sim) Account(apiKey string) (PaperAccount, error) {
	now := s.now()
	s.mu.Lock()
	defer s.unlockAndFlush()
	k := s.keys[apiKey]
	if k == nil {
		return PaperAccount{}, ErrUnknownKey
	}
	s.advanceLocked(now)
	return viewAccount(k.acct.ledgerLocked()), nil
}

// ResetAccount starts the account of apiKey over with the given wallet:
// every open order is cancelled (cancelType CancelByAdmin), every position
// is closed without a fill (a flat row, default leverage; a close without
// a fill realises nothing, so cumRealisedPnl stays), leverage settings are forgotten and the wallet is replaced. The
// order and execution history stays, so a client that asks about an
// earlier order still finds it. The private stream gets the cancelled
// orders, the flat positions and the new wallet, as for any other change,
// and the change is durable before ResetAccount returns. It returns the
// account as it was before.
func (s *Sim) ResetAccount(apiKey string, balances map[string]decimal.Decimal) (PaperAccount, error) {
	now := s.now()
	s.mu.Lock()
	defer s.unlockAndFlush()
	k := s.keys[apiKey]
	if k == nil {
		return PaperAccount{}, ErrUnknownKey
	}
	s.advanceLocked(now)
	a := k.acct
	l := a.ledgerLocked()
	before := viewAccount(l)
	ms := now.UnixMilli()
	reset := &accountReset{seq: l.nextSeqLocked(), ms: ms}
	events := map[string]*event{}
	eventFor := func(category string) *event {
		if events[category] == nil {
			events[category] = s.newEvent(a, category, ms)
		}
		return events[category]
	}
	for _, o := range l.live {
		if o.open() || o.status == statusCreated {
			status := statusCancelled
			if o.category == catSpot && o.cumExecQty.IsPositive() {
				status = statusPFCancelled
			}
			s.closeOrderLocked(eventFor(o.category), o, status, reasonNone, cancelByAdmin, ms)
		}
	}
	l.compactLiveLocked()
	clear(l.leverage)
	for _, p := range l.sortedPositionsLocked() {
		l.setPositionLocked(&simPosition{symbol: p.symbol, idx: p.idx, leverage: defaultLeverage, cumRealisedPnl: p.cumRealisedPnl,
			createdMs: p.createdMs, updatedMs: ms, seq: l.nextSeqLocked()})
		eventFor(catLinear).position(p.symbol)
	}
	clear(l.balances)
	for coin, amount := range balances {
		l.setBalanceLocked(coin, amount)
	}
	coins := make([]string, 0, len(before.Balances)+len(l.balances))
	for coin := range before.Balances {
		coins = append(coins, coin)
	}
	for coin := range l.balances {
		if _, ok := before.Balances[coin]; !ok {
			coins = append(coins, coin)
		}
	}
	sort.Strings(coins)
	for _, coin := range coins {
		if change := l.balances[coin].Sub(before.Balances[coin]); !change.IsZero() {
			reset.moves = append(reset.moves, walletMove{seq: l.nextSeqLocked(), coin: coin, change: change})
		}
	}
	l.resets = append(l.resets, reset)
	ev := eventFor(catLinear)
	ev.wallet = true
	for _, cat := range []string{catLinear, catSpot} {
		if e := events[cat]; e != nil {
			e.close()
		}
	}
	return before, nil
}

// APIKeys returns every API key the simulator accepts, sorted.
func (s *Sim) APIKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.keys))
	for k := range s.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// viewAccount is a ledger at a glance.
func viewAccount(l *ledger) PaperAccount {
	v := PaperAccount{Balances: make(map[string]decimal.Decimal, len(l.balances))}
	for coin, amount := range l.balances {
		v.Balances[coin] = amount
	}
	for _, o := range l.live {
		if !o.open() {
			continue
		}
		v.OpenOrders = append(v.OpenOrders, PaperOrder{
			Category: o.category, Symbol: o.symbol, OrderID: o.orderID, OrderLinkID: o.orderLinkID,
			Side: o.side, OrderType: o.orderType, Status: o.status, Price: o.price, Qty: o.qty, LeavesQty: o.leavesQty(),
		})
	}
	for _, p := range l.sortedPositionsLocked() {
		if !p.size.IsPositive() {
			continue
		}
		v.Positions = append(v.Positions, PaperPosition{
			Symbol: p.symbol, Side: p.side, Size: p.size, AvgPrice: p.avgPrice, Leverage: p.leverage,
			TakeProfit: p.takeProfit, StopLoss: p.stopLoss, CumRealisedPnl: p.cumRealisedPnl,
		})
	}
	return v
}
