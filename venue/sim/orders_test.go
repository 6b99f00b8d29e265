package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestOrderValidationRetCodes(t *testing.T) {
	ts := newTradeSim(t, 11, map[string]string{"USDT": "1000", "BTC": "0.001"})
	ts.movePrice("linear", "BTCUSDT", "60000")
	ts.movePrice("spot", "ETHUSDT", "3000")
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"59000.0","orderLinkId":"dup-1"}`)
	ts.create(`{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2900","orderLinkId":"dup-1"}`)
	ro := createKey(t, ts.s, `{"read_only":true}`)
	for _, c := range []struct {
		name, path, body string
		code             int
	}{
		{"linear qty off step", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.0015","price":"59000"}`, codeParams},
		{"linear price off tick", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"59000.05"}`, codeParams},
		{"linear below min notional", "/v5/order/create", `{"category":"linear","symbol":"SOLUSDT","side":"Buy","orderType":"Limit","qty":"0.1","price":"20"}`, codeMinNotional},
		{"linear above max qty", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"600"}`, codeParams},
		{"linear price out of band", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"70000"}`, codePriceRange},
		{"linear insufficient balance", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"1","price":"59000"}`, codeBalance},
		{"reduce-only without position", "/v5/order/create", `{"category":"linear","symbol":"ETHUSDT","side":"Sell","orderType":"Market","qty":"0.01","reduceOnly":true}`, codeReduceOnly},
		{"duplicate orderLinkId linear", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"59000","orderLinkId":"dup-1"}`, codeDuplicateLink},
		{"duplicate orderLinkId spot", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2900","orderLinkId":"dup-1"}`, codeSpotDuplicate},
		{"orderLinkId too long", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"59000","orderLinkId":"` + strings.Repeat("a", 37) + `"}`, codeParams},
		{"hedge positionIdx", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"59000","positionIdx":1}`, codeParams},
		{"bad side linear", "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Up","orderType":"Limit","qty":"0.001","price":"59000"}`, codeParams},
		{"unknown symbol linear", "/v5/order/create", `{"category":"linear","symbol":"DOGEUSDT","side":"Buy","orderType":"Market","qty":"1"}`, codeParams},
		{"spot unknown symbol", "/v5/order/create", `{"category":"spot","symbol":"DOGEUSDT","side":"Buy","orderType":"Market","qty":"1"}`, codeSpotInvalidSym},
		{"spot bad side", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Up","orderType":"Limit","qty":"0.01","price":"2900"}`, codeSpotSide},
		{"spot bad orderType", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Stop","qty":"0.01","price":"2900"}`, codeSpotOrderType},
		{"spot bad timeInForce", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2900","timeInForce":"GTD"}`, codeSpotTIF},
		{"spot qty decimals", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.010001","price":"2900"}`, codeSpotQtyDecimals},
		{"spot price decimals", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2900.001"}`, codeSpotPriceDecimal},
		{"spot qty below minimum", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Sell","orderType":"Limit","qty":"0.0001","price":"3100"}`, codeSpotQtyMin},
		{"spot value below minimum", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"2900"}`, codeSpotValueMin},
		{"spot buy above band", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"3300"}`, codeSpotBuyTooHigh},
		{"spot sell below band", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Sell","orderType":"Limit","qty":"0.01","price":"2700"}`, codeSpotSellTooLow},
		{"spot insufficient balance", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Sell","orderType":"Limit","qty":"1","price":"3100"}`, codeSpotBalance},
		{"spot qty above max", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"2000","price":"2900"}`, codeSpotQtyMax},
		{"spot reduceOnly", "/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2900","reduceOnly":true}`, codeParams},
		{"bad body", "/v5/order/create", `[1,2]`, codeParams},
		{"cancel unknown linear", "/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"nope"}`, codeOrderNotExists},
		{"cancel unknown spot", "/v5/order/cancel", `{"category":"spot","symbol":"ETHUSDT","orderLinkId":"nope"}`, codeSpotNotExists},
		{"amend unknown linear", "/v5/order/amend", `{"category":"linear","symbol":"BTCUSDT","orderId":"nope","qty":"0.002"}`, codeOrderNotExists},
		{"amend unknown spot", "/v5/order/amend", `{"category":"spot","symbol":"ETHUSDT","orderId":"nope","qty":"0.02"}`, codeSpotNotExists},
		{"amend without target", "/v5/order/amend", `{"category":"linear","symbol":"BTCUSDT","qty":"0.002"}`, codeParams},
		{"cancel-all linear without symbol", "/v5/order/cancel-all", `{"category":"linear"}`, codeParams},
		{"trading-stop flat", "/v5/position/trading-stop", `{"category":"linear","symbol":"ETHUSDT","tpslMode":"Full","positionIdx":0,"takeProfit":"4000"}`, codeParams},
		{"trading-stop nothing", "/v5/position/trading-stop", `{"category":"linear","symbol":"ETHUSDT","tpslMode":"Full","positionIdx":0}`, codeNotModified},
		{"set-leverage unchanged", "/v5/position/set-leverage", `{"category":"linear","symbol":"BTCUSDT","buyLeverage":"10","sellLeverage":"10"}`, codeLeverageSame},
	} {
		ts.clock.Advance(time.Second) // stay inside the per-second rate limit
		t.Run(c.name, func(t *testing.T) {
			before := len(ts.simOrders())
			wantCode(t, ts.post(c.path, c.body), c.code)
			if after := len(ts.simOrders()); after != before {
				t.Fatalf("a refused request left %d new orders", after-before)
			}
		})
	}
	// A read-only key gets 10005 on every write and nothing is accepted.
	for _, path := range []string{"/v5/order/create", "/v5/order/amend", "/v5/order/cancel", "/v5/order/cancel-all", "/v5/position/set-leverage", "/v5/position/trading-stop"} {
		wantCode(t, ts.postAs(ro, path, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.001"}`), codePermission)
	}
	if n := len(ts.simOrders()); n != 2 {
		t.Fatalf("%d orders accepted, want the 2 of the setup", n)
	}
}

// simOrders reads GET /sim/orders.
func (ts *tradeSim) simOrders() []orderRecord {
	ts.t.Helper()
	r := get(ts.t, ts.s, "/sim/orders")
	var list []orderRecord
	decodeInto(ts.t, r.body, &list)
	return list
}

func TestAmendCancelAndCancelAll(t *testing.T) {
	ts := newTradeSim(t, 12, map[string]string{"USDT": "100000"})
	ts.movePrice("linear", "BTCUSDT", "60000")
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"59000.0","orderLinkId":"a-1"}`)
	r := ts.post("/v5/order/amend", `{"category":"linear","symbol":"BTCUSDT","orderLinkId":"a-1","qty":"0.020","price":"59100.0"}`)
	mustOK(t, r)
	o := ts.order("linear", id)
	wantDec(t, "amended", o, "qty", "0.02")
	wantDec(t, "amended", o, "price", "59100")
	// Amending the price across the book makes it take.
	r = ts.post("/v5/order/amend", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`","price":"60100.0"}`)
	mustOK(t, r)
	o = ts.order("linear", id)
	wantField(t, "crossed by amend", o, "orderStatus", "Filled")
	wantCode(t, ts.post("/v5/order/amend", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`","price":"59000.0"}`), codeOrderNotExists)
	wantCode(t, ts.post("/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`"}`), codeOrderNotExists)

	a := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"58000.0"}`)
	mustOK(t, ts.post("/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+a+`"}`))
	o = ts.order("linear", a)
	wantField(t, "cancelled", o, "orderStatus", "Cancelled")
	wantField(t, "cancelled", o, "cancelType", "CancelByUser")

	b := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"58000.0"}`)
	c := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.10","price":"2000.00"}`)
	r = ts.post("/v5/order/cancel-all", `{"category":"linear","settleCoin":"USDT"}`)
	mustOK(t, r)
	var res cancelAllResult
	decodeInto(t, r.result, &res)
	if res.Success != "1" || len(res.List) != 2 || res.List[0].OrderID != b || res.List[1].OrderID != c {
		t.Fatalf("cancel-all %s", r.result)
	}
	wantField(t, "swept", ts.order("linear", c), "orderStatus", "Cancelled")
}

func TestVisibilityDelayAndClock(t *testing.T) {
	clock := newClock(testNow)
	s := New(Config{Seed: 13, Now: clock.Now, VisibilityDelay: 500 * time.Millisecond})
	t.Cleanup(s.shutdown)
	ts := &tradeSim{t: t, s: s, clock: clock, k: s.DefaultKey()}
	mustOK(t, do(t, s, http.MethodPost, "/sim/accounts/"+ts.k.APIKey+"/balances", []byte(`{"USDT":"100000"}`), nil))
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"50000.0","orderLinkId":"late"}`)
	open := func() int {
		r := ts.get("/v5/order/realtime", url.Values{"category": {"linear"}, "symbol": {"BTCUSDT"}})
		var page struct{ List []json.RawMessage }
		decodeInto(t, r.result, &page)
		return len(page.List)
	}
	if n := open(); n != 0 {
		t.Fatalf("accepted order visible before the delay: %d", n)
	}
	if l := ts.simOrders(); len(l) != 1 || l[0].Status != "Created" {
		t.Fatalf("/sim/orders before the delay %+v", l)
	}
	// The duplicate check already sees the accepted order.
	wantCode(t, ts.post("/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"50000.0","orderLinkId":"late"}`), codeDuplicateLink)
	// POST /sim/clock moves simulated time; signing with the unmoved
	// client clock still works.
	r := do(t, s, http.MethodPost, "/sim/clock", []byte(`{"advance_ms":600}`), nil)
	if r.status != http.StatusOK {
		t.Fatalf("clock: %d %s", r.status, r.body)
	}
	if n := open(); n != 1 {
		t.Fatalf("order not visible after the delay: %d", n)
	}
	mt := get(t, s, "/v5/market/time")
	var tm timeResult
	decodeInto(t, mt.result, &tm)
	if tm.TimeSecond != itoa((testNow+600)/1000) {
		t.Fatalf("market time %s after advancing", tm.TimeSecond)
	}
	// A cancel is accepted at once and shows after the delay too.
	mustOK(t, ts.post("/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`"}`))
	if n := open(); n != 1 {
		t.Fatal("cancel visible before the delay")
	}
	clock.Advance(500 * time.Millisecond)
	if n := open(); n != 0 {
		t.Fatal("cancel not visible after the delay")
	}
	if r := do(t, s, http.MethodPost, "/sim/clock", []byte(`{"advance_ms":-5}`), nil); r.status != http.StatusBadRequest {
		t.Fatalf("negative advance: HTTP %d", r.status)
	}
}

// TestDeterministicReplay runs the same requests at the same simulated
// times on two simulators with the same seed: every answer is the same
// byte for byte, ids, prices and fills included; another seed differs.
func TestDeterministicReplay(t *testing.T) {
	run := func(seed int64) []string {
		ts := newTradeSim(t, seed, map[string]string{"USDT": "100000", "ETH": "5"})
		var out []string
		step := func(r result) { out = append(out, string(r.result)) }
		step(ts.post("/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.050"}`))
		step(ts.post("/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Limit","qty":"0.020","price":"67500.0"}`))
		step(ts.post("/v5/order/create", `{"category":"spot","symbol":"ETHUSDT","side":"Sell","orderType":"Market","qty":"0.5"}`))
		for i := 0; i < 5; i++ {
			do(t, ts.s, http.MethodPost, "/sim/clock", []byte(`{"advance_ms":3600000}`), nil)
			ts.clock.Advance(0)
		}
		step(ts.get("/v5/order/history", url.Values{"category": {"linear"}, "symbol": {"BTCUSDT"}}))
		step(ts.get("/v5/execution/list", url.Values{"category": {"spot"}}))
		step(ts.get("/v5/position/list", url.Values{"category": {"linear"}, "symbol": {"BTCUSDT"}}))
		return out
	}
	a, b, c := run(21), run(21), run(22)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d differs between two runs with one seed:\n%s\n%s", i, a[i], b[i])
		}
	}
	if a[0] == c[0] {
		t.Fatal("another seed gave the same order id")
	}
}

// A GTC that takes part of the book rests PartiallyFilled; its qty cannot
// be amended to what already filled (110064), but can be raised.
func TestPartiallyFilledGTCAndAmendBelowFilled(t *testing.T) {
	ts := newTradeSim(t, 17, map[string]string{"USDT": "1000000"})
	_, asks := ts.book("linear", "ETHUSDT")
	first := asks[0]
	qty := first[1].Add(decimal.NewFromInt(1))
	id := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"` + qty.StringFixed(2) + `","price":"` + first[0].StringFixed(2) + `"}`)
	o := ts.order("linear", id)
	wantField(t, "partial", o, "orderStatus", "PartiallyFilled")
	wantDec(t, "partial", o, "cumExecQty", first[1].String())
	wantDec(t, "partial", o, "leavesQty", "1")
	wantCode(t, ts.post("/v5/order/amend", `{"category":"linear","symbol":"ETHUSDT","orderId":"`+id+`","qty":"`+first[1].StringFixed(2)+`"}`), codeAmendQty)
	mustOK(t, ts.post("/v5/order/amend", `{"category":"linear","symbol":"ETHUSDT","orderId":"`+id+`","qty":"`+qty.Add(decimal.NewFromInt(1)).StringFixed(2)+`"}`))
	wantDec(t, "raised", ts.order("linear", id), "leavesQty", "2")
}
