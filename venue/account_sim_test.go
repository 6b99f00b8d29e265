package venue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/shopspring/decimal"
)

// testClock is a settable clock shared by the simulator and the client.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// accountSim is a simulator on loopback with a pinned clock and a counter
// of /v5/ requests.
type accountSim struct {
	sim   *sim.Sim
	url   string
	clock *testClock
	hits  atomic.Int32
}

// simNow is 2024-06-01T12:34:56.789Z.
var simNow = time.UnixMilli(1717245296789).UTC()

func startAccountSim(t *testing.T) *accountSim {
	t.Helper()
	a := &accountSim{clock: &testClock{t: simNow}}
	a.sim = sim.New(sim.Config{Seed: 11, Now: a.clock.Now})
	h := a.sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v5/") {
			a.hits.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// client returns a client for key on the simulator's clock, without retry
// waits.
func (a *accountSim) client(t *testing.T, key sim.Key) *venue.Client {
	t.Helper()
	c, err := venue.NewClient(venue.Config{BaseURL: a.url, APIKey: key.APIKey, APISecret: key.APISecret,
		Now: a.clock.Now, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// post calls a /sim/ test endpoint and decodes the answer into out (if
// non-nil).
func (a *accountSim) post(t *testing.T, path, body string, out any) {
	t.Helper()
	resp, err := http.Post(a.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d: %s", path, resp.StatusCode, buf.String())
	}
	if out != nil {
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			t.Fatal(err)
		}
	}
}

func (a *accountSim) seedOrders(t *testing.T, key sim.Key, items []string) []string {
	t.Helper()
	var out []struct {
		OrderID string `json:"orderId"`
	}
	a.post(t, "/sim/accounts/"+key.APIKey+"/orders", "["+strings.Join(items, ",")+"]", &out)
	ids := make([]string, len(out))
	for i, o := range out {
		ids[i] = o.OrderID
	}
	return ids
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestSimAccountReads(t *testing.T) {
	a := startAccountSim(t)
	key := a.sim.DefaultKey()
	c := a.client(t, key)
	ctx := context.Background()
	a.post(t, "/sim/accounts/"+key.APIKey+"/balances", `{"USDT": "10000", "BTC": "0.5"}`, nil)
	a.post(t, "/sim/accounts/"+key.APIKey+"/positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "67200"}]`, nil)
	nowMs := simNow.UnixMilli()
	ids := a.seedOrders(t, key, []string{
		fmt.Sprintf(`{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.002", "price": "60000", "orderLinkId": "gx-open-1", "createdTime": %d}`, nowMs-1000),
		fmt.Sprintf(`{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Market", "qty": "0.001", "status": "Filled", "avgPrice": "67100.5", "orderLinkId": "gx-filled-1", "createdTime": %d}`, nowMs-2000),
	})

	info, err := c.QueryAPIKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.ReadOnly || !slices.Equal(info.Permissions["ContractTrade"], []string{"Order", "Position"}) ||
		!slices.Equal(info.Permissions["Spot"], []string{"SpotTrade"}) || info.UID == "" || info.ExpiresAt.IsZero() {
		t.Fatalf("key info %+v", info)
	}

	wb, err := c.WalletBalance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if wb.AccountType != "UNIFIED" || len(wb.Coins) != 2 || wb.Coins[0].Coin != "BTC" || wb.Coins[1].Coin != "USDT" {
		t.Fatalf("wallet %+v", wb)
	}
	if !wb.Coins[1].WalletBalance.Equal(dec("10000")) || !wb.Coins[0].WalletBalance.Equal(dec("0.5")) ||
		!wb.TotalEquity.Equal(wb.Coins[0].UsdValue.Add(wb.Coins[1].UsdValue)) ||
		!wb.Coins[1].Equity.Equal(wb.Coins[1].WalletBalance.Add(wb.Coins[1].UnrealisedPnl)) {
		t.Fatalf("wallet totals %+v", wb)
	}

	pos, err := c.Positions(ctx, venue.PositionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pos.Items) != 1 || pos.NextCursor != "" {
		t.Fatalf("positions %+v", pos)
	}
	p := pos.Items[0]
	if p.Symbol != "BTCUSDT" || p.Side != "Buy" || !p.Size.Equal(dec("0.01")) || !p.AvgPrice.Equal(dec("67200")) ||
		p.PositionIdx != 0 || !p.Leverage.Equal(dec("10")) || !p.MarkPrice.IsPositive() ||
		!p.UnrealisedPnl.Equal(p.MarkPrice.Sub(p.AvgPrice).Mul(p.Size)) || !p.UnrealisedPnl.Equal(wb.Coins[1].UnrealisedPnl) {
		t.Fatalf("position %+v", p)
	}
	flat, err := c.Positions(ctx, venue.PositionQuery{Symbol: "ETHUSDT"})
	if err != nil {
		t.Fatal(err)
	}
	if len(flat.Items) != 1 || flat.Items[0].Side != "" || !flat.Items[0].Size.IsZero() || !flat.Items[0].MarkPrice.IsPositive() {
		t.Fatalf("flat %+v", flat)
	}

	open, err := c.OpenOrders(ctx, venue.OrderQuery{Category: messages.CategoryLinear})
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Items) != 1 || open.Items[0].OrderID != ids[0] || open.Items[0].OrderLinkID != "gx-open-1" ||
		open.Items[0].Status != "New" || !open.Items[0].LeavesQty.Equal(dec("0.002")) || !open.Items[0].Price.Equal(dec("60000")) ||
		!open.Items[0].CreatedTime.Equal(simNow.Add(-time.Second)) {
		t.Fatalf("open orders %+v", open)
	}
	byLink, err := c.OpenOrders(ctx, venue.OrderQuery{Category: messages.CategoryLinear, OrderLinkID: "gx-filled-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(byLink.Items) != 1 || byLink.Items[0].Status != "Filled" {
		t.Fatalf("lookup of a just-filled order by client id: %+v", byLink)
	}

	hist, err := c.OrderHistory(ctx, venue.HistoryQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Items) != 1 || hist.Items[0].OrderID != ids[1] || hist.Items[0].Status != "Filled" ||
		!hist.Items[0].AvgPrice.Equal(dec("67100.5")) || !hist.Items[0].CumExecQty.Equal(dec("0.001")) ||
		!hist.Items[0].CumExecValue.Equal(dec("67.1005")) || !hist.Items[0].LeavesQty.IsZero() {
		t.Fatalf("history %+v", hist)
	}

	ex, err := c.Executions(ctx, venue.HistoryQuery{Category: messages.CategoryLinear})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Items) != 1 {
		t.Fatalf("executions %+v", ex)
	}
	e := ex.Items[0]
	if e.OrderID != ids[1] || e.OrderLinkID != "gx-filled-1" || e.Side != "Sell" || e.ExecType != "Trade" || e.IsMaker ||
		!e.ExecQty.Equal(dec("0.001")) || !e.ExecPrice.Equal(dec("67100.5")) || !e.FeeRate.Equal(dec("0.00055")) ||
		!e.ExecFee.Equal(e.ExecValue.Mul(e.FeeRate).Round(8)) || e.FeeCurrency != "USDT" || !e.ExecTime.Equal(simNow.Add(-2*time.Second)) {
		t.Fatalf("execution %+v", e)
	}
}

// pageAll reads every page with limit 20 and returns the ids and page sizes.
func pageAll(t *testing.T, read func(cursor string) ([]string, string, error)) (ids []string, sizes []int) {
	t.Helper()
	cursor := ""
	for range 10 {
		got, next, err := read(cursor)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
		sizes = append(sizes, len(got))
		if next == "" {
			return ids, sizes
		}
		cursor = next
	}
	t.Fatal("pages never end")
	return nil, nil
}

func checkPages(t *testing.T, name string, ids []string, sizes []int, want []string) {
	t.Helper()
	if fmt.Sprint(sizes) != "[20 20 5]" {
		t.Errorf("%s: page sizes %v, want [20 20 5]", name, sizes)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("%s: %s repeated", name, id)
		}
		seen[id] = true
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("%s: %s missing", name, id)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%s: %d ids, want %d", name, len(seen), len(want))
	}
}

func TestSimAccountPagination(t *testing.T) {
	a := startAccountSim(t)
	key := a.sim.DefaultKey()
	c := a.client(t, key)
	ctx := context.Background()
	nowMs := simNow.UnixMilli()
	var openItems, filledItems []string
	for i := range 45 {
		// Some share a createdTime, so ties must page correctly too.
		ms := nowMs - int64(i/3)*1000
		openItems = append(openItems, fmt.Sprintf(`{"category": "linear", "symbol": "ETHUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "3000", "createdTime": %d}`, ms))
		filledItems = append(filledItems, fmt.Sprintf(`{"category": "spot", "symbol": "SOLUSDT", "side": "Sell", "orderType": "Limit", "qty": "1", "price": "150", "status": "Filled", "createdTime": %d}`, ms-3600_000))
	}
	openIDs := a.seedOrders(t, key, openItems)
	filledIDs := a.seedOrders(t, key, filledItems)

	ids, sizes := pageAll(t, func(cur string) ([]string, string, error) {
		p, err := c.OpenOrders(ctx, venue.OrderQuery{Category: messages.CategoryLinear, Limit: 20, Cursor: cur})
		var out []string
		for _, o := range p.Items {
			out = append(out, o.OrderID)
		}
		return out, p.NextCursor, err
	})
	checkPages(t, "open orders", ids, sizes, openIDs)

	ids, sizes = pageAll(t, func(cur string) ([]string, string, error) {
		p, err := c.OrderHistory(ctx, venue.HistoryQuery{Category: messages.CategorySpot, Limit: 20, Cursor: cur})
		var out []string
		for _, o := range p.Items {
			out = append(out, o.OrderID)
		}
		return out, p.NextCursor, err
	})
	checkPages(t, "order history", ids, sizes, filledIDs)

	var execOrderIDs []string
	ids, sizes = pageAll(t, func(cur string) ([]string, string, error) {
		p, err := c.Executions(ctx, venue.HistoryQuery{Category: messages.CategorySpot, Symbol: "SOLUSDT", Limit: 20, Cursor: cur})
		var out []string
		for _, e := range p.Items {
			out = append(out, e.ExecID)
			execOrderIDs = append(execOrderIDs, e.OrderID)
		}
		return out, p.NextCursor, err
	})
	checkPages(t, "executions", ids, sizes, ids) // execIds unique

	checkPages(t, "executions' orders", execOrderIDs, sizes, filledIDs)

	// Positions page too: 3 open positions, limit 2.
	a.post(t, "/sim/accounts/"+key.APIKey+"/positions", `[{"symbol": "BTCUSDT", "side": "Buy", "size": "0.01", "avgPrice": "67200"},
		{"symbol": "ETHUSDT", "side": "Sell", "size": "1", "avgPrice": "3500"}, {"symbol": "SOLUSDT", "side": "Buy", "size": "3", "avgPrice": "150"}]`, nil)
	p1, err := c.Positions(ctx, venue.PositionQuery{Limit: 2})
	if err != nil || len(p1.Items) != 2 || p1.NextCursor == "" {
		t.Fatalf("positions page 1: %+v %v", p1, err)
	}
	p2, err := c.Positions(ctx, venue.PositionQuery{Limit: 2, Cursor: p1.NextCursor})
	if err != nil || len(p2.Items) != 1 || p2.Items[0].Symbol != "SOLUSDT" || p2.NextCursor != "" {
		t.Fatalf("positions page 2: %+v %v", p2, err)
	}
}

func TestSimHistoryWindow(t *testing.T) {
	a := startAccountSim(t)
	key := a.sim.DefaultKey()
	c := a.client(t, key)
	ctx := context.Background()
	day := 24 * time.Hour

	// Client side: refused before sending.
	before := a.hits.Load()
	for _, q := range []venue.HistoryQuery{
		{Category: messages.CategoryLinear, Start: simNow.Add(-8 * day), End: simNow},
		{Category: messages.CategoryLinear, Start: simNow, End: simNow.Add(-time.Second)},
	} {
		if _, err := c.OrderHistory(ctx, q); messages.CodeOf(err) != messages.CodeInvalidParams {
			t.Fatalf("order history %+v: %v", q, err)
		}
		if _, err := c.Executions(ctx, q); messages.CodeOf(err) != messages.CodeInvalidParams {
			t.Fatalf("executions %+v: %v", q, err)
		}
	}
	if n := a.hits.Load() - before; n != 0 {
		t.Fatalf("%d requests reached the simulator", n)
	}

	// Simulator side: the same rule answers 10001 (exchange_rejected).
	for _, path := range []string{venue.PathOrderHistory, venue.PathExecutionList} {
		q := venue.Query{{Key: "category", Value: "linear"},
			{Key: "startTime", Value: fmt.Sprint(simNow.Add(-8 * day).UnixMilli())},
			{Key: "endTime", Value: fmt.Sprint(simNow.UnixMilli())}}
		_, err := c.Get(ctx, path, q, true, nil)
		var e *messages.Error
		if !errors.As(err, &e) || e.Code != messages.CodeExchangeRejected || e.Details["ret_code"] != 10001 {
			t.Fatalf("%s with an 8-day window: %v", path, err)
		}
	}

	// Only start, only end and neither follow the 7-day rules.
	nowMs := simNow.UnixMilli()
	ids := a.seedOrders(t, key, []string{
		fmt.Sprintf(`{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.001", "price": "60000", "status": "Filled", "createdTime": %d}`, nowMs-10*day.Milliseconds()),
		fmt.Sprintf(`{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.001", "price": "60000", "status": "Filled", "createdTime": %d}`, nowMs-day.Milliseconds()),
	})
	old, recent := ids[0], ids[1]
	for _, tc := range []struct {
		name string
		q    venue.HistoryQuery
		want string
	}{
		{"neither", venue.HistoryQuery{}, recent},
		{"only start", venue.HistoryQuery{Start: simNow.Add(-11 * day)}, old},
		{"only end", venue.HistoryQuery{End: simNow.Add(-9 * day)}, old},
		{"both", venue.HistoryQuery{Start: simNow.Add(-2 * day), End: simNow}, recent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Category = messages.CategoryLinear
			h, err := c.OrderHistory(ctx, tc.q)
			if err != nil || len(h.Items) != 1 || h.Items[0].OrderID != tc.want {
				t.Fatalf("history %+v %v", h, err)
			}
			ex, err := c.Executions(ctx, tc.q)
			if err != nil || len(ex.Items) != 1 || ex.Items[0].OrderID != tc.want {
				t.Fatalf("executions %+v %v", ex, err)
			}
		})
	}
}

func TestSimHedgeModeUnsupported(t *testing.T) {
	a := startAccountSim(t)
	key := a.sim.DefaultKey()
	c := a.client(t, key)
	a.post(t, "/sim/accounts/"+key.APIKey+"/positions", `[{"symbol": "BTCUSDT", "side": "Sell", "size": "0.01", "avgPrice": "67200", "positionIdx": 2}]`, nil)
	for _, q := range []venue.PositionQuery{{}, {Symbol: "BTCUSDT"}} {
		_, err := c.Positions(context.Background(), q)
		e := messages.AsError(err)
		if e == nil || e.Code != messages.CodeUnsupportedPositionMode || !strings.Contains(e.NextStep, "one-way") {
			t.Fatalf("%+v: %v", q, err)
		}
	}
	// Another symbol in one-way mode still reads.
	if _, err := c.Positions(context.Background(), venue.PositionQuery{Symbol: "ETHUSDT"}); err != nil {
		t.Fatal(err)
	}
}

func TestSimAccountRateLimited(t *testing.T) {
	a := startAccountSim(t)
	key := a.sim.DefaultKey()
	c := a.client(t, key)
	a.post(t, "/sim/faults", `{"kind": "rate_limit", "path": "/v5/account/wallet-balance", "count": 1}`, nil)
	before := a.hits.Load()
	_, err := c.WalletBalance(context.Background())
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodeRateLimited || e.RetryAfterS < 1 {
		t.Fatalf("rate limit: %+v", e)
	}
	if n := a.hits.Load() - before; n != 1 {
		t.Fatalf("rate-limited read sent %d times", n)
	}
	if _, err := c.WalletBalance(context.Background()); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
}

func TestSimAccountUnknownKey(t *testing.T) {
	a := startAccountSim(t)
	c := a.client(t, sim.Key{APIKey: "NOSUCHKEY12345", APISecret: "whatever"})
	ctx := context.Background()
	_, err1 := c.WalletBalance(ctx)
	_, err2 := c.Positions(ctx, venue.PositionQuery{})
	_, err3 := c.QueryAPIKey(ctx)
	for i, err := range []error{err1, err2, err3} {
		if messages.CodeOf(err) != messages.CodeExchangeCredentialsInvalid {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

func TestSimReadOnlyKeyReads(t *testing.T) {
	a := startAccountSim(t)
	var k struct {
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
	}
	a.post(t, "/sim/keys", `{"read_only": true, "permissions": {"ContractTrade": ["Order","Position"], "Wallet": ["AccountTransfer"]}}`, &k)
	key := sim.Key{APIKey: k.APIKey, APISecret: k.APISecret}
	c := a.client(t, key)
	ctx := context.Background()
	a.post(t, "/sim/accounts/"+key.APIKey+"/balances", `{"USDT": "250"}`, nil)

	info, err := c.QueryAPIKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.ReadOnly || !slices.Equal(info.Permissions["Wallet"], []string{"AccountTransfer"}) ||
		len(info.Permissions["Spot"]) != 0 {
		t.Fatalf("key info %+v", info)
	}
	wb, err := c.WalletBalance(ctx)
	if err != nil || len(wb.Coins) != 1 || !wb.TotalEquity.Equal(dec("250")) {
		t.Fatalf("wallet %+v %v", wb, err)
	}
	if _, err := c.Positions(ctx, venue.PositionQuery{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenOrders(ctx, venue.OrderQuery{Category: messages.CategorySpot}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OrderHistory(ctx, venue.HistoryQuery{Category: messages.CategoryLinear}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Executions(ctx, venue.HistoryQuery{Category: messages.CategoryLinear}); err != nil {
		t.Fatal(err)
	}
}

func TestSimCursorNotIssuedIsRefused(t *testing.T) {
	a := startAccountSim(t)
	c := a.client(t, a.sim.DefaultKey())
	// A cursor full of reserved characters reaches the simulator intact
	// (the signature verifies) and is refused as not issued by it.
	_, err := c.OpenOrders(context.Background(), venue.OrderQuery{Category: messages.CategoryLinear, Cursor: "a&b=c d ü€/+%"})
	e := messages.AsError(err)
	if e.Code != messages.CodeExchangeRejected || e.Details["ret_code"] != 10001 {
		t.Fatalf("foreign cursor: %+v", e)
	}
}
