package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func (te *tradeEnv) amend(t testing.TB, orderID, qty, price string) (*messages.AmendAnswer, *messages.Error) {
	t.Helper()
	a := messages.AmendOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: orderID}
	if qty != "" {
		a.Qty = decimal.NewNullDecimal(decimal.RequireFromString(qty))
	}
	if price != "" {
		a.Price = decimal.NewNullDecimal(decimal.RequireFromString(price))
	}
	res, err := te.askUser(context.Background(), te.user, &userCommand{ctx: context.Background(), origin: agentOrigin,
		cmd: &messages.AmendOrderCommand{User: te.user, Args: a}})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("amend_order: %v", err)
		}
		return nil, e
	}
	return res.(*messages.AmendAnswer), nil
}

// An amend to a better price or a smaller size reduces risk and goes
// through the kill switch; a larger size is risk-increasing: blocked by
// the kill switch and held to max_order_notional_usdt on the whole order;
// an off-tick price names the nearest valid prices. Amended only when the
// order shows it.
func TestAmendOrderByRiskDirection(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxOrderNotionalUSDT: dec("400")})
	own, e := te.place(t, limitArgs("0.01", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	if _, e := te.amend(t, own.OrderID, "0.02", ""); e == nil || e.Details["limit"] != "max_order_notional_usdt" || e.Details["allowed"] != "400" {
		t.Fatalf("larger than the per-order limit: %v", e)
	}
	if _, e := te.amend(t, own.OrderID, "", "29000.05"); e == nil || e.Details["rule"] != "tick_size" {
		t.Fatalf("off tick: %v", e)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := te.amend(t, own.OrderID, "", "30500"); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("a worse price under the kill switch: %v", e)
	}
	if _, e := te.amend(t, own.OrderID, "0.012", ""); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("a larger size under the kill switch: %v", e)
	}
	ans, e := te.amend(t, own.OrderID, "0.005", "29000")
	if e != nil || ans.Status != "amended" || ans.RiskIncreasing || !ans.Qty.Equal(decimal.RequireFromString("0.005")) ||
		ans.Origin != "system" || ans.ClientOrderID != own.ClientOrderID {
		t.Fatalf("smaller and cheaper under the kill switch: %+v %v", ans, e)
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
}
