package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func (te *tradeEnv) cancelAllOrders(t testing.TB, key string, dry bool) (*messages.CancelAllAnswer, *messages.Error) {
	t.Helper()
	res, err := te.askUser(context.Background(), te.user, &userCommand{ctx: context.Background(), origin: agentOrigin,
		cmd: &messages.CancelAllCommand{User: te.user, Args: messages.CancelAllArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", IdempotencyKey: key, DryRun: dry}}})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("cancel_all_orders: %v", err)
		}
		return nil, e
	}
	return res.(*messages.CancelAllAnswer), nil
}

// cancel_all_orders reads the open orders, cancels each by id (under the
// kill switch too), counts the ones this server did not place, and a key
// replays the whole answer.
func TestCancelAllOrders(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	// waitStream's probe orders are open too; cancel them first.
	if _, e := te.cancelAllOrders(t, "", false); e != nil {
		t.Fatal(e)
	}
	for _, p := range []string{"30000", "30000.1"} {
		if _, e := te.place(t, limitArgs("0.01", p)); e != nil {
			t.Fatal(e)
		}
	}
	if _, err := te.outside(t).CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.01"), Price: decimal.RequireFromString("29000"), OrderLinkID: "by-hand-1"}); err != nil {
		t.Fatal(err)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	prev, e := te.cancelAllOrders(t, "all-1", true)
	if e != nil || prev.Status != messages.AnswerPreview || prev.Count != 3 || prev.ExternalCount != 1 {
		t.Fatalf("preview: %+v %v", prev, e)
	}
	ans, e := te.cancelAllOrders(t, "all-1", false)
	if e != nil || ans.Status != "done" || ans.Count != 3 || ans.ExternalCount != 1 || ans.HasMore {
		t.Fatalf("cancel all: %+v %v", ans, e)
	}
	for _, r := range ans.Orders {
		if r.Status != "cancelled" {
			t.Fatalf("row %+v", r)
		}
		if (r.Origin == "system") != (r.ClientOrderID != "") {
			t.Fatalf("origin and client id disagree: %+v", r)
		}
	}
	rep, e := te.cancelAllOrders(t, "all-1", false)
	if e != nil || rep.ResultSource != messages.ResultSourceReplay || rep.Count != 3 {
		t.Fatalf("replay: %+v %v", rep, e)
	}
	again, e := te.cancelAllOrders(t, "", false)
	if e != nil || again.Count != 0 {
		t.Fatalf("nothing left: %+v %v", again, e)
	}
}
