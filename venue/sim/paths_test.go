package sim

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
)

// Tests of the further paths Bybit clients reach (market_extra.go,
// closedpnl.go, batch_rest.go, ws_kline.go). The real clients run them in
// clients_test.go; these check the numbers against the simulator's own
// accounting and price model.

// listOf decodes result.list of an answer.
func listOf(t *testing.T, r result) []map[string]json.RawMessage {
	t.Helper()
	mustOK(t, r)
	var res struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(t, r.result, &res)
	return res.List
}

// TestClosedPnlAndTransactionLogFollowTheFills opens a long in two fills,
// closes it in two orders, and checks that closed PnL and the transaction
// log tell the same story as the wallet: every movement's change adds up
// to the wallet's, the newest cashBalance is the wallet, and the closed
// PnL of a full round trip is what the wallet gained or lost.
func TestClosedPnlAndTransactionLogFollowTheFills(t *testing.T) {
	ts := newTradeSim(t, 3, map[string]string{"USDT": "100000"})
	start := decimal.RequireFromString("100000")
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.02"}`)
	ts.clock.Advance(40 * time.Minute)
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01"}`)
	ts.clock.Advance(3 * time.Hour)
	close1 := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01"}`)
	ts.clock.Advance(2 * time.Hour)
	close2 := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.02"}`)
	ts.clock.Advance(time.Second)

	wallet := dec(t, ts.coin("USDT")["walletBalance"])
	if wallet.Equal(start) {
		t.Fatal("the round trip moved nothing")
	}

	rows := listOf(t, ts.get("/v5/position/closed-pnl", url.Values{"category": {"linear"}, "symbol": {"BTCUSDT"}}))
	if len(rows) != 2 || jstr(t, rows[0]["orderId"]) != close2 || jstr(t, rows[1]["orderId"]) != close1 {
		t.Fatalf("closed pnl rows %v, want the two closing orders newest first", rows)
	}
	total := decimal.Zero
	sizes := decimal.Zero
	for _, r := range rows {
		for _, k := range []string{"symbol", "orderType", "leverage", "updatedTime", "side", "orderId", "closedPnl", "avgEntryPrice",
			"qty", "cumEntryValue", "createdTime", "orderPrice", "closedSize", "avgExitPrice", "execType", "fillCount",
			"cumExitValue", "openFee", "closeFee"} {
			if _, ok := r[k]; !ok {
				t.Errorf("closed pnl row lacks %s: %v", k, r)
			}
		}
		entry, exit := dec(t, r["cumEntryValue"]), dec(t, r["cumExitValue"])
		openFee, closeFee := dec(t, r["openFee"]), dec(t, r["closeFee"])
		if !openFee.IsPositive() || !closeFee.IsPositive() {
			t.Errorf("closed pnl row without fees: %v", r)
		}
		if want := exit.Sub(entry).Sub(openFee).Sub(closeFee); !dec(t, r["closedPnl"]).Equal(want) {
			t.Errorf("closedPnl %s, want exit − entry − fees = %s", r["closedPnl"], want)
		}
		total = total.Add(dec(t, r["closedPnl"]))
		sizes = sizes.Add(dec(t, r["closedSize"]))
	}
	if !sizes.Equal(decimal.RequireFromString("0.03")) {
		t.Errorf("closed sizes add up to %s, want 0.03", sizes)
	}
	// Every fee (both opens and both closes) and every PnL is in the
	// closed PnL of the round trip: it is the wallet's whole change.
	if diff := total.Sub(wallet.Sub(start)).Abs(); diff.GreaterThan(decimal.RequireFromString("0.00000002")) {
		t.Errorf("closed pnl adds up to %s, the wallet moved by %s", total, wallet.Sub(start))
	}

	log := listOf(t, ts.get("/v5/account/transaction-log", url.Values{"accountType": {"UNIFIED"}, "currency": {"USDT"}}))
	if len(log) != 4 {
		t.Fatalf("transaction log has %d rows, want one per fill (4): %v", len(log), log)
	}
	if got := dec(t, log[0]["cashBalance"]); !got.Equal(wallet) {
		t.Errorf("newest cashBalance %s, wallet %s", got, wallet)
	}
	sum := decimal.Zero
	for i, r := range log {
		if jstr(t, r["type"]) != "TRADE" || jstr(t, r["currency"]) != "USDT" || jstr(t, r["category"]) != "linear" {
			t.Errorf("row %d: %v", i, r)
		}
		change, flow, fee := dec(t, r["change"]), dec(t, r["cashFlow"]), dec(t, r["fee"])
		if !change.Equal(flow.Sub(fee)) {
			t.Errorf("row %d: change %s != cashFlow %s − fee %s", i, change, flow, fee)
		}
		if i+1 < len(log) {
			if prev := dec(t, log[i+1]["cashBalance"]); !prev.Add(change).Equal(dec(t, r["cashBalance"])) {
				t.Errorf("row %d: cashBalance %s does not follow %s + %s", i, r["cashBalance"], prev, change)
			}
		}
		sum = sum.Add(change)
	}
	if !sum.Equal(wallet.Sub(start)) {
		t.Errorf("changes add up to %s, the wallet moved by %s", sum, wallet.Sub(start))
	}
	if size := jstr(t, log[0]["size"]); size != "0.000" {
		t.Errorf("position after the last fill %s, want flat", size)
	}

	// Pages of one row each walk the same rows.
	var ids []string
	q := url.Values{"accountType": {"UNIFIED"}, "limit": {"1"}}
	for i := 0; i < 10; i++ {
		r := ts.get("/v5/account/transaction-log", q)
		var page struct {
			List []map[string]json.RawMessage `json:"list"`
			Next string                       `json:"nextPageCursor"`
		}
		mustOK(t, r)
		decodeInto(t, r.result, &page)
		for _, row := range page.List {
			ids = append(ids, jstr(t, row["id"]))
		}
		if page.Next == "" {
			break
		}
		q.Set("cursor", page.Next)
	}
	if len(ids) != 4 {
		t.Errorf("paged transaction log ids %v, want 4", ids)
	}
}

// TestTransactionLogSpotMovesBothCoins checks a spot buy: the base coin
// comes in less its fee, the quote coin goes out.
func TestTransactionLogSpotMovesBothCoins(t *testing.T) {
	ts := newTradeSim(t, 3, map[string]string{"USDT": "10000"})
	ts.create(`{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","marketUnit":"baseCoin"}`)
	log := listOf(t, ts.get("/v5/account/transaction-log", url.Values{"category": {"spot"}}))
	if len(log) != 2 {
		t.Fatalf("spot fill logged as %d rows: %v", len(log), log)
	}
	for _, r := range log {
		coin := jstr(t, r["currency"])
		if got := dec(t, r["cashBalance"]); !got.Equal(dec(t, ts.coin(coin)["walletBalance"])) {
			t.Errorf("%s cashBalance %s, wallet %s", coin, got, ts.coin(coin)["walletBalance"])
		}
		switch coin {
		case "BTC":
			if !dec(t, r["change"]).Equal(decimal.RequireFromString("0.01").Sub(dec(t, r["fee"]))) || !dec(t, r["fee"]).IsPositive() {
				t.Errorf("BTC row %v", r)
			}
		case "USDT":
			if !dec(t, r["change"]).IsNegative() || !dec(t, r["fee"]).IsZero() {
				t.Errorf("USDT row %v", r)
			}
		default:
			t.Errorf("row of %s", coin)
		}
	}
}

// batchAnswer decodes a batch answer: result.list and retExtInfo.list.
func batchAnswer(t *testing.T, r result) (rows []map[string]string, codes []batchItemCode) {
	t.Helper()
	mustOK(t, r)
	var env struct {
		Result struct {
			List []map[string]string `json:"list"`
		} `json:"result"`
		RetExtInfo struct {
			List []batchItemCode `json:"list"`
		} `json:"retExtInfo"`
	}
	decodeInto(t, r.body, &env)
	if len(env.Result.List) != len(env.RetExtInfo.List) {
		t.Fatalf("result.list and retExtInfo.list differ in length: %s", r.body)
	}
	return env.Result.List, env.RetExtInfo.List
}

func TestBatchCreateAmendCancel(t *testing.T) {
	ts := newTradeSim(t, 3, map[string]string{"USDT": "100000"})
	r := ts.post("/v5/order/create-batch", `{"category":"linear","request":[
		{"symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","orderLinkId":"b-1"},
		{"symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","orderLinkId":"b-1"},
		{"symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"1500","orderLinkId":"b-2"}]}`)
	rows, codes := batchAnswer(t, r)
	if len(rows) != 3 || codes[0].Code != 0 || codes[1].Code != codeDuplicateLink || codes[2].Code != 0 {
		t.Fatalf("create-batch %s", r.body)
	}
	if rows[0]["orderId"] == "" || rows[0]["orderLinkId"] != "b-1" || rows[0]["createAt"] == "" || rows[0]["category"] != "linear" || rows[0]["symbol"] != "BTCUSDT" {
		t.Errorf("create-batch item 0: %v", rows[0])
	}
	if rows[1]["orderId"] != "" || rows[1]["createAt"] != "" || codes[1].Msg != "OrderLinkedID is duplicate" {
		t.Errorf("refused item: %v %v", rows[1], codes[1])
	}
	for _, i := range []int{0, 2} {
		if o := ts.order("linear", rows[i]["orderId"]); jstr(t, o["orderStatus"]) != "New" {
			t.Errorf("batch order %d is %s", i, o["orderStatus"])
		}
	}

	r = ts.post("/v5/order/amend-batch", `{"category":"linear","request":[
		{"symbol":"BTCUSDT","orderLinkId":"b-1","qty":"0.002"},
		{"symbol":"BTCUSDT","orderId":"no-such-order","qty":"0.002"}]}`)
	rows, codes = batchAnswer(t, r)
	if codes[0].Code != 0 || codes[1].Code != codeOrderNotExists || rows[0]["orderLinkId"] != "b-1" {
		t.Fatalf("amend-batch %s", r.body)
	}
	if _, has := rows[0]["createAt"]; has {
		t.Errorf("amend-batch item carries createAt: %v", rows[0])
	}
	if o := ts.order("linear", rows[0]["orderId"]); jstr(t, o["qty"]) != "0.002" {
		t.Errorf("amended qty %s", o["qty"])
	}

	r = ts.post("/v5/order/cancel-batch", `{"category":"linear","request":[
		{"symbol":"BTCUSDT","orderLinkId":"b-1"},{"symbol":"ETHUSDT","orderLinkId":"b-2"}]}`)
	rows, codes = batchAnswer(t, r)
	if codes[0].Code != 0 || codes[1].Code != 0 {
		t.Fatalf("cancel-batch %s", r.body)
	}
	for _, row := range rows {
		if o := ts.order("linear", row["orderId"]); jstr(t, o["orderStatus"]) != "Cancelled" {
			t.Errorf("cancel-batch left %s %s", row["orderId"], o["orderStatus"])
		}
	}

	// Batch size per category: 20 linear, 10 spot.
	item := `{"symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000"}`
	batchOf := func(cat string, n int) string {
		return `{"category":"` + cat + `","request":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]}`
	}
	wantCode(t, ts.post("/v5/order/create-batch", batchOf("linear", 21)), codeParams)
	wantCode(t, ts.post("/v5/order/create-batch", batchOf("spot", 11)), codeParams)
	wantCode(t, ts.post("/v5/order/create-batch", `{"category":"linear","request":[]}`), codeParams)
	rows, codes = batchAnswer(t, ts.post("/v5/order/create-batch", batchOf("linear", 20)))
	if len(rows) != 20 || codes[19].Code != 0 {
		t.Errorf("a full linear batch: %v", codes)
	}
}

func TestSwitchModeIsOneWayOnly(t *testing.T) {
	ts := newTradeSim(t, 3, map[string]string{"USDT": "1000"})
	r := ts.post("/v5/position/switch-mode", `{"category":"linear","symbol":"BTCUSDT","mode":3}`)
	wantCode(t, r, codeHedgeNotAvail)
	r = ts.post("/v5/position/switch-mode", `{"category":"linear","coin":"USDT","mode":0}`)
	wantCode(t, r, codeModeNotModified)
	wantCode(t, ts.post("/v5/position/switch-mode", `{"category":"linear","symbol":"BTCUSDT","mode":1}`), codeParams)
	wantCode(t, ts.post("/v5/position/switch-mode", `{"category":"spot","symbol":"BTCUSDT","mode":0}`), codeParams)
	// Still one-way: an order with positionIdx 0 is taken.
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.001","positionIdx":0}`)
}

// msText reads a timestamp sent as a JSON string of digits.
func msText(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	n, err := strconv.ParseInt(jstr(t, raw), 10, 64)
	if err != nil {
		t.Fatalf("%s is not a timestamp string", raw)
	}
	return n
}

// tickerAt reads the linear ticker of symbol at the simulator's clock.
func tickerAt(t *testing.T, s *Sim, symbol string) map[string]json.RawMessage {
	t.Helper()
	list := listOf(t, get(t, s, "/v5/market/tickers?category=linear&symbol="+symbol))
	if len(list) != 1 {
		t.Fatalf("ticker %s: %v", symbol, list)
	}
	return list[0]
}

func TestFundingHistoryAgreesWithTheTicker(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 5, clock)
	list := listOf(t, get(t, s, "/v5/market/funding/history?category=linear&symbol=BTCUSDT&limit=3"))
	if len(list) != 3 {
		t.Fatalf("funding history %v", list)
	}
	period := int64(fundingPeriod) * 1000
	newest := msText(t, list[0]["fundingRateTimestamp"])
	if newest != testNow/period*period {
		t.Errorf("newest settlement %d, want the last 8 h boundary %d", newest, testNow/period*period)
	}
	for i, row := range list {
		ts := msText(t, row["fundingRateTimestamp"])
		if ts != newest-int64(i)*period || jstr(t, row["symbol"]) != "BTCUSDT" {
			t.Errorf("row %d: %v", i, row)
		}
		// The ticker an instant before the settlement showed this rate.
		clock.Set(time.UnixMilli(ts - 1000))
		if got := jstr(t, tickerAt(t, s, "BTCUSDT")["fundingRate"]); got != jstr(t, row["fundingRate"]) {
			t.Errorf("settlement %d: rate %s, the ticker before it showed %s", ts, row["fundingRate"], got)
		}
	}
	clock.Set(time.UnixMilli(testNow))
	wantCode(t, get(t, s, "/v5/market/funding/history?category=linear&symbol=BTCUSDT&startTime=1"), codeParams)
	wantCode(t, get(t, s, "/v5/market/funding/history?category=spot&symbol=BTCUSDT"), codeParams)
	list = listOf(t, get(t, s, "/v5/market/funding/history?category=linear&symbol=BTCUSDT&startTime="+itoa(newest-period)+"&endTime="+itoa(newest)))
	if len(list) != 2 {
		t.Errorf("window of two settlements: %v", list)
	}
}

func TestOpenInterestAgreesWithTheTickerAndPages(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 5, clock)
	base := "/v5/market/open-interest?category=linear&symbol=ETHUSDT&intervalTime=5min&limit=4"
	r := get(t, s, base)
	mustOK(t, r)
	var page struct {
		Symbol, Category string
		List             []map[string]string
		NextPageCursor   string
	}
	decodeInto(t, r.result, &page)
	if page.Symbol != "ETHUSDT" || page.Category != "linear" || len(page.List) != 4 || page.NextPageCursor == "" {
		t.Fatalf("open interest page %s", r.result)
	}
	step := 5 * msMinute
	first, err := strconv.ParseInt(page.List[0]["timestamp"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if first != testNow/step*step {
		t.Errorf("newest row at %d, want %d", first, testNow/step*step)
	}
	seen := map[string]bool{}
	for _, row := range page.List {
		seen[row["timestamp"]] = true
	}
	r = get(t, s, base+"&cursor="+url.QueryEscape(page.NextPageCursor))
	mustOK(t, r)
	var next struct{ List []map[string]string }
	decodeInto(t, r.result, &next)
	if len(next.List) != 4 || next.List[0]["timestamp"] != itoa(first-4*step) {
		t.Errorf("second page %s", r.result)
	}
	for _, row := range next.List {
		if seen[row["timestamp"]] {
			t.Errorf("row %s on both pages", row["timestamp"])
		}
	}
	// At the instant of a row, the ticker shows the same open interest.
	clock.Set(time.UnixMilli(first))
	want := dec(t, tickerAt(t, s, "ETHUSDT")["openInterest"])
	if got := decimal.RequireFromString(page.List[0]["openInterest"]); !got.Equal(want) {
		t.Errorf("open interest %s, the ticker at that instant %s", got, want)
	}
	wantCode(t, get(t, s, "/v5/market/open-interest?category=linear&symbol=ETHUSDT&intervalTime=2min"), codeParams)
}

func TestRiskLimitIsTheMarginModel(t *testing.T) {
	s := newTestSim(t, 5, newClock(testNow))
	list := listOf(t, get(t, s, "/v5/market/risk-limit?category=linear&symbol=BTCUSDT"))
	if len(list) != 1 {
		t.Fatalf("risk limit %v", list)
	}
	in := s.catalog.get(catLinear, "BTCUSDT")
	row := list[0]
	if jstr(t, row["maintenanceMargin"]) != maintenanceRate.String() || !dec(t, row["maxLeverage"]).Equal(decimal.RequireFromString(in.maxLeverage)) || string(row["isLowestRisk"]) != "1" {
		t.Errorf("risk limit row %v", row)
	}
	if all := listOf(t, get(t, s, "/v5/market/risk-limit?category=linear")); len(all) != len(s.catalog.list[catLinear]) {
		t.Errorf("%d risk rows for %d linear symbols", len(all), len(s.catalog.list[catLinear]))
	}
}

func TestMarkAndIndexKlinesCloseAtTheTicker(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 5, clock)
	tk := tickerAt(t, s, "BTCUSDT")
	for path, field := range map[string]string{"/v5/market/mark-price-kline": "markPrice", "/v5/market/index-price-kline": "indexPrice"} {
		r := get(t, s, path+"?category=linear&symbol=BTCUSDT&interval=15&limit=3")
		mustOK(t, r)
		var res struct {
			Symbol, Category string
			List             [][]string
		}
		decodeInto(t, r.result, &res)
		if res.Symbol != "BTCUSDT" || res.Category != "linear" || len(res.List) != 3 {
			t.Fatalf("%s: %s", path, r.result)
		}
		for i, k := range res.List {
			if len(k) != 5 {
				t.Fatalf("%s row %d has %d fields", path, i, len(k))
			}
			o, h, l, c := decimal.RequireFromString(k[1]), decimal.RequireFromString(k[2]), decimal.RequireFromString(k[3]), decimal.RequireFromString(k[4])
			if h.LessThan(decimal.Max(o, c)) || l.GreaterThan(decimal.Min(o, c)) {
				t.Errorf("%s row %d: %v", path, i, k)
			}
		}
		if res.List[0][0] != itoa(testNow/(15*msMinute)*(15*msMinute)) {
			t.Errorf("%s newest start %s", path, res.List[0][0])
		}
		if !decimal.RequireFromString(res.List[0][4]).Equal(dec(t, tk[field])) {
			t.Errorf("%s open candle closes at %s, ticker %s %s", path, res.List[0][4], field, tk[field])
		}
	}
	if r := get(t, s, "/v5/market/mark-price-kline?category=linear&symbol=BTCUSDT&interval=15&limit=3"); string(r.result) == string(get(t, s, "/v5/market/index-price-kline?category=linear&symbol=BTCUSDT&interval=15&limit=3").result) {
		t.Error("mark and index candles are the same")
	}
}

// fastPublicLinear serves a simulator that pushes every 20 ms and opens
// its linear public stream.
func fastPublicLinear(t *testing.T) (*fakeClock, *Sim, *httptest.Server, *websocket.Conn) {
	t.Helper()
	clock := newClock(testNow)
	s := newTestSim(t, 5, clock)
	s.pushInterval = 20 * time.Millisecond
	srv := serve(t, s)
	return clock, s, srv, dialWS(t, srv.URL, pathWSPublicLinear)
}

func TestWSKlineConfirmsTheClosedCandle(t *testing.T) {
	clock, s, _, c := fastPublicLinear(t)
	sendWS(t, c, `{"op":"subscribe","args":["kline.1.BTCUSDT","kline.7.BTCUSDT","kline.1.NOPEUSDT"]}`)
	m, raw := readWS(t, c)
	if string(m["success"]) != "false" || !strings.Contains(str(m["ret_msg"]), "kline.7.BTCUSDT") || !strings.Contains(str(m["ret_msg"]), "NOPEUSDT") ||
		strings.Contains(str(m["ret_msg"]), "kline.1.BTCUSDT") {
		t.Fatalf("ack %s", raw)
	}
	type kline struct {
		Start, End                             int64
		Interval                               string
		Open, Close, High, Low, Volume, Turnov string
		Confirm                                bool
	}
	read := func() []kline {
		m, _ := readUntil(t, c, "kline push", topicIs("kline.1.BTCUSDT", "snapshot"))
		var data []kline
		decodeInto(t, m["data"], &data)
		return data
	}
	minute := testNow / msMinute * msMinute
	first := read()
	if len(first) != 1 || first[0].Start != minute || first[0].End != minute+msMinute-1 || first[0].Confirm || first[0].Interval != "1" {
		t.Fatalf("first kline push %+v", first)
	}
	clock.Advance(time.Minute)
	var got []kline
	for got = read(); len(got) == 1 && got[0].Start == minute; got = read() {
	}
	if len(got) != 2 || got[0].Start != minute || !got[0].Confirm || got[1].Start != minute+msMinute || got[1].Confirm {
		t.Fatalf("push after the minute closed %+v", got)
	}
	// The confirmed candle is the REST candle.
	rest := get(t, s, "/v5/market/kline?category=linear&symbol=BTCUSDT&interval=1&start="+itoa(minute)+"&end="+itoa(minute))
	mustOK(t, rest)
	var k struct{ List [][7]string }
	decodeInto(t, rest.result, &k)
	if len(k.List) != 1 || k.List[0][1] != got[0].Open || k.List[0][4] != got[0].Close || k.List[0][2] != got[0].High {
		t.Errorf("confirmed candle %+v, REST %v", got[0], k.List)
	}
}

func TestWSLinearTickersSnapshotThenDeltas(t *testing.T) {
	clock, s, srv, c := fastPublicLinear(t)
	sendWS(t, c, `{"op":"subscribe","args":["tickers.BTCUSDT"]}`)
	m, _ := readUntil(t, c, "ticker snapshot", topicIs("tickers.BTCUSDT", ""))
	if str(m["type"]) != "snapshot" {
		t.Fatalf("first ticker push is %s", m["type"])
	}
	held := map[string]string{}
	decodeInto(t, m["data"], &held)
	for i := 0; i < 3; i++ {
		clock.Advance(time.Second)
		m, raw := readUntil(t, c, "ticker delta", topicIs("tickers.BTCUSDT", ""))
		if str(m["type"]) != "delta" {
			t.Fatalf("later ticker push %s", raw)
		}
		delta := map[string]string{}
		decodeInto(t, m["data"], &delta)
		if delta["symbol"] != "BTCUSDT" || len(delta) < 2 || len(delta) >= len(held) {
			t.Errorf("delta %v is not the symbol and the changed fields", delta)
		}
		for k, v := range delta {
			held[k] = v
		}
	}
	// Applying the deltas gives the ticker the REST endpoint shows now.
	rest := tickerAt(t, s, "BTCUSDT")
	for _, f := range []string{"lastPrice", "markPrice", "indexPrice", "bid1Price", "ask1Price", "openInterest", "fundingRate"} {
		if held[f] != jstr(t, rest[f]) {
			t.Errorf("%s: the stream holds %s, REST says %s", f, held[f], rest[f])
		}
	}

	// Spot tickers stay snapshots.
	sp := dialWS(t, srv.URL, pathWSPublicSpot)
	sendWS(t, sp, `{"op":"subscribe","args":["tickers.BTCUSDT"]}`)
	readUntil(t, sp, "spot ticker", topicIs("tickers.BTCUSDT", "snapshot"))
	clock.Advance(time.Second)
	readUntil(t, sp, "second spot ticker", topicIs("tickers.BTCUSDT", "snapshot"))
}
