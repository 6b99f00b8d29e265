package venue_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/shopspring/decimal"
)

// The simulator's order engine through the project's venue client: an
// order placed with Post shows in the client's decoded reads (open
// orders, history, executions, positions, wallet) with consistent
// numbers, and the engine's refusals map to stable errors.
func TestSimOrderEngineThroughClient(t *testing.T) {
	a := startAccountSim(t)
	k := a.sim.DefaultKey()
	fund, err := http.Post(a.url+"/sim/accounts/"+k.APIKey+"/balances", "application/json", strings.NewReader(`{"USDT":"50000"}`))
	if err != nil || fund.StatusCode != http.StatusOK {
		t.Fatalf("fund: %v %v", err, fund)
	}
	fund.Body.Close()
	c := a.client(t, k)
	ctx := context.Background()

	var created struct {
		OrderID     string `json:"orderId"`
		OrderLinkID string `json:"orderLinkId"`
	}
	if _, err := c.Post(ctx, "/v5/order/create", map[string]any{
		"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.020", "orderLinkId": "client-1",
	}, &created); err != nil {
		t.Fatal(err)
	}
	if created.OrderID == "" || created.OrderLinkID != "client-1" {
		t.Fatalf("create answered %+v", created)
	}
	hist, err := c.OrderHistory(ctx, venue.HistoryQuery{Category: messages.CategoryLinear, OrderLinkID: "client-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Items) != 1 || hist.Items[0].Status != "Filled" || !hist.Items[0].CumExecQty.Equal(decimal.RequireFromString("0.02")) {
		t.Fatalf("history %+v", hist.Items)
	}
	execs, err := c.Executions(ctx, venue.HistoryQuery{Category: messages.CategoryLinear, OrderID: created.OrderID})
	if err != nil {
		t.Fatal(err)
	}
	qty, value := decimal.Zero, decimal.Zero
	for _, e := range execs.Items {
		qty, value = qty.Add(e.ExecQty), value.Add(e.ExecValue)
	}
	if !qty.Equal(hist.Items[0].CumExecQty) || !value.Equal(hist.Items[0].CumExecValue) {
		t.Fatalf("executions sum to %s / %s, the order says %s / %s", qty, value, hist.Items[0].CumExecQty, hist.Items[0].CumExecValue)
	}
	pos, err := c.Positions(ctx, venue.PositionQuery{Symbol: "BTCUSDT"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pos.Items) != 1 || pos.Items[0].Side != "Buy" || !pos.Items[0].Size.Equal(qty) ||
		!pos.Items[0].AvgPrice.Equal(value.DivRound(qty, 8)) {
		t.Fatalf("position %+v", pos.Items)
	}
	if _, err := c.Post(ctx, "/v5/order/create", map[string]any{
		"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.010", "price": "50000", "orderLinkId": "client-2",
	}, &created); err != nil {
		t.Fatal(err)
	}
	open, err := c.OpenOrders(ctx, venue.OrderQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Items) != 1 || open.Items[0].OrderLinkID != "client-2" || open.Items[0].Status != "New" {
		t.Fatalf("open orders %+v", open.Items)
	}
	wb, err := c.WalletBalance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !wb.TotalWalletBalance.LessThan(decimal.NewFromInt(50000)) {
		t.Fatalf("the taker fee did not leave the wallet: %s", wb.TotalWalletBalance)
	}

	// A duplicate orderLinkId is a refusal the client reports, never a
	// second order.
	_, err = c.Post(ctx, "/v5/order/create", map[string]any{
		"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.010", "price": "50000", "orderLinkId": "client-2",
	}, &created)
	var me *messages.Error
	if !errors.As(err, &me) || !strings.Contains(me.Error(), "110072") {
		t.Fatalf("duplicate orderLinkId: %v", err)
	}
}
