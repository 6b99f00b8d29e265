package sim

import (
	"testing"

	"github.com/shopspring/decimal"
)

// Real clients on the further paths (docs/simulator.md): ccxt's
// fetchFundingRateHistory, fetchOpenInterest, createOrders, fetchLedger and
// watchOHLCV, and bybit-api for batch amend and cancel, closed PnL, the
// transaction log, risk limits, mark and index klines, switch-mode and the
// ticker and kline topics. Each step's report is checked against the
// simulator's own state, as in clients_test.go.

// walletUSDT reads the default key's USDT wallet balance.
func walletUSDT(t *testing.T, s *Sim) decimal.Decimal {
	t.Helper()
	r := signedGet(t, s, s.DefaultKey(), s.now().UnixMilli(), "/v5/account/wallet-balance", "accountType=UNIFIED&coin=USDT")
	mustOK(t, r)
	var res struct {
		List []struct {
			Coin []struct {
				WalletBalance string `json:"walletBalance"`
			} `json:"coin"`
		} `json:"list"`
	}
	decodeInto(t, r.result, &res)
	if len(res.List) != 1 || len(res.List[0].Coin) != 1 {
		t.Fatalf("wallet: %s", r.result)
	}
	return decimal.RequireFromString(res.List[0].Coin[0].WalletBalance)
}

func TestClientCcxtPaths(t *testing.T) {
	dir := clientModules(t)
	rep, s, _ := runClient(t, dir, "ccxt-paths")
	requireSteps(t, rep)
	in := s.catalog.get(catLinear, "BTCUSDT")

	var funding struct {
		Count      int     `json:"count"`
		Timestamps []int64 `json:"timestamps"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["fetchFundingRateHistory"]), &funding)
	period := int64(fundingPeriod) * 1000
	if funding.Count != 5 {
		t.Errorf("ccxt fetchFundingRateHistory(limit 5) returned %d rates", funding.Count)
	}
	for i, ts := range funding.Timestamps {
		if ts%period != 0 || ts > s.now().UnixMilli() || (i > 0 && ts != funding.Timestamps[i-1]+period) {
			t.Errorf("ccxt funding timestamps %v are not consecutive past settlements", funding.Timestamps)
			break
		}
	}

	oiTs := mustInt(t, rep.Steps["fetchOpenInterest"]["timestamp"])
	if got, want := decimal.RequireFromString(rep.str(t, "fetchOpenInterest", "amount")), s.model.openInterest(in, oiTs/1000); !got.Equal(want) {
		t.Errorf("ccxt fetchOpenInterest %s at %d, the model says %s", got, oiTs, want)
	}

	var created struct {
		IDs []string `json:"ids"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["createOrders"]), &created)
	orders := simOrders(t, s)
	if len(created.IDs) != 3 {
		t.Fatalf("ccxt createOrders returned %v", created.IDs)
	}
	for _, id := range created.IDs {
		if _, ok := orders[id]; !ok {
			t.Errorf("ccxt createOrders id %q not in /sim/orders", id)
		}
	}

	s.mu.Lock()
	fills := len(s.accounts[0].ledger.execs)
	s.mu.Unlock()
	if n := int(mustInt(t, rep.Steps["fetchLedger"]["count"])); n != fills {
		t.Errorf("ccxt fetchLedger returned %d entries for %d fills", n, fills)
	}
	if after := decimal.RequireFromString(rep.str(t, "fetchLedger", "after")); !after.Equal(walletUSDT(t, s)) {
		t.Errorf("ccxt fetchLedger newest balance %s, wallet %s", after, walletUSDT(t, s))
	}

	ohlcvTs := mustInt(t, rep.Steps["watchOHLCV"]["timestamp"])
	if ohlcvTs%msMinute != 0 || ohlcvTs > s.now().UnixMilli() || s.now().UnixMilli()-ohlcvTs > 5*msMinute {
		t.Errorf("ccxt watchOHLCV candle at %d, now %d", ohlcvTs, s.now().UnixMilli())
	}
	if c, err := decimal.NewFromString(rep.str(t, "watchOHLCV", "close")); err != nil || !c.IsPositive() {
		t.Errorf("ccxt watchOHLCV close %q", rep.str(t, "watchOHLCV", "close"))
	}
}

func TestClientBybitAPIPaths(t *testing.T) {
	dir := clientModules(t)
	rep, s, _ := runClient(t, dir, "bybit-api-paths")
	requireSteps(t, rep)

	var batch struct {
		IDs   []string `json:"ids"`
		Codes []int    `json:"codes"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["batchSubmitOrders"]), &batch)
	orders := simOrders(t, s)
	if len(batch.Codes) != 3 || batch.Codes[0] != 0 || batch.Codes[1] != 0 || batch.Codes[2] != codeDuplicateLink || batch.IDs[2] != "" {
		t.Errorf("bybit-api batchSubmitOrders %+v, want two accepted and the duplicate link refused", batch)
	}
	for _, id := range batch.IDs[:2] {
		if o, ok := orders[id]; !ok || o.OrderType != "Limit" {
			t.Errorf("batch order %s not in /sim/orders", id)
		}
	}
	var amend struct {
		Codes []int    `json:"codes"`
		Qtys  []string `json:"qtys"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["batchAmendOrders"]), &amend)
	if len(amend.Codes) != 2 || amend.Codes[0] != 0 || amend.Codes[1] != 0 || len(amend.Qtys) != 2 || amend.Qtys[0] != "ba-1:0.002" || amend.Qtys[1] != "ba-2:0.003" {
		t.Errorf("bybit-api batchAmendOrders %+v", amend)
	}
	var cancel struct {
		Codes []int    `json:"codes"`
		IDs   []string `json:"ids"`
		Open  int      `json:"open"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["batchCancelOrders"]), &cancel)
	if len(cancel.Codes) != 2 || cancel.Codes[0] != 0 || cancel.Codes[1] != 0 || cancel.Open != 0 || cancel.IDs[0] != batch.IDs[0] {
		t.Errorf("bybit-api batchCancelOrders %+v", cancel)
	}

	// The round trip (buy 0.003, close 0.003) is one closed PnL record,
	// and it is what the wallet gained or lost.
	wallet := walletUSDT(t, s)
	var closed struct {
		CloseID string `json:"closeId"`
		Rows    []struct {
			OrderID, ClosedSize, ClosedPnl string
		} `json:"rows"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["getClosedPnL"]), &closed)
	if len(closed.Rows) != 1 || closed.Rows[0].OrderID != closed.CloseID || closed.Rows[0].ClosedSize != "0.003" {
		t.Fatalf("bybit-api getClosedPnL %+v", closed)
	}
	if pnl := decimal.RequireFromString(closed.Rows[0].ClosedPnl); pnl.Sub(wallet.Sub(clientStartUSDT)).Abs().GreaterThan(decimal.RequireFromString("0.00000002")) {
		t.Errorf("closed pnl %s, the wallet moved by %s", pnl, wallet.Sub(clientStartUSDT))
	}
	if got := decimal.RequireFromString(rep.str(t, "getTransactionLog", "newestBalance")); !got.Equal(wallet) {
		t.Errorf("bybit-api getTransactionLog newest cashBalance %s, wallet %s", got, wallet)
	}
	if mm := rep.str(t, "getRiskLimit", "maintenanceMargin"); mm != maintenanceRate.String() {
		t.Errorf("bybit-api getRiskLimit maintenanceMargin %s", mm)
	}
	for _, step := range []string{"getMarkPriceKline", "getIndexPriceKline"} {
		if string(rep.Steps[step]["rows"]) != "3" || string(rep.Steps[step]["fields"]) != "5" {
			t.Errorf("bybit-api %s: %v", step, rep.Steps[step])
		}
	}
	if h, o := mustInt(t, rep.Steps["switchPositionMode"]["hedge"]), mustInt(t, rep.Steps["switchPositionMode"]["oneWay"]); h != codeHedgeNotAvail || o != codeModeNotModified {
		t.Errorf("bybit-api switchPositionMode: hedge %d, one-way %d", h, o)
	}
	var pub struct {
		Messages map[string]int `json:"messages"`
	}
	decodeInto(t, mustJSON(t, rep.Steps["wsTickersKline"]), &pub)
	for _, k := range []string{"tickers:snapshot", "tickers:delta", "kline:snapshot"} {
		if pub.Messages[k] == 0 {
			t.Errorf("bybit-api public stream: no %s message (got %v)", k, pub.Messages)
		}
	}
	if pub.Messages["tickers:snapshot"] != 1 {
		t.Errorf("bybit-api public stream: %d ticker snapshots, want one then deltas", pub.Messages["tickers:snapshot"])
	}
}
