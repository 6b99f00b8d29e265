package sim

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// The matching suite: each case trades through the signed REST handler
// and checks the outcome against the public order book of the same
// second (the book the matcher walks) or against hand-computed numbers.

// within sums the ask (Buy) or bid (Sell) sizes whose price is inside limit.
func within(levels [][2]decimal.Decimal, buy bool, limit decimal.Decimal) (qty, value decimal.Decimal) {
	for _, l := range levels {
		if (buy && l[0].GreaterThan(limit)) || (!buy && l[0].LessThan(limit)) {
			break
		}
		qty = qty.Add(l[1])
		value = value.Add(l[0].Mul(l[1]))
	}
	return qty, value
}

func TestMatchGTCRestsThenFillsWhenPriceCrosses(t *testing.T) {
	ts := newTradeSim(t, 1, map[string]string{"USDT": "10000"})
	ts.movePrice("linear", "BTCUSDT", "60000")
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"59900.0","orderLinkId":"gtc-1"}`)
	o := ts.order("linear", id)
	wantField(t, "resting", o, "orderStatus", "New")
	wantDec(t, "resting", o, "leavesQty", "0.010")
	if len(ts.executions("linear", id)) != 0 {
		t.Fatal("a resting order has fills")
	}
	// A move that stops short leaves it resting.
	ts.movePrice("linear", "BTCUSDT", "59900.1")
	wantField(t, "above", ts.order("linear", id), "orderStatus", "New")
	// Crossing fills it, as maker, at its own price.
	ts.movePrice("linear", "BTCUSDT", "59850")
	o = ts.order("linear", id)
	wantField(t, "crossed", o, "orderStatus", "Filled")
	wantDec(t, "crossed", o, "avgPrice", "59900")
	wantDec(t, "crossed", o, "cumExecQty", "0.010")
	ex := ts.executions("linear", id)
	if len(ex) != 1 {
		t.Fatalf("%d executions", len(ex))
	}
	wantField(t, "fill", ex[0], "isMaker", "true")
	wantDec(t, "fill", ex[0], "execPrice", "59900")
	wantDec(t, "fill", ex[0], "execFee", "0.1198") // 0.01 × 59900 × 0.0002
}

func TestMatchIOCFillsWhatItCanAndCancelsTheRest(t *testing.T) {
	ts := newTradeSim(t, 2, map[string]string{"USDT": "1000000"})
	ts.movePrice("linear", "ETHUSDT", "3000")
	_, asks := ts.book("linear", "ETHUSDT")
	limit := asks[2][0] // three levels inside the limit
	avail, value := within(asks, true, limit)
	qty := avail.Add(decimal.NewFromInt(50))
	id := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","timeInForce":"IOC","qty":"` + qty.StringFixed(2) + `","price":"` + limit.StringFixed(2) + `"}`)
	o := ts.order("linear", id)
	wantField(t, "ioc", o, "orderStatus", "Cancelled")
	wantField(t, "ioc", o, "rejectReason", "EC_CancelForNoFullFill")
	wantDec(t, "ioc", o, "cumExecQty", avail.String())
	wantDec(t, "ioc", o, "cumExecValue", value.String())
	wantDec(t, "ioc", o, "leavesQty", "0")
	if n := len(ts.executions("linear", id)); n != 3 {
		t.Fatalf("%d fills, want one per level inside the limit (3)", n)
	}
	// An IOC whose limit reaches nothing is cancelled with no fill.
	bids, _ := ts.book("linear", "ETHUSDT")
	id = ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","timeInForce":"IOC","qty":"1","price":"` + bids[0][0].StringFixed(2) + `"}`)
	o = ts.order("linear", id)
	wantField(t, "ioc none", o, "orderStatus", "Cancelled")
	wantField(t, "ioc none", o, "rejectReason", "EC_NoImmediateQtyToFill")
	wantDec(t, "ioc none", o, "cumExecQty", "0")

	// Spot: a partial IOC ends PartiallyFilledCanceled.
	sp := newTradeSim(t, 2, map[string]string{"USDT": "1000000"})
	_, sasks := sp.book("spot", "BTCUSDT")
	sAvail, _ := within(sasks, true, sasks[0][0])
	id = sp.create(`{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","timeInForce":"IOC","qty":"` + sAvail.Add(decimal.RequireFromString("0.5")).StringFixed(6) + `","price":"` + sasks[0][0].StringFixed(2) + `"}`)
	o = sp.order("spot", id)
	wantField(t, "spot ioc", o, "orderStatus", "PartiallyFilledCanceled")
	wantField(t, "spot ioc", o, "rejectReason", "EC_CancelForNoFullFill")
	wantDec(t, "spot ioc", o, "cumExecQty", sAvail.String())
}

func TestMatchFOKAllOrNothing(t *testing.T) {
	ts := newTradeSim(t, 3, map[string]string{"USDT": "1000000"})
	bids, _ := ts.book("linear", "SOLUSDT")
	limit := bids[1][0]
	avail, value := within(bids, false, limit)
	// Seed a long position so the sells are plain closes, not needed for
	// margin, then try one FOK too big and one that fits.
	big := avail.Add(decimal.RequireFromString("0.1"))
	id := ts.create(`{"category":"linear","symbol":"SOLUSDT","side":"Sell","orderType":"Limit","timeInForce":"FOK","qty":"` + big.StringFixed(1) + `","price":"` + limit.StringFixed(3) + `"}`)
	o := ts.order("linear", id)
	wantField(t, "fok big", o, "orderStatus", "Cancelled")
	wantDec(t, "fok big", o, "cumExecQty", "0")
	if len(ts.executions("linear", id)) != 0 {
		t.Fatal("FOK that could not fill everything filled something")
	}
	if p := ts.position("SOLUSDT"); field(t, p, "size") != "0.0" {
		t.Fatalf("position after a killed FOK: %v", field(t, p, "size"))
	}
	id = ts.create(`{"category":"linear","symbol":"SOLUSDT","side":"Sell","orderType":"Limit","timeInForce":"FOK","qty":"` + avail.StringFixed(1) + `","price":"` + limit.StringFixed(3) + `"}`)
	o = ts.order("linear", id)
	wantField(t, "fok fits", o, "orderStatus", "Filled")
	wantDec(t, "fok fits", o, "cumExecValue", value.String())
	p := ts.position("SOLUSDT")
	wantField(t, "fok position", p, "side", "Sell")
	wantDec(t, "fok position", p, "size", avail.String())
}

func TestMatchPostOnlyThatWouldTakeIsRejected(t *testing.T) {
	ts := newTradeSim(t, 4, map[string]string{"USDT": "100000"})
	bids, asks := ts.book("linear", "BTCUSDT")
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","timeInForce":"PostOnly","qty":"0.01","price":"` + asks[0][0].StringFixed(1) + `"}`)
	o := ts.order("linear", id)
	wantField(t, "postonly taking", o, "orderStatus", "Cancelled")
	wantField(t, "postonly taking", o, "rejectReason", "EC_PostOnlyWillTakeLiquidity")
	wantDec(t, "postonly taking", o, "cumExecQty", "0")
	id = ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","timeInForce":"PostOnly","qty":"0.01","price":"` + bids[0][0].StringFixed(1) + `"}`)
	wantField(t, "postonly making", ts.order("linear", id), "orderStatus", "New")
}

func TestMatchMarketIsIOCWithinItsProtectionPrice(t *testing.T) {
	ts := newTradeSim(t, 5, map[string]string{"USDT": "10000000"})
	_, asks := ts.book("linear", "BTCUSDT")
	tick := decimal.RequireFromString("0.1")
	limit := asks[0][0].Add(tick.Mul(decimal.NewFromInt(3)))
	avail, value := within(asks, true, limit)
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"` + avail.Add(decimal.NewFromInt(5)).StringFixed(3) + `","slippageToleranceType":"TickSize","slippageTolerance":"3"}`)
	o := ts.order("linear", id)
	wantField(t, "market", o, "timeInForce", "IOC")
	wantDec(t, "market", o, "price", limit.String()) // the protection price, as Bybit shows it
	wantField(t, "market", o, "orderStatus", "Cancelled")
	wantDec(t, "market", o, "cumExecQty", avail.String())
	wantDec(t, "market", o, "cumExecValue", value.String())
	for _, e := range ts.executions("linear", id) {
		if p := decimal.RequireFromString(field(t, e, "execPrice")); p.GreaterThan(limit) {
			t.Fatalf("fill at %s beyond the protection price %s", p, limit)
		}
	}
	// Without a tolerance the band is the price limit: a small order fills.
	id = ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.001"}`)
	wantField(t, "small market", ts.order("linear", id), "orderStatus", "Filled")
}

func TestMatchReduceOnlyNeverFlips(t *testing.T) {
	ts := newTradeSim(t, 6, map[string]string{"USDT": "100000"})
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.010"}`)
	p := ts.position("BTCUSDT")
	wantField(t, "short", p, "side", "Sell")
	// A reduce-only buy of five times the position closes it and no more.
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.050","reduceOnly":true}`)
	o := ts.order("linear", id)
	wantDec(t, "reduce", o, "cumExecQty", "0.010")
	wantField(t, "reduce", o, "orderStatus", "Cancelled")
	wantField(t, "reduce", o, "cancelType", "CancelByReduceOnly")
	p = ts.position("BTCUSDT")
	wantDec(t, "flat", p, "size", "0")
	wantField(t, "flat", p, "side", "")
	// Flat: a new reduce-only order is refused.
	wantCode(t, ts.post("/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.010","reduceOnly":true}`), codeReduceOnly)
	// A resting reduce-only order larger than the position is cut at the
	// position when it fills.
	ts.movePrice("linear", "BTCUSDT", "60000")
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.020"}`)
	id = ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Limit","qty":"0.100","price":"60500.0","reduceOnly":true}`)
	ts.movePrice("linear", "BTCUSDT", "60600")
	o = ts.order("linear", id)
	wantDec(t, "resting reduce", o, "cumExecQty", "0.020")
	wantField(t, "resting reduce", o, "cancelType", "CancelByReduceOnly")
	wantDec(t, "resting reduce", ts.position("BTCUSDT"), "size", "0")
}

// TestPositionsPnLAndWalletAfterFills checks positions, average price,
// realised PnL and the wallet against numbers computed by hand. Every fill
// is a resting limit order filled as maker (fee 0.02 %) at its own price.
func TestPositionsPnLAndWalletAfterFills(t *testing.T) {
	ts := newTradeSim(t, 7, map[string]string{"USDT": "10000"})
	lin := func(side, qty, price string) string {
		return ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"` + side + `","orderType":"Limit","qty":"` + qty + `","price":"` + price + `"}`)
	}
	ts.movePrice("linear", "BTCUSDT", "60000")
	lin("Buy", "0.010", "59900.0")
	ts.movePrice("linear", "BTCUSDT", "59900") // fee 0.1198
	lin("Buy", "0.020", "59600.0")
	ts.movePrice("linear", "BTCUSDT", "59600") // fee 0.2384
	p := ts.position("BTCUSDT")
	wantField(t, "long", p, "side", "Buy")
	wantDec(t, "long", p, "size", "0.03")
	wantDec(t, "long", p, "avgPrice", "59700") // (599 + 1192) / 0.03
	wantDec(t, "long", p, "cumRealisedPnl", "-0.3582")
	wantDec(t, "wallet", ts.coin("USDT"), "walletBalance", "9999.6418")

	ts.movePrice("linear", "BTCUSDT", "60000")
	lin("Sell", "0.015", "60300.0")
	ts.movePrice("linear", "BTCUSDT", "60300") // pnl +9, fee 0.1809
	p = ts.position("BTCUSDT")
	wantDec(t, "reduced", p, "size", "0.015")
	wantDec(t, "reduced", p, "avgPrice", "59700")
	wantDec(t, "reduced", p, "cumRealisedPnl", "8.4609")
	wantDec(t, "wallet", ts.coin("USDT"), "walletBalance", "10008.4609")

	ts.movePrice("linear", "BTCUSDT", "60000")
	id := lin("Sell", "0.025", "60100.0")
	ts.movePrice("linear", "BTCUSDT", "60100") // closes 0.015: pnl +6, fee 0.3005; opens 0.010 short
	p = ts.position("BTCUSDT")
	wantField(t, "flipped", p, "side", "Sell")
	wantDec(t, "flipped", p, "size", "0.01")
	wantDec(t, "flipped", p, "avgPrice", "60100")
	wantDec(t, "flipped", p, "cumRealisedPnl", "14.1604")
	wantDec(t, "wallet", ts.coin("USDT"), "walletBalance", "10014.1604")
	ex := ts.executions("linear", id)
	if len(ex) != 1 {
		t.Fatalf("%d fills", len(ex))
	}
	wantDec(t, "flip fill", ex[0], "closedSize", "0.015")
	// Unrealised PnL of the short at 60000: (60100 − 60000) × 0.01.
	ts.movePrice("linear", "BTCUSDT", "60000")
	p = ts.position("BTCUSDT")
	mark := decimal.RequireFromString(field(t, p, "markPrice"))
	wantDec(t, "upl", p, "unrealisedPnl", decimal.RequireFromString("60100").Sub(mark).Mul(decimal.RequireFromString("0.01")).String())

	// Spot: balances move, fee in the coin received.
	sp := newTradeSim(t, 7, map[string]string{"USDT": "1000"})
	sp.movePrice("spot", "ETHUSDT", "3000")
	sp.create(`{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.10000","price":"2990.00"}`)
	wantDec(t, "locked", sp.coin("USDT"), "locked", "299")
	sp.movePrice("spot", "ETHUSDT", "2990")
	wantDec(t, "spot usdt", sp.coin("USDT"), "walletBalance", "701")  // 1000 − 0.1 × 2990
	wantDec(t, "spot eth", sp.coin("ETH"), "walletBalance", "0.0999") // 0.1 − 0.1 × 0.001
	wantDec(t, "unlocked", sp.coin("USDT"), "locked", "0")
}

// A position closed in full stays as a flat row with its cumRealisedPnl
// and leverage, as Bybit keeps it: read by symbol it still shows the
// realised loss, a leverage change reaches it, and the next fill counts
// on from it; a read by settleCoin lists only open positions.
func TestFlatPositionKeepsItsRealisedPnl(t *testing.T) {
	ts := newTradeSim(t, 7, map[string]string{"USDT": "10000"})
	lin := func(side, qty, price string) string {
		return ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"` + side + `","orderType":"Limit","qty":"` + qty + `","price":"` + price + `"}`)
	}
	ts.movePrice("linear", "BTCUSDT", "60000")
	lin("Buy", "0.010", "59900.0")
	ts.movePrice("linear", "BTCUSDT", "59900") // fee 0.1198
	ts.movePrice("linear", "BTCUSDT", "58000")
	lin("Sell", "0.010", "58500.0")
	ts.movePrice("linear", "BTCUSDT", "58500") // pnl −14, fee 0.117
	p := ts.position("BTCUSDT")
	wantDec(t, "flat", p, "size", "0")
	wantField(t, "flat", p, "side", "")
	wantDec(t, "flat", p, "cumRealisedPnl", "-14.2368")
	wantDec(t, "wallet", ts.coin("USDT"), "walletBalance", "9985.7632")
	r := ts.get("/v5/position/list", url.Values{"category": {"linear"}, "settleCoin": {"USDT"}})
	mustOK(t, r)
	var page struct {
		List []map[string]any `json:"list"`
	}
	decodeInto(t, r.result, &page)
	if len(page.List) != 0 {
		t.Fatalf("a read by settleCoin lists a flat position: %s", r.result)
	}
	mustOK(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"BTCUSDT","buyLeverage":"7","sellLeverage":"7"}`))
	wantDec(t, "flat leverage", ts.position("BTCUSDT"), "leverage", "7")
	ts.movePrice("linear", "BTCUSDT", "59000")
	lin("Buy", "0.010", "58900.0")
	ts.movePrice("linear", "BTCUSDT", "58900") // fee 0.1178
	p = ts.position("BTCUSDT")
	wantDec(t, "reopened", p, "size", "0.01")
	wantDec(t, "reopened", p, "leverage", "7")
	wantDec(t, "reopened", p, "cumRealisedPnl", "-14.3546")
}

func TestTPSLTriggerClosesThePosition(t *testing.T) {
	ts := newTradeSim(t, 8, map[string]string{"USDT": "100000"})
	ts.movePrice("linear", "BTCUSDT", "60000")
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.010","takeProfit":"61000.0","stopLoss":"59000.0"}`)
	p := ts.position("BTCUSDT")
	wantDec(t, "tp", p, "takeProfit", "61000")
	wantDec(t, "sl", p, "stopLoss", "59000")
	// Move the stop with trading-stop, then let the price fall through it.
	mustOK(t, ts.post("/v5/position/trading-stop", `{"category":"linear","symbol":"BTCUSDT","tpslMode":"Full","positionIdx":0,"stopLoss":"59500.0"}`))
	wantDec(t, "sl moved", ts.position("BTCUSDT"), "stopLoss", "59500")
	wantCode(t, ts.post("/v5/position/trading-stop", `{"category":"linear","symbol":"BTCUSDT","tpslMode":"Full","positionIdx":0,"stopLoss":"59500.0"}`), codeNotModified)
	ts.movePrice("linear", "BTCUSDT", "59600")
	wantDec(t, "above sl", ts.position("BTCUSDT"), "size", "0.01")
	ts.movePrice("linear", "BTCUSDT", "59400")
	p = ts.position("BTCUSDT")
	wantDec(t, "stopped", p, "size", "0")
	r := ts.get("/v5/order/history", url.Values{"category": {"linear"}, "symbol": {"BTCUSDT"}})
	mustOK(t, r)
	var page struct {
		List []map[string]any `json:"list"`
	}
	decodeInto(t, r.result, &page)
	if len(page.List) != 2 || page.List[0]["createType"] != "CreateByStopLoss" || page.List[0]["stopOrderType"] != "StopLoss" ||
		page.List[0]["orderStatus"] != "Filled" || page.List[0]["reduceOnly"] != true {
		t.Fatalf("history after the stop: %s", r.result)
	}
}

func TestSetLeverage(t *testing.T) {
	ts := newTradeSim(t, 9, map[string]string{"USDT": "100000"})
	mustOK(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"5","sellLeverage":"5"}`))
	wantDec(t, "leverage", ts.position("ETHUSDT"), "leverage", "5")
	wantCode(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"5","sellLeverage":"5"}`), codeLeverageSame)
	wantCode(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"5","sellLeverage":"6"}`), codeParams)
	wantCode(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"101","sellLeverage":"101"}`), codeParams)
	ts.movePrice("linear", "ETHUSDT", "3000")
	ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"1.00"}`)
	p := ts.position("ETHUSDT")
	wantDec(t, "leverage kept", p, "leverage", "5")
	// IM = size × avgPrice / leverage.
	im := decimal.RequireFromString(field(t, p, "avgPrice")).DivRound(decimal.NewFromInt(5), amountPlaces)
	wantDec(t, "im", p, "positionIM", im.String())
}

// A resting order fills over time, with no price move forced: at the first
// second whose walked last price reaches it, as the clock advances.
func TestRestingOrderFillsOverTimeAtTheFirstCrossingSecond(t *testing.T) {
	ts := newTradeSim(t, 14, map[string]string{"USDT": "100000"})
	in := ts.s.catalog.get(catLinear, "ETHUSDT")
	start := floorDiv(ts.clock.ms(), 1000)
	// The lowest last price of the next two hours, and the first second
	// that reaches it.
	low, first := ts.s.model.last(in, start+1), start+1
	for sec := start + 1; sec <= start+7200; sec++ {
		if p := ts.s.model.last(in, sec); p.LessThan(low) {
			low, first = p, sec
		}
	}
	if !low.LessThan(ts.s.model.last(in, start).Sub(in.tick)) {
		t.Fatal("the walk of seed 14 no longer falls within two hours: pick another seed")
	}
	id := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.10","price":"` + low.StringFixed(2) + `"}`)
	ts.clock.Advance(time.Duration(first-start-1) * time.Second)
	wantField(t, "before", ts.order("linear", id), "orderStatus", "New")
	r := do(t, ts.s, http.MethodPost, "/sim/clock", []byte(`{"advance_ms":7200000}`), nil)
	if r.status != http.StatusOK {
		t.Fatal(r.status)
	}
	o := ts.order("linear", id)
	wantField(t, "after", o, "orderStatus", "Filled")
	wantField(t, "after", o, "updatedTime", itoa(first*1000))
	ex := ts.executions("linear", id)
	if len(ex) != 1 || field(t, ex[0], "execTime") != itoa(first*1000) {
		t.Fatalf("fill %v, want at %d", ex, first*1000)
	}
	wantDec(t, "after", ex[0], "execPrice", low.String())
}

func TestTakeProfitTriggersOnlyOnACrossing(t *testing.T) {
	ts := newTradeSim(t, 15, map[string]string{"USDT": "100000"})
	ts.movePrice("linear", "BTCUSDT", "60000")
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.010","takeProfit":"61000.0"}`)
	ts.movePrice("linear", "BTCUSDT", "60900")
	wantDec(t, "below tp", ts.position("BTCUSDT"), "size", "0.01")
	ts.movePrice("linear", "BTCUSDT", "61000")
	wantDec(t, "tp hit", ts.position("BTCUSDT"), "size", "0")

	// A seeded position whose TP the price is already past does not fire
	// until the price comes back and crosses it.
	seed := `[{"symbol":"BTCUSDT","side":"Buy","size":"0.01","avgPrice":"50000","takeProfit":"59000"}]`
	if r := do(t, ts.s, http.MethodPost, "/sim/accounts/"+ts.k.APIKey+"/positions", []byte(seed), nil); r.status != http.StatusOK {
		t.Fatalf("seed: %d %s", r.status, r.body)
	}
	ts.movePrice("linear", "BTCUSDT", "61500")
	wantDec(t, "past tp", ts.position("BTCUSDT"), "size", "0.01")
	ts.movePrice("linear", "BTCUSDT", "58000")
	wantDec(t, "back below", ts.position("BTCUSDT"), "size", "0.01")
	ts.movePrice("linear", "BTCUSDT", "59000")
	wantDec(t, "crossed", ts.position("BTCUSDT"), "size", "0")
}

func TestSpotMarketBuyByValue(t *testing.T) {
	ts := newTradeSim(t, 16, map[string]string{"USDT": "1000"})
	id := ts.create(`{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"100"}`)
	o := ts.order("spot", id)
	wantField(t, "by value", o, "marketUnit", "quoteCoin")
	spent := decimal.RequireFromString(field(t, o, "cumExecValue"))
	got := decimal.RequireFromString(field(t, o, "cumExecQty"))
	if spent.GreaterThan(decimal.NewFromInt(100)) || spent.LessThan(decimal.RequireFromString("99.9")) {
		t.Fatalf("spent %s of 100 USDT", spent)
	}
	// Less than one step's worth of the budget is left: Bybit ends such an
	// order PartiallyFilledCanceled with the rest in leavesValue.
	wantField(t, "by value", o, "orderStatus", "PartiallyFilledCanceled")
	wantDec(t, "by value", o, "leavesValue", decimal.NewFromInt(100).Sub(spent).String())
	wantField(t, "by value", o, "price", "0")
	wantDec(t, "usdt", ts.coin("USDT"), "walletBalance", decimal.NewFromInt(1000).Sub(spent).String())
	wantDec(t, "btc", ts.coin("BTC"), "walletBalance", got.Sub(got.Mul(spotFee).Round(amountPlaces)).String())
	// By base quantity when asked.
	id = ts.create(`{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.000100","marketUnit":"baseCoin"}`)
	wantDec(t, "by qty", ts.order("spot", id), "cumExecQty", "0.0001")
}
