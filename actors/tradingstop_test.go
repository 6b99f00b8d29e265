package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func (te *tradeEnv) stopLevels(t testing.TB, tp, sl decimal.NullDecimal) (*messages.TradingStopAnswer, *messages.Error) {
	t.Helper()
	res, err := te.askUser(context.Background(), te.user, &userCommand{ctx: context.Background(), origin: agentOrigin,
		cmd: &messages.TradingStopCommand{User: te.user, Args: messages.TradingStopArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", TakeProfit: tp, StopLoss: sl}}})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("set_trading_stop: %v", err)
		}
		return nil, e
	}
	return res.(*messages.TradingStopAnswer), nil
}

// SL/TP reduce risk: they are set under the kill switch and show on the
// position; an off-tick level names the nearest valid prices; without a
// position there is nothing to protect.
func TestSetTradingStop(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	none := decimal.NullDecimal{}
	if _, e := te.stopLevels(t, decimal.NewNullDecimal(decimal.NewFromInt(90000)), none); e == nil || e.Details["reason"] != "position_not_found" {
		t.Fatalf("without a position: %v", e)
	}
	long, e := te.place(t, marketArgs("Buy", "0.002"))
	if e != nil {
		t.Fatal(e)
	}
	tp := long.Price.Mul(decimal.RequireFromString("1.2")).Floor()
	sl := long.Price.Mul(decimal.RequireFromString("0.85")).Floor()
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := te.stopLevels(t, decimal.NewNullDecimal(tp.Add(decimal.RequireFromString("0.05"))), none); e == nil || e.Details["rule"] != "tick_size" {
		t.Fatalf("off tick: %v", e)
	}
	ans, e := te.stopLevels(t, decimal.NewNullDecimal(tp), decimal.NewNullDecimal(sl))
	if e != nil || ans.Status != "set" || ans.PositionSide != "Buy" || !ans.TakeProfit.Equal(tp) || !ans.StopLoss.Equal(sl) {
		t.Fatalf("set under the kill switch: %+v %v", ans, e)
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
}
