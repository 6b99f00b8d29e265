package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/shopspring/decimal"
)

// tradeSim is a simulator with a funded default key and helpers that
// trade through the real REST handler with signed requests.
type tradeSim struct {
	t     *testing.T
	s     *Sim
	clock *fakeClock
	k     Key
}

func newTradeSim(t *testing.T, seed int64, balances map[string]string) *tradeSim {
	t.Helper()
	clock := newClock(testNow)
	start := map[string]decimal.Decimal{}
	for c, v := range balances {
		start[c] = decimal.RequireFromString(v)
	}
	s := New(Config{Seed: seed, Now: clock.Now, StartingBalances: start})
	t.Cleanup(s.shutdown)
	return &tradeSim{t: t, s: s, clock: clock, k: s.DefaultKey()}
}

// post sends a signed POST with key k.
func (ts *tradeSim) postAs(k Key, path, body string) result {
	ts.t.Helper()
	return do(ts.t, ts.s, http.MethodPost, path, []byte(body), signedHeader(k, ts.clock.ms(), "5000", body))
}

func (ts *tradeSim) post(path, body string) result {
	ts.t.Helper()
	return ts.postAs(ts.k, path, body)
}

func (ts *tradeSim) get(path string, q url.Values) result {
	ts.t.Helper()
	return signedGet(ts.t, ts.s, ts.k, ts.clock.ms(), path, q.Encode())
}

// create places an order and returns its id; it fails the test unless
// the answer is retCode 0.
func (ts *tradeSim) create(body string) string {
	ts.t.Helper()
	r := ts.post("/v5/order/create", body)
	mustOK(ts.t, r)
	var res orderIDResult
	decodeInto(ts.t, r.result, &res)
	if res.OrderID == "" {
		ts.t.Fatalf("create answered no orderId: %s", r.body)
	}
	return res.OrderID
}

// order reads one order by id through /v5/order/realtime (which also
// returns recently closed orders when asked by id).
func (ts *tradeSim) order(category, id string) map[string]json.RawMessage {
	ts.t.Helper()
	r := ts.get("/v5/order/realtime", url.Values{"category": {category}, "orderId": {id}})
	mustOK(ts.t, r)
	var page struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(ts.t, r.result, &page)
	if len(page.List) != 1 {
		ts.t.Fatalf("order %s: %d rows: %s", id, len(page.List), r.body)
	}
	return page.List[0]
}

// position reads the linear position row of symbol.
func (ts *tradeSim) position(symbol string) map[string]json.RawMessage {
	ts.t.Helper()
	r := ts.get("/v5/position/list", url.Values{"category": {"linear"}, "symbol": {symbol}})
	mustOK(ts.t, r)
	var page struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(ts.t, r.result, &page)
	if len(page.List) != 1 {
		ts.t.Fatalf("position %s: %s", symbol, r.body)
	}
	return page.List[0]
}

// coin reads one coin row of the wallet.
func (ts *tradeSim) coin(coin string) map[string]json.RawMessage {
	ts.t.Helper()
	r := ts.get("/v5/account/wallet-balance", url.Values{"accountType": {"UNIFIED"}, "coin": {coin}})
	mustOK(ts.t, r)
	var res struct {
		List []struct {
			Coin []map[string]json.RawMessage `json:"coin"`
		} `json:"list"`
	}
	decodeInto(ts.t, r.result, &res)
	if len(res.List) != 1 || len(res.List[0].Coin) != 1 {
		ts.t.Fatalf("wallet %s: %s", coin, r.body)
	}
	return res.List[0].Coin[0]
}

// executions lists the fills of an order, newest first.
func (ts *tradeSim) executions(category, id string) []map[string]json.RawMessage {
	ts.t.Helper()
	r := ts.get("/v5/execution/list", url.Values{"category": {category}, "orderId": {id}})
	mustOK(ts.t, r)
	var page struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(ts.t, r.result, &page)
	return page.List
}

// movePrice calls POST /sim/price.
func (ts *tradeSim) movePrice(category, symbol, price string) {
	ts.t.Helper()
	r := do(ts.t, ts.s, http.MethodPost, "/sim/price", []byte(`{"category":"`+category+`","symbol":"`+symbol+`","price":"`+price+`"}`), nil)
	if r.status != http.StatusOK {
		ts.t.Fatalf("POST /sim/price: HTTP %d %s", r.status, r.body)
	}
}

// book reads the public order book.
func (ts *tradeSim) book(category, symbol string) (bids, asks [][2]decimal.Decimal) {
	ts.t.Helper()
	r := get(ts.t, ts.s, "/v5/market/orderbook?category="+category+"&symbol="+symbol+"&limit=200")
	mustOK(ts.t, r)
	var res struct {
		B [][2]string `json:"b"`
		A [][2]string `json:"a"`
	}
	decodeInto(ts.t, r.result, &res)
	conv := func(in [][2]string) [][2]decimal.Decimal {
		out := make([][2]decimal.Decimal, len(in))
		for i, l := range in {
			out[i] = [2]decimal.Decimal{decimal.RequireFromString(l[0]), decimal.RequireFromString(l[1])}
		}
		return out
	}
	return conv(res.B), conv(res.A)
}

func field(t *testing.T, m map[string]json.RawMessage, k string) string {
	t.Helper()
	raw, ok := m[k]
	if !ok {
		t.Fatalf("no field %q in %v", k, keysOf(m))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw)
	}
	return s
}

// wantDec fails unless field k of m equals want as a decimal.
func wantDec(t *testing.T, what string, m map[string]json.RawMessage, k, want string) {
	t.Helper()
	got := field(t, m, k)
	g, err := decimal.NewFromString(got)
	if err != nil || !g.Equal(decimal.RequireFromString(want)) {
		t.Errorf("%s %s = %q, want %s", what, k, got, want)
	}
}

func wantField(t *testing.T, what string, m map[string]json.RawMessage, k, want string) {
	t.Helper()
	if got := field(t, m, k); got != want {
		t.Errorf("%s %s = %q, want %q", what, k, got, want)
	}
}

func decimalMin(a, b decimal.Decimal) decimal.Decimal { return decimal.Min(a, b) }
