package sim

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// An account keeps its newest maxUnfilledHistory final orders that filled
// nothing; older ones leave the history and both look-ups. Open orders
// and orders with a fill always stay, whatever their age.
func TestHistoryDropsOldestUnfilledOrders(t *testing.T) {
	a := &account{}
	l := a.ledgerLocked()
	const total = 3000
	status := func(i int) (string, decimal.Decimal) {
		switch {
		case i%10 == 3:
			return "Filled", decimal.NewFromInt(1)
		case i%10 == 7:
			return "New", decimal.Zero
		case i%10 == 8:
			return "PartiallyFilledCanceled", decimal.RequireFromString("0.5")
		}
		return "Cancelled", decimal.Zero
	}
	for i := range total {
		st, filled := status(i)
		l.addOrderLocked(&simOrder{seq: uint64(i + 1), orderID: fmt.Sprint("id-", i), orderLinkID: fmt.Sprint("link-", i), category: catLinear,
			status: st, qty: decimal.NewFromInt(1), cumExecQty: filled})
	}
	l.trimUnfilledLocked()
	unfilled, oldestUnfilled := 0, -1
	kept := map[string]bool{}
	for _, o := range l.orders {
		kept[o.orderID] = true
		if o.unfilledFinal() {
			unfilled++
			if oldestUnfilled < 0 {
				oldestUnfilled = int(o.seq - 1)
			}
		}
	}
	if unfilled != maxUnfilledHistory {
		t.Fatalf("%d unfilled final orders kept, want %d", unfilled, maxUnfilledHistory)
	}
	for i := range total {
		id := fmt.Sprint("id-", i)
		st, _ := status(i)
		want := st != "Cancelled" || i >= oldestUnfilled
		if kept[id] != want || (l.byID[id] != nil) != want || (l.orderByLinkLocked(catLinear, fmt.Sprint("link-", i)) != nil) != want {
			t.Fatalf("order %d (%s): kept %v, by id %v, by link %v; want %v", i, st, kept[id], l.byID[id] != nil,
				l.orderByLinkLocked(catLinear, fmt.Sprint("link-", i)) != nil, want)
		}
	}
	// The unfilled ones kept are the newest: every one after the oldest kept.
	for i := oldestUnfilled; i < total; i++ {
		if st, _ := status(i); st == "Cancelled" && !kept[fmt.Sprint("id-", i)] {
			t.Fatalf("unfilled order %d dropped while %d is kept", i, oldestUnfilled)
		}
	}
	for i := 1; i < len(l.orders); i++ {
		if l.orders[i-1].seq >= l.orders[i].seq {
			t.Fatal("history out of order")
		}
	}
	for _, o := range l.live {
		if !o.open() && o.status != statusCreated {
			t.Fatalf("a final order left in live: %s", o.orderID)
		}
	}
}

// With the state file on, a place-and-cancel loop keeps the file and the
// cache of encodings bounded: the orders the history drops leave both,
// and a restart reads back only what was kept.
func TestStateFileHistoryStaysBounded(t *testing.T) {
	// Smaller bounds: every change rewrites the file (two fsyncs).
	defer func(m, e int) { maxUnfilledHistory, trimEvery = m, e }(maxUnfilledHistory, trimEvery)
	maxUnfilledHistory, trimEvery = 40, 16
	path := filepath.Join(t.TempDir(), "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 1, clock)
	rounds := maxUnfilledHistory + 2*trimEvery + 50
	for i := range rounds {
		if i%4 == 3 {
			clock.Advance(time.Second) // inside the per-second order limits
		}
		id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"` + restingBuyPrice(ts) + `"}`)
		mustOK(t, ts.post("/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`"}`))
	}
	s := p.Sim()
	s.mu.Lock()
	kept, encoded := len(s.keys[paperKey.APIKey].acct.ledger.orders), len(s.store.encoded)
	s.mu.Unlock()
	if kept > maxUnfilledHistory+trimEvery || encoded > maxUnfilledHistory+trimEvery {
		t.Fatalf("after %d orders: %d kept, %d encodings; want at most %d", rounds, kept, encoded, maxUnfilledHistory+trimEvery)
	}
	p.Close()
	p2, ts2 := startDurable(t, path, 2, clock)
	p2.Sim().mu.Lock()
	back := len(ts2.s.keys[paperKey.APIKey].acct.ledger.orders)
	p2.Sim().mu.Unlock()
	if back != kept {
		t.Fatalf("restart read %d orders, the file had %d", back, kept)
	}
}
