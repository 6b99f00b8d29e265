package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
)

func TestUnservedPathsAnswerInEnvelope(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	for _, tc := range []struct{ method, target string }{
		{http.MethodGet, "/v5/asset/transfer/query-account-coins-balance?accountType=FUND"},
		{http.MethodPost, "/v5/spot-margin-trade/switch-mode"},
		{http.MethodGet, "/v5/nope"},
		{http.MethodPost, "/v5/market/tickers"},    // served, but only as GET
		{http.MethodGet, "/v5/account/info/extra"}, // a served path's child
	} {
		var body []byte
		if tc.method == http.MethodPost {
			body = []byte(`{"category":"linear"}`)
		}
		r := do(t, s, tc.method, tc.target, body, nil)
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s: HTTP %d, want 404", tc.method, tc.target, r.status)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.target, ct)
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", tc.method, tc.target, r.body)
		}
		if got := strings.Join(keysOf(env), ","); got != "result,retCode,retExtInfo,retMsg,time" {
			t.Errorf("%s %s: envelope keys %s", tc.method, tc.target, got)
		}
		path, _, _ := strings.Cut(tc.target, "?")
		if r.retCode != codeNotFound || !strings.Contains(r.retMsg, path) {
			t.Errorf("%s %s: retCode %d retMsg %q", tc.method, tc.target, r.retCode, r.retMsg)
		}
		if string(env["result"]) != "{}" || mustInt(t, env["time"]) != clock.ms() {
			t.Errorf("%s %s: %s", tc.method, tc.target, r.body)
		}
	}
}

func TestAccountInfoShape(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	r := signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/account/info", "")
	mustOK(t, r)
	var got, want map[string]json.RawMessage
	decodeInto(t, r.result, &got)
	decodeInto(t, readSample(t, "v5-account-info.result.hirokisan.json"), &want)
	checkKeys(t, "account info", got, want, "isMasterTrader", "spotHedgingStatus", "dcpStatus", "timeWindow", "smpGroup")
	if n := mustInt(t, got["unifiedMarginStatus"]); n < 5 {
		t.Errorf("unifiedMarginStatus %d: the simulated wallet is a UTA 2.0 one (5 or 6)", n)
	}
	if str(got["marginMode"]) != "REGULAR_MARGIN" || str(got["updatedTime"]) == "" {
		t.Errorf("account info %s", r.result)
	}
	mustInt(t, json.RawMessage(str(got["updatedTime"]))) // ms as a string
	for _, k := range []string{"timeWindow", "smpGroup"} {
		mustInt(t, got[k])
	}
	// Unsigned: refused like every private endpoint.
	if r := get(t, s, "/v5/account/info"); r.status != http.StatusUnauthorized {
		t.Errorf("unsigned account/info: HTTP %d", r.status)
	}
}

func TestFeeRateShape(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	var sample struct {
		Result struct {
			List []map[string]json.RawMessage `json:"list"`
		} `json:"result"`
	}
	decodeInto(t, readSample(t, "v5-account-fee-rate.docs.json"), &sample)

	r := signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/account/fee-rate", "category=linear&symbol=BTCUSDT")
	mustOK(t, r)
	var res map[string]json.RawMessage
	decodeInto(t, r.result, &res)
	if got := strings.Join(keysOf(res), ","); got != "list" {
		t.Errorf("fee-rate result keys %s", got)
	}
	var list []map[string]json.RawMessage
	decodeInto(t, res["list"], &list)
	if len(list) != 1 {
		t.Fatalf("fee-rate list %s", r.result)
	}
	checkKeys(t, "fee rate", list[0], sample.Result.List[0], "baseCoin")
	if str(list[0]["symbol"]) != "BTCUSDT" || !mustDecimal(t, list[0]["takerFeeRate"]).Equal(linearTakerFee) ||
		!mustDecimal(t, list[0]["makerFeeRate"]).Equal(linearMakerFee) {
		t.Errorf("linear fee rate %s", r.result)
	}

	// Spot, every symbol: the spot fee for each catalogue entry.
	r = signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/account/fee-rate", "category=spot")
	mustOK(t, r)
	decodeInto(t, r.result, &res)
	decodeInto(t, res["list"], &list)
	if len(list) != len(s.catalog.list[catSpot]) {
		t.Fatalf("spot fee rates %s", r.result)
	}
	for _, row := range list {
		if !mustDecimal(t, row["takerFeeRate"]).Equal(spotFee) {
			t.Errorf("spot fee %s", r.result)
		}
	}
	wantCode(t, signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/account/fee-rate", "category=linear&symbol=NOPEUSDT"), codeParams)
	wantCode(t, signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/account/fee-rate", "category=futures"), codeParams)

	// No category: the linear rates.
	r = signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/account/fee-rate", "")
	mustOK(t, r)
	decodeInto(t, r.result, &res)
	decodeInto(t, res["list"], &list)
	if len(list) != len(s.catalog.list[catLinear]) || !mustDecimal(t, list[0]["takerFeeRate"]).Equal(linearTakerFee) {
		t.Errorf("fee-rate without category: %s", r.result)
	}
}

func TestCoinInfoShape(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	var sample struct {
		Result struct {
			Rows []map[string]json.RawMessage `json:"rows"`
		} `json:"result"`
	}
	decodeInto(t, readSample(t, "v5-asset-coin-query-info.ccxt.json"), &sample)
	var sampleChains []map[string]json.RawMessage
	decodeInto(t, sample.Result.Rows[0]["chains"], &sampleChains)

	r := signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/asset/coin/query-info", "")
	mustOK(t, r)
	var res struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	decodeInto(t, r.result, &res)
	var coins []string
	for _, row := range res.Rows {
		checkKeys(t, "coin row", row, sample.Result.Rows[0])
		coins = append(coins, str(row["coin"]))
		var chains []map[string]json.RawMessage
		decodeInto(t, row["chains"], &chains)
		if len(chains) == 0 {
			t.Errorf("coin %s has no chain", row["coin"])
		}
		for _, ch := range chains {
			checkKeys(t, "chain", ch, sampleChains[0])
			for k, v := range ch {
				if _, err := jsonString(v); err != nil {
					t.Errorf("chain %s = %s is not a string", k, v)
				}
			}
			// The simulator moves no coins in or out.
			if str(ch["chainDeposit"]) != "0" || str(ch["chainWithdraw"]) != "0" {
				t.Errorf("coin %s chain open for transfers: %v", row["coin"], ch)
			}
		}
	}
	// Every coin a catalogue instrument uses is listed, once, sorted.
	want := map[string]bool{}
	for _, list := range s.catalog.list {
		for _, in := range list {
			want[in.baseCoin], want[in.quote] = true, true
		}
	}
	for c := range want {
		if !containsString(coins, c) {
			t.Errorf("coin %s missing from %v", c, coins)
		}
	}
	if !sort.StringsAreSorted(coins) {
		t.Errorf("coins not sorted: %v", coins)
	}
	r = signedGet(t, s, s.DefaultKey(), clock.ms(), "/v5/asset/coin/query-info", "coin=BTC")
	mustOK(t, r)
	decodeInto(t, r.result, &res)
	if len(res.Rows) != 1 || str(res.Rows[0]["coin"]) != "BTC" {
		t.Errorf("coin=BTC answered %s", r.result)
	}
}

func jsonString(raw json.RawMessage) (string, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func TestRecentTradeShape(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	var sample struct {
		Result struct {
			List []map[string]json.RawMessage `json:"list"`
		} `json:"result"`
	}
	decodeInto(t, readSample(t, "v5-market-recent-trade.linear.ccxt.json"), &sample)

	for _, cat := range []string{catLinear, catSpot} {
		r := get(t, s, "/v5/market/recent-trade?category="+cat+"&symbol=BTCUSDT&limit=40")
		mustOK(t, r)
		var res struct {
			Category string                       `json:"category"`
			List     []map[string]json.RawMessage `json:"list"`
		}
		decodeInto(t, r.result, &res)
		if res.Category != cat || len(res.List) != 40 {
			t.Fatalf("%s: category %q, %d trades", cat, res.Category, len(res.List))
		}
		in := s.catalog.get(cat, "BTCUSDT")
		var prevTime int64 = 1 << 62
		for i, tr := range res.List {
			checkKeys(t, cat+" trade", tr, sample.Result.List[0], "isRPITrade", "seq")
			if string(tr["isBlockTrade"]) != "false" || string(tr["isRPITrade"]) != "false" {
				t.Errorf("flags %v", tr)
			}
			ms := mustInt(t, json.RawMessage(str(tr["time"])))
			if ms > clock.ms() || ms > prevTime {
				t.Fatalf("%s trade %d time %d: after now or not newest first", cat, i, ms)
			}
			prevTime = ms
			p, q := mustDecimal(t, tr["price"]), mustDecimal(t, tr["size"])
			if !onStep(p, in.tick) || !onStep(q, in.step) || !q.IsPositive() {
				t.Errorf("%s trade price %s size %s off tick/step", cat, p, q)
			}
			if sd := str(tr["side"]); sd != "Buy" && sd != "Sell" {
				t.Errorf("side %q", sd)
			}
			id := str(tr["execId"])
			if (cat == catSpot && len(id) != 19) || (cat == catLinear && len(id) != 36) {
				t.Errorf("%s execId %q", cat, id)
			}
		}
		// The newest trade is at the ticker's last price.
		tk := get(t, s, "/v5/market/tickers?category="+cat+"&symbol=BTCUSDT")
		var tks struct {
			List []map[string]json.RawMessage `json:"list"`
		}
		decodeInto(t, tk.result, &tks)
		if !mustDecimal(t, res.List[0]["price"]).Equal(mustDecimal(t, tks.List[0]["lastPrice"])) {
			t.Errorf("%s newest trade %s, ticker last %s", cat, res.List[0]["price"], tks.List[0]["lastPrice"])
		}
	}

	// Defaults and bounds: spot 60 at most, linear 500 by default.
	r := get(t, s, "/v5/market/recent-trade?category=spot&symbol=BTCUSDT")
	mustOK(t, r)
	if n := strings.Count(string(r.result), `"execId"`); n != 60 {
		t.Errorf("spot default limit: %d trades", n)
	}
	wantCode(t, get(t, s, "/v5/market/recent-trade?category=spot&symbol=BTCUSDT&limit=61"), codeParams)
	r = get(t, s, "/v5/market/recent-trade?category=linear&symbol=BTCUSDT")
	if n := strings.Count(string(r.result), `"execId"`); n != 500 {
		t.Errorf("linear default limit: %d trades", n)
	}
	wantCode(t, get(t, s, "/v5/market/recent-trade?category=linear&symbol=NOPEUSDT"), codeParams)
	wantCode(t, get(t, s, "/v5/market/recent-trade?category=linear"), codeParams)
	r = get(t, s, "/v5/market/recent-trade?category=option")
	mustOK(t, r)
	if !strings.Contains(string(r.result), `"list":[]`) {
		t.Errorf("option without symbol: %s", r.result)
	}
}

func TestRecentTradeDeterministic(t *testing.T) {
	const q = "/v5/market/recent-trade?category=linear&symbol=ETHUSDT&limit=100"
	a := get(t, newTestSim(t, 7, newClock(testNow)), q)
	b := get(t, newTestSim(t, 7, newClock(testNow)), q)
	c := get(t, newTestSim(t, 8, newClock(testNow)), q)
	if !bytes.Equal(a.body, b.body) {
		t.Error("same seed and clock, different trades")
	}
	if bytes.Equal(a.result, c.result) {
		t.Error("different seeds, same trades")
	}
	// A later clock keeps the earlier trades: the list is history, not a
	// redraw.
	later := get(t, newTestSim(t, 7, newClock(testNow+5000)), q)
	var early, late struct {
		List []struct {
			ExecID string `json:"execId"`
			Time   string `json:"time"`
		} `json:"list"`
	}
	decodeInto(t, a.result, &early)
	decodeInto(t, later.result, &late)
	seen := map[string]bool{}
	for _, tr := range late.List {
		seen[tr.ExecID+"@"+tr.Time] = true
	}
	kept := 0
	for _, tr := range early.List {
		if seen[tr.ExecID+"@"+tr.Time] {
			kept++
		}
	}
	if kept < len(early.List)/2 {
		t.Errorf("only %d of %d trades survive 5 s of clock", kept, len(early.List))
	}
}

// readUntil reads messages until one matches, failing after 5 s.
func readUntil(t *testing.T, c *websocket.Conn, what string, match func(map[string]json.RawMessage) bool) (map[string]json.RawMessage, []byte) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		m, raw := readWS(t, c)
		if match(m) {
			return m, raw
		}
	}
	t.Fatalf("no %s within 5 s", what)
	return nil, nil
}

func topicIs(topic, typ string) func(map[string]json.RawMessage) bool {
	return func(m map[string]json.RawMessage) bool {
		return str(m["topic"]) == topic && (typ == "" || str(m["type"]) == typ)
	}
}

// restBook reads GET /v5/market/orderbook as price -> size maps.
func restBook(t *testing.T, s *Sim, cat, sym string, depth int) (bids, asks map[string]string, u int64) {
	t.Helper()
	r := get(t, s, "/v5/market/orderbook?category="+cat+"&symbol="+sym+"&limit="+itoa(int64(depth)))
	mustOK(t, r)
	var b struct {
		B, A [][2]string
		U    int64 `json:"u"`
	}
	decodeInto(t, r.result, &b)
	return rowsMap(b.B), rowsMap(b.A), b.U
}

func rowsMap(rows [][2]string) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[r[0]] = r[1]
	}
	return m
}

func applyRows(t *testing.T, book map[string]string, rows [][2]string) {
	t.Helper()
	for _, r := range rows {
		if decimal.RequireFromString(r[1]).IsZero() {
			if _, ok := book[r[0]]; !ok {
				t.Errorf("delta deletes unknown level %s", r[0])
			}
			delete(book, r[0])
			continue
		}
		book[r[0]] = r[1]
	}
}

func sameBook(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWSOrderbookSnapshotThenDeltas(t *testing.T) {
	for _, tc := range []struct {
		path, cat string
		depth     int
	}{
		{pathWSPublicLinear, catLinear, 50},
		{pathWSPublicLinear, catLinear, 200},
		{pathWSPublicSpot, catSpot, 50},
	} {
		clock := newClock(testNow)
		s := newTestSim(t, 3, clock)
		s.pushInterval = 20 * time.Millisecond
		srv := serve(t, s)
		c := dialWS(t, srv.URL, tc.path)
		topic := "orderbook." + itoa(int64(tc.depth)) + ".BTCUSDT"
		sendWS(t, c, `{"req_id":"b1","op":"subscribe","args":["`+topic+`"]}`)
		m, raw := readWS(t, c)
		if string(m["success"]) != "true" {
			t.Fatalf("%s ack %s", topic, raw)
		}
		m, raw = readWS(t, c)
		wantKeys(t, "orderbook push", m, "cts,data,topic,ts,type")
		if str(m["topic"]) != topic || str(m["type"]) != "snapshot" {
			t.Fatalf("first push %s", raw)
		}
		var data struct {
			S   string      `json:"s"`
			B   [][2]string `json:"b"`
			A   [][2]string `json:"a"`
			U   int64       `json:"u"`
			Seq int64       `json:"seq"`
		}
		var keys map[string]json.RawMessage
		decodeInto(t, m["data"], &keys)
		wantKeys(t, "orderbook data", keys, "a,b,s,seq,u")
		decodeInto(t, m["data"], &data)
		bids, asks := rowsMap(data.B), rowsMap(data.A)
		wb, wa, wu := restBook(t, s, tc.cat, "BTCUSDT", tc.depth)
		if !sameBook(bids, wb) || !sameBook(asks, wa) || data.U != wu || len(data.B) != tc.depth {
			t.Fatalf("%s snapshot differs from the REST book at the same second", topic)
		}
		prevU, prevSeq := data.U, data.Seq

		// Each second of clock brings one delta; applied to the snapshot it
		// gives the REST book of that second.
		for i := 0; i < 3; i++ {
			clock.Advance(time.Second)
			m, raw = readUntil(t, c, topic+" delta", topicIs(topic, ""))
			if str(m["type"]) != "delta" {
				t.Fatalf("push after a second: %s", raw)
			}
			decodeInto(t, m["data"], &data)
			if data.U != prevU+1 || data.Seq <= prevSeq {
				t.Fatalf("delta u %d seq %d after u %d seq %d", data.U, data.Seq, prevU, prevSeq)
			}
			prevU, prevSeq = data.U, data.Seq
			if !sort.SliceIsSorted(data.B, func(i, j int) bool {
				return decimal.RequireFromString(data.B[i][0]).GreaterThan(decimal.RequireFromString(data.B[j][0]))
			}) {
				t.Errorf("delta bids not descending")
			}
			applyRows(t, bids, data.B)
			applyRows(t, asks, data.A)
			wb, wa, wu = restBook(t, s, tc.cat, "BTCUSDT", tc.depth)
			if !sameBook(bids, wb) || !sameBook(asks, wa) || wu != data.U {
				t.Fatalf("%s: book after delta %d differs from the REST book", topic, i)
			}
		}
	}
}

func TestWSOrderbookDepthOneIsSnapshotOnly(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	s.pushInterval = 20 * time.Millisecond
	srv := serve(t, s)
	c := dialWS(t, srv.URL, pathWSPublicLinear)
	sendWS(t, c, `{"op":"subscribe","args":["orderbook.1.ETHUSDT"]}`)
	readWS(t, c) // ack
	for i := 0; i < 2; i++ {
		m, raw := readUntil(t, c, "depth-1 push", topicIs("orderbook.1.ETHUSDT", ""))
		var data struct{ B, A [][2]string }
		decodeInto(t, m["data"], &data)
		if str(m["type"]) != "snapshot" || len(data.B) != 1 || len(data.A) != 1 {
			t.Fatalf("depth-1 push %s", raw)
		}
		clock.Advance(time.Second)
	}
}

func TestWSPublicTrades(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 4, clock)
	s.pushInterval = 20 * time.Millisecond
	srv := serve(t, s)
	c := dialWS(t, srv.URL, pathWSPublicLinear)
	sendWS(t, c, `{"op":"subscribe","args":["publicTrade.BTCUSDT"]}`)
	m, raw := readWS(t, c)
	if string(m["success"]) != "true" {
		t.Fatalf("ack %s", raw)
	}
	subscribedAt := clock.ms()
	clock.Advance(3 * time.Second)
	// One clock step, so one push carries every trade since the
	// subscription.
	m, raw = readUntil(t, c, "trade push", topicIs("publicTrade.BTCUSDT", "snapshot"))
	wantKeys(t, "trade push", m, "data,topic,ts,type")
	var got []map[string]json.RawMessage
	decodeInto(t, m["data"], &got)
	if len(got) < 3 {
		t.Fatalf("3 s of market brought %d trades: %s", len(got), raw)
	}
	// The pushed trades are exactly the REST trades after the subscription,
	// oldest first, with the stream's field names and types.
	r := get(t, s, "/v5/market/recent-trade?category=linear&symbol=BTCUSDT&limit=1000")
	var rest struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(t, r.result, &rest)
	var want []map[string]json.RawMessage
	for i := len(rest.List) - 1; i >= 0; i-- {
		if ms := mustInt(t, json.RawMessage(str(rest.List[i]["time"]))); ms > subscribedAt {
			want = append(want, rest.List[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("pushed %d trades, REST has %d after the subscription", len(got), len(want))
	}
	for i, tr := range got {
		wantKeys(t, "trade", tr, "BT,L,RPI,S,T,i,p,s,seq,v")
		w := want[i]
		if str(tr["i"]) != str(w["execId"]) || str(tr["p"]) != str(w["price"]) || str(tr["v"]) != str(w["size"]) ||
			str(tr["S"]) != str(w["side"]) || itoa(mustInt(t, tr["T"])) != str(w["time"]) || itoa(mustInt(t, tr["seq"])) != str(w["seq"]) {
			t.Fatalf("trade %d: pushed %v, REST %v", i, tr, w)
		}
		switch str(tr["L"]) {
		case "PlusTick", "ZeroPlusTick", "MinusTick", "ZeroMinusTick":
		default:
			t.Errorf("tick direction %s", tr["L"])
		}
	}
}

func TestWSSubscribeRefusesOnlyBadTopics(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	s.pushInterval = time.Hour // only the subscribe snapshots
	srv := serve(t, s)
	c := dialWS(t, srv.URL, pathWSPublicLinear)
	sendWS(t, c, `{"req_id":"mix","op":"subscribe","args":["tickers.BTCUSDT","orderbook.50.NOPEUSDT","orderbook.7.BTCUSDT","liquidation.BTCUSDT","orderbook.50.ETHUSDT"]}`)
	m, raw := readWS(t, c)
	if string(m["success"]) != "false" || str(m["req_id"]) != "mix" || str(m["op"]) != "subscribe" {
		t.Fatalf("mixed subscribe ack %s", raw)
	}
	msg := str(m["ret_msg"])
	for _, bad := range []string{"orderbook.50.NOPEUSDT", "orderbook.7.BTCUSDT", "liquidation.BTCUSDT"} {
		if !strings.Contains(msg, bad) {
			t.Errorf("refusal %q does not name %s", msg, bad)
		}
	}
	for _, good := range []string{"tickers.BTCUSDT", "orderbook.50.ETHUSDT"} {
		if strings.Contains(msg, good) {
			t.Errorf("refusal %q names the accepted %s", msg, good)
		}
	}
	// The good topics were subscribed: their snapshots follow the ack.
	seen := map[string]bool{}
	for len(seen) < 2 {
		m, raw = readWS(t, c)
		topic := str(m["topic"])
		if topic != "tickers.BTCUSDT" && topic != "orderbook.50.ETHUSDT" {
			t.Fatalf("unexpected push %s", raw)
		}
		seen[topic] = true
	}
	// And only they: subscribing them again is refused as a duplicate, the
	// refused ones are accepted now.
	sendWS(t, c, `{"op":"subscribe","args":["orderbook.50.ETHUSDT","publicTrade.BTCUSDT"]}`)
	m, raw = readWS(t, c)
	if string(m["success"]) != "false" || !strings.Contains(str(m["ret_msg"]), "already subscribed,topic:orderbook.50.ETHUSDT") ||
		strings.Contains(str(m["ret_msg"]), "publicTrade") {
		t.Fatalf("second subscribe %s", raw)
	}

	// The private stream judges topics one by one too.
	p := dialWS(t, srv.URL, pathWSPrivate)
	sendWS(t, p, authMsg(s.DefaultKey(), clock.ms()+10_000, ""))
	readWS(t, p)
	sendWS(t, p, `{"op":"subscribe","args":["order","orders","wallet"]}`)
	m, raw = readWS(t, p)
	if string(m["success"]) != "false" || str(m["ret_msg"]) != "error:handler not found,topic:orders" {
		t.Fatalf("private mixed subscribe %s", raw)
	}
	sendWS(t, p, `{"op":"subscribe","args":["wallet"]}`)
	if m, raw = readWS(t, p); !strings.Contains(str(m["ret_msg"]), "already subscribed") {
		t.Fatalf("wallet was not subscribed: %s", raw)
	}
}

func TestWSPublicStreamDeterministic(t *testing.T) {
	run := func(seed int64) []string {
		clock := newClock(testNow)
		s := newTestSim(t, seed, clock)
		s.pushInterval = 10 * time.Millisecond
		srv := serve(t, s)
		c := dialWS(t, srv.URL, pathWSPublicLinear)
		sendWS(t, c, `{"op":"subscribe","args":["orderbook.50.SOLUSDT","publicTrade.SOLUSDT"]}`)
		var out []string
		m, _ := readWS(t, c) // ack: carries a connection id, skip
		_ = m
		m, raw := readWS(t, c) // snapshot
		out = append(out, string(raw))
		for i := 0; i < 2; i++ {
			clock.Advance(time.Second)
			m, raw = readUntil(t, c, "delta", topicIs("orderbook.50.SOLUSDT", "delta"))
			out = append(out, string(raw))
			m, raw = readUntil(t, c, "trades", topicIs("publicTrade.SOLUSDT", "snapshot"))
			out = append(out, string(raw))
		}
		return out
	}
	a, b, c := run(11), run(11), run(12)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("same seed, different streams:\n%s\n%s", a, b)
	}
	if a[0] == c[0] {
		t.Error("different seeds, same snapshot")
	}
}

func TestAccountListsOfUnlistedCategoriesAreEmpty(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	k := s.DefaultKey()
	for _, tc := range []struct{ path, query string }{
		{"/v5/position/list", "category=inverse&settleCoin=BTC"},
		{"/v5/position/list", "category=inverse&limit=200"}, // ccxt's watchPositions snapshot
		{"/v5/position/list", "category=option"},
		{"/v5/order/realtime", "category=inverse&symbol=BTCUSD"},
		{"/v5/order/history", "category=inverse"},
		{"/v5/execution/list", "category=option"},
	} {
		r := signedGet(t, s, k, clock.ms(), tc.path, tc.query)
		mustOK(t, r)
		var res map[string]json.RawMessage
		decodeInto(t, r.result, &res)
		cat := strings.TrimPrefix(strings.Split(tc.query, "&")[0], "category=")
		if got := strings.Join(keysOf(res), ","); got != "category,list,nextPageCursor" ||
			str(res["category"]) != cat || string(res["list"]) != "[]" || str(res["nextPageCursor"]) != "" {
			t.Errorf("%s?%s: %s", tc.path, tc.query, r.result)
		}
	}
	// Linear keeps its own rules; unknown categories are refused.
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "category=linear"), codeParams)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "category=futures"), codeParams)
}
