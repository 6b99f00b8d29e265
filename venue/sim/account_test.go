package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// seed posts a body to a /sim/accounts endpoint and wants HTTP 200.
func seed(t *testing.T, s *Sim, k Key, what, body string) []byte {
	t.Helper()
	r := do(t, s, http.MethodPost, "/sim/accounts/"+k.APIKey+"/"+what, []byte(body), nil)
	if r.status != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d: %s", what, r.status, r.body)
	}
	return r.body
}

// seedStatus posts a body and returns the HTTP status and body.
func seedStatus(t *testing.T, s *Sim, k Key, what, body string) (int, string) {
	t.Helper()
	r := do(t, s, http.MethodPost, "/sim/accounts/"+k.APIKey+"/"+what, []byte(body), nil)
	return r.status, string(r.body)
}

// page is the result of a paged read, items kept raw.
type page struct {
	Category       string                       `json:"category"`
	NextPageCursor string                       `json:"nextPageCursor"`
	List           []map[string]json.RawMessage `json:"list"`
}

func readPage(t *testing.T, s *Sim, k Key, clock *fakeClock, path, query string) page {
	t.Helper()
	r := signedGet(t, s, k, clock.ms(), path, query)
	mustOK(t, r)
	var p page
	decodeInto(t, r.result, &p)
	return p
}

func jstr(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s is not a JSON string", raw)
	}
	return s
}

func dec(t *testing.T, raw json.RawMessage) decimal.Decimal {
	t.Helper()
	return decimal.RequireFromString(jstr(t, raw))
}

// isJSONInt reports whether raw is a JSON integer (not a string).
func isJSONInt(raw json.RawMessage) bool {
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

func isJSONBool(raw json.RawMessage) bool { return string(raw) == "true" || string(raw) == "false" }

func TestWalletBalance(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()

	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", ""), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", "accountType=CONTRACT"), 10001)

	// A fresh account has no coins.
	r := signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	mustOK(t, r)
	if !strings.Contains(string(r.result), `"coin":[]`) {
		t.Fatalf("fresh account: %s", r.result)
	}

	seed(t, s, k, "balances", `{"USDT": "10000", "BTC": "0.5"}`)
	seed(t, s, k, "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "67200"}]`)
	r = signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	mustOK(t, r)
	var res struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(t, r.result, &res)
	if len(res.List) != 1 {
		t.Fatalf("list %s", r.result)
	}
	acct := res.List[0]
	for _, f := range []string{"accountType", "accountIMRate", "accountMMRate", "totalEquity", "totalWalletBalance",
		"totalMarginBalance", "totalAvailableBalance", "totalPerpUPL", "totalInitialMargin", "totalMaintenanceMargin",
		"accountLTV", "accountIMRateByMp", "accountMMRateByMp", "totalInitialMarginByMp", "totalMaintenanceMarginByMp"} {
		if _, ok := acct[f]; !ok {
			t.Errorf("account field %s missing", f)
		} else {
			jstr(t, acct[f])
		}
	}
	var coins []map[string]json.RawMessage
	decodeInto(t, acct["coin"], &coins)
	if len(coins) != 2 || jstr(t, coins[0]["coin"]) != "BTC" || jstr(t, coins[1]["coin"]) != "USDT" {
		t.Fatalf("coins %s", acct["coin"])
	}

	// The position's unrealised PnL from /v5/position/list.
	pl := readPage(t, s, k, clock, "/v5/position/list", "category=linear&symbol=BTCUSDT")
	upl := dec(t, pl.List[0]["unrealisedPnl"])
	im := dec(t, pl.List[0]["positionIM"])

	// BTC's USD value from the spot ticker.
	tr := get(t, s, "/v5/market/tickers?category=spot&symbol=BTCUSDT")
	mustOK(t, tr)
	var tick struct {
		List []struct {
			LastPrice string `json:"lastPrice"`
		} `json:"list"`
	}
	decodeInto(t, tr.result, &tick)
	btcPx := decimal.RequireFromString(tick.List[0].LastPrice)

	btc, usdt := coins[0], coins[1]
	if !dec(t, btc["usdValue"]).Equal(btcPx.Mul(decimal.RequireFromString("0.5")).Round(8)) {
		t.Errorf("BTC usdValue %s, price %s", btc["usdValue"], btcPx)
	}
	if !dec(t, usdt["unrealisedPnl"]).Equal(upl) || !dec(t, usdt["equity"]).Equal(decimal.NewFromInt(10000).Add(upl)) ||
		!dec(t, usdt["usdValue"]).Equal(dec(t, usdt["equity"])) || !dec(t, usdt["totalPositionIM"]).Equal(im) {
		t.Errorf("USDT coin %v, upl %s", usdt, upl)
	}
	sumUSD := dec(t, btc["usdValue"]).Add(dec(t, usdt["usdValue"]))
	if !dec(t, acct["totalEquity"]).Equal(sumUSD) {
		t.Errorf("totalEquity %s != sum of usdValue %s", acct["totalEquity"], sumUSD)
	}
	if !dec(t, acct["totalPerpUPL"]).Equal(upl) {
		t.Errorf("totalPerpUPL %s, upl %s", acct["totalPerpUPL"], upl)
	}
	wallet := dec(t, acct["totalWalletBalance"])
	if !wallet.Equal(btcPx.Mul(decimal.RequireFromString("0.5")).Round(8).Add(decimal.NewFromInt(10000))) {
		t.Errorf("totalWalletBalance %s", wallet)
	}
	if !dec(t, acct["totalMarginBalance"]).Equal(wallet.Add(upl)) ||
		!dec(t, acct["totalAvailableBalance"]).Equal(wallet.Add(upl).Sub(im)) {
		t.Errorf("margin %s available %s", acct["totalMarginBalance"], acct["totalAvailableBalance"])
	}
	if !isJSONBool(usdt["marginCollateral"]) || !isJSONBool(usdt["collateralSwitch"]) {
		t.Errorf("booleans: %v", usdt)
	}

	// coin= filter names coins, even with zero balance.
	r = signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED&coin=USDC%2CBTC")
	mustOK(t, r)
	if !strings.Contains(string(r.result), `"coin":"USDC"`) || strings.Contains(string(r.result), `"coin":"USDT"`) {
		t.Fatalf("coin filter: %s", r.result)
	}

	// Setting a balance to 0 removes it.
	seed(t, s, k, "balances", `{"BTC": "0"}`)
	r = signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	if strings.Contains(string(r.result), `"coin":"BTC"`) {
		t.Fatalf("BTC still listed: %s", r.result)
	}

	// State is per account: another key sees nothing.
	k2 := createKey(t, s, `{}`)
	r = signedGet(t, s, k2, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	if !strings.Contains(string(r.result), `"coin":[]`) {
		t.Fatalf("other account: %s", r.result)
	}
}

func TestPositionList(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()

	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "category=linear"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "category=spot&symbol=BTCUSDT"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "symbol=BTCUSDT"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "category=linear&symbol=NOPEUSDT"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/position/list", "category=linear&settleCoin=USDT&limit=201"), 10001)

	// Flat symbol: one row, size "0", side "".
	p := readPage(t, s, k, clock, "/v5/position/list", "category=linear&symbol=BTCUSDT")
	if len(p.List) != 1 || jstr(t, p.List[0]["size"]) != "0.000" || jstr(t, p.List[0]["side"]) != "" ||
		string(p.List[0]["positionIdx"]) != "0" || p.NextPageCursor != "" {
		t.Fatalf("flat row %v", p)
	}
	// settleCoin only: nothing open.
	if p := readPage(t, s, k, clock, "/v5/position/list", "category=linear&settleCoin=USDT"); len(p.List) != 0 {
		t.Fatalf("settleCoin rows %v", p.List)
	}

	seed(t, s, k, "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "67200", "leverage": "5"},
		{"symbol": "ETHUSDT", "side": "Sell", "size": "2", "avgPrice": "3500.5", "takeProfit": "3000"},
		{"symbol": "SOLUSDT", "side": "Buy", "size": "10", "avgPrice": "150"}]`)
	p = readPage(t, s, k, clock, "/v5/position/list", "category=linear&settleCoin=USDT")
	if len(p.List) != 3 {
		t.Fatalf("rows %d", len(p.List))
	}
	for _, row := range p.List {
		for _, f := range []string{"positionIdx", "riskId", "autoAddMargin", "adlRankIndicator", "tradeMode", "seq", "openTime"} {
			if !isJSONInt(row[f]) {
				t.Errorf("%s = %s, want a JSON integer", f, row[f])
			}
		}
		if !isJSONBool(row["isReduceOnly"]) {
			t.Errorf("isReduceOnly %s", row["isReduceOnly"])
		}
		for _, f := range []string{"symbol", "side", "size", "avgPrice", "positionValue", "markPrice", "liqPrice", "leverage",
			"unrealisedPnl", "cumRealisedPnl", "takeProfit", "stopLoss", "createdTime", "updatedTime", "positionIM", "positionMM"} {
			jstr(t, row[f])
		}
		size, avg, mark := dec(t, row["size"]), dec(t, row["avgPrice"]), dec(t, row["markPrice"])
		diff := mark.Sub(avg)
		if jstr(t, row["side"]) == "Sell" {
			diff = diff.Neg()
		}
		if !dec(t, row["unrealisedPnl"]).Equal(diff.Mul(size).Round(8)) {
			t.Errorf("%s: unrealisedPnl %s, mark %s avg %s size %s", row["symbol"], row["unrealisedPnl"], mark, avg, size)
		}
		if !dec(t, row["positionValue"]).Equal(size.Mul(avg)) {
			t.Errorf("positionValue %s", row["positionValue"])
		}
	}
	btc := p.List[0]
	if jstr(t, btc["symbol"]) != "BTCUSDT" || jstr(t, btc["leverage"]) != "5" || jstr(t, btc["avgPrice"]) != "67200" {
		t.Fatalf("BTC row %v", btc)
	}
	eth := p.List[1]
	if jstr(t, eth["takeProfit"]) != "3000.00" || jstr(t, eth["stopLoss"]) != "" || jstr(t, eth["side"]) != "Sell" {
		t.Fatalf("ETH row %v", eth)
	}
	// markPrice is the ticker's.
	tr := get(t, s, "/v5/market/tickers?category=linear&symbol=BTCUSDT")
	var tick struct {
		List []struct {
			MarkPrice string `json:"markPrice"`
		} `json:"list"`
	}
	decodeInto(t, tr.result, &tick)
	if jstr(t, btc["markPrice"]) != tick.List[0].MarkPrice {
		t.Fatalf("markPrice %s, ticker %s", btc["markPrice"], tick.List[0].MarkPrice)
	}

	// Pagination: 2 + 1.
	p1 := readPage(t, s, k, clock, "/v5/position/list", "category=linear&settleCoin=USDT&limit=2")
	if len(p1.List) != 2 || p1.NextPageCursor == "" {
		t.Fatalf("page 1 %v", p1)
	}
	p2 := readPage(t, s, k, clock, "/v5/position/list", "category=linear&settleCoin=USDT&limit=2&cursor="+url.QueryEscape(p1.NextPageCursor))
	if len(p2.List) != 1 || jstr(t, p2.List[0]["symbol"]) != "SOLUSDT" || p2.NextPageCursor != "" {
		t.Fatalf("page 2 %v", p2)
	}

	// Closing a position: size 0.
	seed(t, s, k, "positions", `[{"symbol": "SOLUSDT", "size": "0"}]`)
	if p := readPage(t, s, k, clock, "/v5/position/list", "category=linear&settleCoin=USDT"); len(p.List) != 2 {
		t.Fatalf("after close: %d rows", len(p.List))
	}

	// Hedge mode: two rows for the symbol, positionIdx 1 and 2.
	seed(t, s, k, "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "67200", "positionIdx": 1}]`)
	p = readPage(t, s, k, clock, "/v5/position/list", "category=linear&symbol=BTCUSDT")
	if len(p.List) != 2 || string(p.List[0]["positionIdx"]) != "1" || string(p.List[1]["positionIdx"]) != "2" ||
		jstr(t, p.List[1]["size"]) != "0.000" {
		t.Fatalf("hedge rows %v", p.List)
	}
	// Back to one-way.
	seed(t, s, k, "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "0.02", "avgPrice": "67000"}]`)
	p = readPage(t, s, k, clock, "/v5/position/list", "category=linear&symbol=BTCUSDT")
	if len(p.List) != 1 || string(p.List[0]["positionIdx"]) != "0" {
		t.Fatalf("one-way again %v", p.List)
	}
}

func TestAccountSeedValidation(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()
	cases := []struct{ name, what, body string }{
		{"balance not a string", "balances", `{"USDT": 10}`},
		{"balance negative", "balances", `{"USDT": "-1"}`},
		{"unknown coin", "balances", `{"DOGE": "1"}`},
		{"position unknown symbol", "positions", `[{"symbol": "NOPEUSDT", "side": "Buy", "size": "1", "avgPrice": "1"}]`},
		{"position bad side", "positions", `[{"symbol": "BTCUSDT", "side": "Long", "size": "1", "avgPrice": "1"}]`},
		{"position no price", "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "1"}]`},
		{"position idx side", "positions", `[{"symbol": "BTCUSDT", "side": "Sell", "size": "1", "avgPrice": "1", "positionIdx": 1}]`},
		{"position leverage", "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "1", "avgPrice": "1", "leverage": "500"}]`},
		{"position unknown field", "positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "1", "avgPrice": "1", "x": 1}]`},
		{"positions not an array", "positions", `{"symbol": "BTCUSDT"}`},
		{"order category", "orders", `[{"category": "inverse", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1"}]`},
		{"order status", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "status": "Open"}]`},
		{"order filled qty", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "status": "Filled", "cumExecQty": "0.5"}]`},
		{"order new with fills", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "status": "New", "cumExecQty": "0.5"}]`},
		{"order link id", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "orderLinkId": "no spaces"}]`},
		{"order limit no price", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1"}]`},
		{"order duplicate link", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "orderLinkId": "a"},
			{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "orderLinkId": "a"}]`},
		{"order updated before created", "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "createdTime": 2000, "updatedTime": 1000}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if st, body := seedStatus(t, s, k, tc.what, tc.body); st != http.StatusBadRequest {
				t.Fatalf("HTTP %d: %s", st, body)
			}
		})
	}
	// Nothing was stored by the refused bodies.
	if p := readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&settleCoin=USDT"); len(p.List) != 0 {
		t.Fatalf("refused seed stored orders: %v", p.List)
	}
	if st, _ := seedStatus(t, s, Key{APIKey: "NOSUCHKEY"}, "balances", `{}`); st != http.StatusNotFound {
		t.Fatalf("unknown key: HTTP %d", st)
	}
	if st, _ := seedStatus(t, s, k, "nothing", `{}`); st != http.StatusNotFound {
		t.Fatalf("unknown endpoint: HTTP %d", st)
	}
	r := do(t, s, http.MethodGet, "/sim/accounts/"+k.APIKey+"/balances", nil, nil)
	if r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET: HTTP %d", r.status)
	}
	// Reused orderLinkId across calls.
	seed(t, s, k, "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "orderLinkId": "once"}]`)
	if st, _ := seedStatus(t, s, k, "orders", `[{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "orderLinkId": "once"}]`); st != http.StatusBadRequest {
		t.Fatalf("reused orderLinkId: HTTP %d", st)
	}
	// The same id in the other category is fine.
	seed(t, s, k, "orders", `[{"category": "spot", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "1", "price": "1", "orderLinkId": "once"}]`)
}

// seedOrders stores n linear orders with the given status one second
// apart, the newest at newestMs, and returns their ids newest first.
func seedOrders(t *testing.T, s *Sim, k Key, cat, status string, n int, newestMs int64) []string {
	t.Helper()
	items := make([]string, 0, n)
	for i := n - 1; i >= 0; i-- {
		ms := newestMs - int64(i)*1000
		cum := ""
		if status == "Filled" {
			cum = `, "cumExecQty": "0.01", "avgPrice": "67000.5"`
		}
		items = append(items, fmt.Sprintf(`{"category": %q, "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01",
			"price": "60000", "status": %q, "orderLinkId": "%s-%s-%d", "createdTime": %d%s}`, cat, status, cat, status, i, ms, cum))
	}
	var out []seededOrder
	decodeInto(t, seed(t, s, k, "orders", "["+strings.Join(items, ",")+"]"), &out)
	ids := make([]string, len(out))
	for i, o := range out {
		ids[len(out)-1-i] = o.OrderID
	}
	return ids
}

// readAll pages through path with limit and returns every id field value.
func readAll(t *testing.T, s *Sim, k Key, clock *fakeClock, path, query, idField string, limit int) (ids []string, sizes []int) {
	t.Helper()
	cursor := ""
	for i := 0; i < 100; i++ {
		q := query + "&limit=" + strconv.Itoa(limit)
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		p := readPage(t, s, k, clock, path, q)
		sizes = append(sizes, len(p.List))
		for _, row := range p.List {
			ids = append(ids, jstr(t, row[idField]))
		}
		if p.NextPageCursor == "" {
			return ids, sizes
		}
		if !regexp.MustCompile(`^[A-Za-z0-9._~-]+$`).MatchString(p.NextPageCursor) {
			t.Fatalf("cursor %q has reserved characters", p.NextPageCursor)
		}
		cursor = p.NextPageCursor
	}
	t.Fatal("no end of pages")
	return nil, nil
}

func TestOrderRealtime(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()

	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=linear"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "settleCoin=USDT"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=linear&settleCoin=USDT&limit=51"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=linear&settleCoin=USDT&limit=0"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=spot&settleCoin=USDT"), 10001)
	mustOK(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=spot"))

	want := seedOrders(t, s, k, catLinear, "New", 45, testNow)
	seedOrders(t, s, k, catLinear, "Filled", 3, testNow)

	// Default limit 20.
	if p := readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&symbol=BTCUSDT"); len(p.List) != 20 {
		t.Fatalf("default page %d", len(p.List))
	}
	ids, sizes := readAll(t, s, k, clock, "/v5/order/realtime", "category=linear&settleCoin=USDT", "orderId", 20)
	if fmt.Sprint(sizes) != "[20 20 5]" || strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("pages %v; ids match %v", sizes, strings.Join(ids, ",") == strings.Join(want, ","))
	}

	// One row's shape.
	p := readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&symbol=BTCUSDT&limit=1")
	row := p.List[0]
	for _, f := range []string{"positionIdx", "triggerDirection", "smpGroup"} {
		if !isJSONInt(row[f]) {
			t.Errorf("%s = %s, want a JSON integer", f, row[f])
		}
	}
	for _, f := range []string{"reduceOnly", "closeOnTrigger"} {
		if !isJSONBool(row[f]) {
			t.Errorf("%s = %s, want a JSON boolean", f, row[f])
		}
	}
	if jstr(t, row["orderStatus"]) != "New" || jstr(t, row["leavesQty"]) != "0.010" || jstr(t, row["avgPrice"]) != "" ||
		jstr(t, row["createdTime"]) != strconv.FormatInt(testNow, 10) || jstr(t, row["rejectReason"]) != "EC_NoError" ||
		!regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(jstr(t, row["orderId"])) {
		t.Fatalf("row %v", row)
	}

	// openOnly=1 adds recent closed orders; an id lookup finds a closed one.
	if p := readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&symbol=BTCUSDT&openOnly=1&limit=50"); len(p.List) != 48 {
		t.Fatalf("openOnly=1: %d", len(p.List))
	}
	p = readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&orderLinkId=linear-Filled-0")
	if len(p.List) != 1 || jstr(t, p.List[0]["orderStatus"]) != "Filled" {
		t.Fatalf("lookup by orderLinkId: %v", p.List)
	}
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=linear&symbol=BTCUSDT&openOnly=2"), 10001)

	// Cursors: forged, tampered, or for another query → 10001.
	p1 := readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&settleCoin=USDT&limit=5")
	for name, q := range map[string]string{
		"forged":        "category=linear&settleCoin=USDT&cursor=" + url.QueryEscape("abc"),
		"bybit-like":    "category=linear&settleCoin=USDT&cursor=" + url.QueryEscape("3606515b%3A1758189775648%2C3606515b%3A1758189775648"),
		"tampered":      "category=linear&settleCoin=USDT&cursor=" + url.QueryEscape("x"+p1.NextPageCursor),
		"other query":   "category=linear&symbol=BTCUSDT&cursor=" + url.QueryEscape(p1.NextPageCursor),
		"other account": "",
	} {
		if q == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", q), 10001)
		})
	}
	k2 := createKey(t, s, `{}`)
	wantCode(t, signedGet(t, s, k2, clock.ms(), "/v5/order/realtime", "category=linear&settleCoin=USDT&limit=5&cursor="+url.QueryEscape(p1.NextPageCursor)), 10001)
	// Another limit with the same filters keeps the cursor valid.
	mustOK(t, signedGet(t, s, k, clock.ms(), "/v5/order/realtime", "category=linear&settleCoin=USDT&limit=7&cursor="+url.QueryEscape(p1.NextPageCursor)))

	// Orders added between pages do not repeat or shift rows.
	seedOrders(t, s, k, catSpot, "New", 2, testNow+5000)
	p2 := readPage(t, s, k, clock, "/v5/order/realtime", "category=linear&settleCoin=USDT&limit=5&cursor="+url.QueryEscape(p1.NextPageCursor))
	if jstr(t, p2.List[0]["orderId"]) != want[5] {
		t.Fatalf("page 2 starts at %s, want %s", p2.List[0]["orderId"], want[5])
	}

	// Spot: numeric ids, assigned orderLinkId when none given, and no
	// seeded order is "accepted".
	seed(t, s, k, "orders", `[{"category": "spot", "symbol": "ETHUSDT", "side": "Sell", "orderType": "Limit", "qty": "0.5", "price": "4000"}]`)
	p = readPage(t, s, k, clock, "/v5/order/realtime", "category=spot&symbol=ETHUSDT")
	if len(p.List) != 1 || !regexp.MustCompile(`^1[0-9]{18}$`).MatchString(jstr(t, p.List[0]["orderId"])) ||
		!regexp.MustCompile(`^[0-9]{19}$`).MatchString(jstr(t, p.List[0]["orderLinkId"])) || jstr(t, p.List[0]["isLeverage"]) != "0" {
		t.Fatalf("spot row %v", p.List)
	}
	if r := get(t, s, "/sim/orders"); string(r.body) != "[]" {
		t.Fatalf("/sim/orders lists seeded orders: %s", r.body)
	}
}

func TestOrderHistoryWindowAndVisibility(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()
	const day = int64(24 * time.Hour / time.Millisecond)
	now := testNow
	ms := func(v int64) string { return strconv.FormatInt(v, 10) }
	body := fmt.Sprintf(`[
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "60000", "status": "Filled", "orderLinkId": "filled-1d", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "60000", "status": "Cancelled", "orderLinkId": "cancel-1h", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "60000", "status": "Cancelled", "orderLinkId": "cancel-2d", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.02", "price": "60000", "status": "Cancelled", "cumExecQty": "0.01", "orderLinkId": "partcancel-2d", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.01", "status": "Rejected", "orderLinkId": "rejected-3d", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "60000", "status": "Filled", "orderLinkId": "filled-10d", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "60000", "status": "Deactivated", "orderLinkId": "deact-10d", "createdTime": %d},
	 {"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "60000", "status": "New", "orderLinkId": "open-now", "createdTime": %d}
	]`, now-day, now-day/24, now-2*day, now-2*day, now-3*day, now-10*day, now-10*day, now)
	seed(t, s, k, "orders", body)

	links := func(q string) string {
		t.Helper()
		p := readPage(t, s, k, clock, "/v5/order/history", "category=linear"+q)
		var out []string
		for _, row := range p.List {
			out = append(out, jstr(t, row["orderLinkId"]))
		}
		return strings.Join(out, ",")
	}
	cases := []struct{ name, query, want string }{
		{"neither: last 7 days, unfilled cancels 24 h", "", "cancel-1h,filled-1d,partcancel-2d"},
		{"only start", "&startTime=" + ms(now-11*day), "filled-10d"},
		{"only end", "&endTime=" + ms(now-day/2), "filled-1d,partcancel-2d"},
		{"both", "&startTime=" + ms(now-3*day) + "&endTime=" + ms(now-day), "filled-1d,partcancel-2d"},
		{"both exactly 7 days", "&startTime=" + ms(now-7*day) + "&endTime=" + ms(now), "cancel-1h,filled-1d,partcancel-2d"},
		{"status filter", "&orderStatus=Filled", "filled-1d"},
		{"symbol filter", "&symbol=ETHUSDT", ""},
		{"by link id", "&orderLinkId=partcancel-2d", "partcancel-2d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := links(tc.query); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	for name, q := range map[string]string{
		"span over 7 days": "&startTime=" + ms(now-8*day) + "&endTime=" + ms(now),
		"end before start": "&startTime=" + ms(now) + "&endTime=" + ms(now-1),
		"bad start":        "&startTime=yesterday",
		"limit 51":         "&limit=51",
		"bad status":       "&orderStatus=Open",
		"no category":      "&category=",
	} {
		t.Run(name, func(t *testing.T) {
			query := "category=linear" + q
			if name == "no category" {
				query = "symbol=BTCUSDT"
			}
			wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/order/history", query), 10001)
		})
	}

	// The 24 h rule moves with the clock.
	clock.Advance(24 * time.Hour)
	if got := links(""); got != "filled-1d,partcancel-2d" {
		t.Fatalf("after 24 h: %q", got)
	}
}

func TestExecutionList(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()
	seedOrders(t, s, k, catLinear, "Filled", 45, testNow)
	seedOrders(t, s, k, catLinear, "New", 5, testNow)

	p := readPage(t, s, k, clock, "/v5/execution/list", "category=linear")
	if len(p.List) != 45 || p.NextPageCursor != "" {
		t.Fatalf("default limit 50: %d rows, cursor %q", len(p.List), p.NextPageCursor)
	}
	var last int64 = 1 << 62
	for _, row := range p.List {
		ts, _ := strconv.ParseInt(jstr(t, row["execTime"]), 10, 64)
		if ts > last {
			t.Fatal("not sorted by execTime descending")
		}
		last = ts
	}
	row := p.List[0]
	if !isJSONInt(row["seq"]) || !isJSONBool(row["isMaker"]) || string(row["isMaker"]) != "true" ||
		jstr(t, row["execType"]) != "Trade" || jstr(t, row["execPrice"]) != "67000.5" || jstr(t, row["execQty"]) != "0.010" ||
		jstr(t, row["feeRate"]) != "0.0002" || jstr(t, row["feeCurrency"]) != "USDT" ||
		!dec(t, row["execFee"]).Equal(decimal.RequireFromString("0.13400100")) ||
		!dec(t, row["execValue"]).Equal(decimal.RequireFromString("670.005")) {
		t.Fatalf("row %v", row)
	}
	ids, sizes := readAll(t, s, k, clock, "/v5/execution/list", "category=linear&symbol=BTCUSDT", "execId", 20)
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if fmt.Sprint(sizes) != "[20 20 5]" || len(seen) != 45 {
		t.Fatalf("pages %v, %d unique", sizes, len(seen))
	}
	// The matching order shows the fee.
	o := readPage(t, s, k, clock, "/v5/order/history", "category=linear&limit=1")
	if jstr(t, o.List[0]["cumExecFee"]) != "0.134001" || !strings.Contains(string(o.List[0]["cumFeeDetail"]), `"USDT":"0.134001"`) {
		t.Fatalf("order fee %v", o.List[0])
	}

	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/execution/list", "category=linear&limit=101"), 10001)
	wantCode(t, signedGet(t, s, k, clock.ms(), "/v5/execution/list", "category=linear&startTime=0&endTime=604800001"), 10001)
	if p := readPage(t, s, k, clock, "/v5/execution/list", "category=linear&limit=100&endTime="+strconv.FormatInt(testNow-10_000, 10)); len(p.List) != 35 {
		t.Fatalf("only end: %d rows", len(p.List))
	}
	if p := readPage(t, s, k, clock, "/v5/execution/list", "category=linear&execType=Funding"); len(p.List) != 0 {
		t.Fatalf("execType filter: %d rows", len(p.List))
	}
	if p := readPage(t, s, k, clock, "/v5/execution/list", "category=spot"); len(p.List) != 0 {
		t.Fatalf("spot: %d rows", len(p.List))
	}
}

func TestAccountReadsWithReadOnlyKey(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := createKey(t, s, `{"read_only": true, "permissions": {"ContractTrade": ["Position"]}}`)
	seed(t, s, k, "balances", `{"USDT": "5"}`)
	for _, pq := range [][2]string{
		{"/v5/account/wallet-balance", "accountType=UNIFIED"},
		{"/v5/position/list", "category=linear&settleCoin=USDT"},
		{"/v5/order/realtime", "category=linear&settleCoin=USDT"},
		{"/v5/order/history", "category=linear"},
		{"/v5/execution/list", "category=spot"},
	} {
		mustOK(t, signedGet(t, s, k, clock.ms(), pq[0], pq[1]))
	}
}

func TestAccountTestEndpointsLoopbackOnly(t *testing.T) {
	s := newTestSim(t, 3, newClock(testNow))
	k := s.DefaultKey()
	for _, what := range []string{"balances", "positions", "orders"} {
		req := httptest.NewRequest(http.MethodPost, "/sim/accounts/"+k.APIKey+"/"+what, strings.NewReader(`[]`))
		req.RemoteAddr = "192.0.2.7:4444"
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("%s from a remote address: HTTP %d", what, rec.Code)
		}
	}
}
