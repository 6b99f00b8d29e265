package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func (te *tradeEnv) closePos(t testing.TB, cat messages.Category, qty string) (*messages.OrderAnswer, *messages.Error) {
	t.Helper()
	args := messages.ClosePositionArgs{Category: cat, Symbol: "BTCUSDT"}
	if qty != "" {
		args.Qty = decimal.RequireFromString(qty)
	}
	res, err := te.askUser(context.Background(), te.user, &userCommand{ctx: context.Background(), origin: agentOrigin,
		cmd: &messages.ClosePositionCommand{User: te.user, Args: args}})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("close_position: %v", err)
		}
		return nil, e
	}
	return res.(*messages.OrderAnswer), nil
}

// close_position is a reduce-only market order cut to the position: it
// goes through the kill switch, closes part or all, and finds nothing to
// close afterwards.
func TestClosePosition(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	if _, e := te.place(t, marketArgs("Buy", "0.003")); e != nil {
		t.Fatal(e)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	part, e := te.closePos(t, messages.CategoryLinear, "0.001")
	if e != nil || part.Side != "Sell" || !part.ReduceOnly || part.SentAs != "Limit IOC" || part.FilledQty.String() != "0.001" || part.RiskIncreasing {
		t.Fatalf("partial close: %+v %v", part, e)
	}
	all, e := te.closePos(t, messages.CategoryLinear, "5")
	if e != nil || all.Qty.String() != "0.002" || all.RequestedQty.String() != "5" || all.FilledQty.String() != "0.002" {
		t.Fatalf("close the rest: %+v %v", all, e)
	}
	if _, e := te.closePos(t, messages.CategoryLinear, ""); e == nil || e.Details["reason"] != "position_not_found" {
		t.Fatalf("nothing left to close: %v", e)
	}
	if _, e := te.closePos(t, messages.CategorySpot, ""); e == nil || e.Details["reason"] != "linear_only" {
		t.Fatalf("spot: %v", e)
	}
}
