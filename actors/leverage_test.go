package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func (te *tradeEnv) setLev(cat messages.Category, lev string, key string) (any, error) {
	return te.askUser(context.Background(), te.user, &userCommand{ctx: context.Background(), origin: agentOrigin,
		cmd: &messages.SetLeverageCommand{User: te.user, Args: messages.SetLeverageArgs{Category: cat, Symbol: "BTCUSDT",
			Leverage: decimal.RequireFromString(lev), IdempotencyKey: key}}})
}

func (te *tradeEnv) leverage(t testing.TB, lev string, key string) (*messages.LeverageAnswer, *messages.Error) {
	t.Helper()
	res, err := te.setLev(messages.CategoryLinear, lev, key)
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("set_leverage: %v", err)
		}
		return nil, e
	}
	return res.(*messages.LeverageAnswer), nil
}

// Lowering the leverage reduces risk: it goes through the kill switch and
// any limit and shows on the position; raising it is refused by the kill
// switch and above max_leverage; the same value is unchanged and sends
// nothing; a key replays; spot is linear_only.
func TestSetLeverageByRiskDirection(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("8")})
	low, e := te.leverage(t, "3", "lev-1")
	if e != nil || low.Status != "set" || low.RiskIncreasing || !low.Previous.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("lowering from the venue's 10: %+v %v", low, e)
	}
	if _, e := te.leverage(t, "9", ""); e == nil || e.Details["limit"] != "max_leverage" || e.Details["allowed"] != "8" {
		t.Fatalf("raising above max_leverage: %v", e)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := te.leverage(t, "5", ""); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("raising under the kill switch: %v", e)
	}
	lower, e := te.leverage(t, "2", "")
	if e != nil || lower.Status != "set" || lower.RiskIncreasing {
		t.Fatalf("lowering under the kill switch: %+v %v", lower, e)
	}
	same, e := te.leverage(t, "2", "")
	if e != nil || same.Status != "unchanged" {
		t.Fatalf("same leverage: %+v %v", same, e)
	}
	rep, e := te.leverage(t, "3.0", "lev-1")
	if e != nil || rep.ResultSource != messages.ResultSourceReplay || rep.Status != "set" {
		t.Fatalf("replay: %+v %v", rep, e)
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
	// An unknown outcome is settled by reading the position, never resent.
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser)
	te.fault(t, "drop_response", "/v5/position/set-leverage")
	up, e := te.leverage(t, "4", "")
	if e != nil || up.Status != "set" || up.ResultSource != messages.ResultSourceReconnaissance || !up.RiskIncreasing {
		t.Fatalf("dropped answer: %+v %v", up, e)
	}
	te.fault(t, "http_5xx", "/v5/position/set-leverage")
	if _, e := te.leverage(t, "5", ""); e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["reconnaissance"] != "not_found" {
		t.Fatalf("5xx not applied: %v", e)
	}
	if _, err := te.setLev(messages.CategorySpot, "2", ""); messages.AsError(err) == nil || messages.AsError(err).Details["reason"] != "linear_only" {
		t.Fatalf("spot: %v", err)
	}
}
