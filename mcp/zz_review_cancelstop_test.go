package mcp

import (
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// REVIEW: under HALTED (and REDUCING) cancel_order is always "risk
// reducing", so the agent can cancel a conditional reduce-only stop-loss
// (status Untriggered; on Bybit a position's SL/TP is listed like this too).
func TestReviewHaltedAgentCancelsAStopLoss(t *testing.T) {
	e := newEnv(t)
	key := e.addKey(t, "alice")
	e.seed(t, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	base := messages.PolicySettings{Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: base}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	ids := e.seedOrders(t, key, []map[string]any{{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Market", "qty": "0.01",
		"price": "0", "status": "Untriggered", "reduceOnly": true, "orderLinkId": "human-stop-loss"}})
	if _, err := e.sys.Handle(context.Background(), &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	out, isErr := callJSON(t, cs, "cancel_order", map[string]any{"category": "linear", "symbol": "BTCUSDT", "order_id": ids[0]})
	t.Logf("cancel_order under HALTED on an Untriggered reduce-only stop: error=%v %v", isErr, out)
	if !isErr {
		t.Errorf("the agent removed a protective stop order while HALTED")
	}
}
