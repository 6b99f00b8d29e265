package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func (te *tradeEnv) cancel(t testing.TB, a messages.CancelOrderArgs) (*messages.CancelAnswer, *messages.Error) {
	t.Helper()
	res, err := te.askUser(context.Background(), te.user, &tradingAsk{ctx: context.Background(), tool: cancelOrderTool, args: a, origin: agentOrigin})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("cancel: %v", err)
		}
		return nil, e
	}
	ans, ok := res.(*messages.CancelAnswer)
	if !ok {
		t.Fatalf("answer %T", res)
	}
	return ans, nil
}

func cancelArgs(orderID string) messages.CancelOrderArgs {
	return messages.CancelOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: orderID}
}

// A cancel goes through the kill switch (it reduces risk), is cancelled
// only when the order shows it, and marks the order's origin: the
// server's own, or external (placed by hand) without its client id.
func TestCancelOrderOriginAndKillSwitch(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	own, e := te.place(t, limitArgs("0.01", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	ext, err := te.outside(t).CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.01"), Price: decimal.RequireFromString("29000"), OrderLinkID: "gx-forged-1"})
	if err != nil {
		t.Fatal(err)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)

	dry := cancelArgs(own.OrderID)
	dry.DryRun = true
	prev, e := te.cancel(t, dry)
	if e != nil || prev.Status != messages.AnswerPreview || prev.Origin != "system" {
		t.Fatalf("dry run: %+v %v", prev, e)
	}
	c, e := te.cancel(t, cancelArgs(own.OrderID))
	if e != nil || c.Status != "cancelled" || c.Origin != "system" || c.ClientOrderID != own.ClientOrderID || c.OrderStatus != "Cancelled" {
		t.Fatalf("own order: %+v %v", c, e)
	}
	// An order whose id only looks like ours is external.
	x, e := te.cancel(t, cancelArgs(ext.OrderID))
	if e != nil || x.Status != "cancelled" || x.Origin != "external" || x.ClientOrderID != "" {
		t.Fatalf("external order: %+v %v", x, e)
	}
	if _, e := te.cancel(t, cancelArgs(own.OrderID)); e == nil || e.Code != messages.CodeNotFound {
		t.Fatalf("cancelling a cancelled order: %v", e)
	}
	if _, e := te.cancel(t, messages.CancelOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: "../../x"}); e == nil || e.Code != messages.CodeInvalidParams {
		t.Fatalf("bad order id: %v", e)
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 3 {
		t.Fatalf("%d attempts, want 3 (one place, two cancels)", n)
	}
}

// A cancel with a key is answered again from the journal.
func TestCancelOrderIdempotent(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	own, e := te.place(t, limitArgs("0.01", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	a := cancelArgs(own.OrderID)
	a.IdempotencyKey = "c-1"
	first, e := te.cancel(t, a)
	if e != nil || first.Status != "cancelled" {
		t.Fatalf("first: %+v %v", first, e)
	}
	again, e := te.cancel(t, a)
	if e != nil || again.ResultSource != messages.ResultSourceReplay || again.Status != "cancelled" {
		t.Fatalf("replay: %+v %v", again, e)
	}
}
