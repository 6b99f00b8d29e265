package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Orders that protect a position (D73): cancelling or shrinking one adds
// risk, so under HALTED or REDUCING the agent cannot take a stop-loss or
// a take-profit away, while the ways out (cancelling the orders that add
// risk, closing) stay open.

// protectedBook is a long position with three orders: the server's
// reduce-only take-profit (tp), a plain resting buy (plain) and a
// stop-loss as Bybit lists a position's SL (sl: Untriggered, StopLoss,
// reduce-only, close-on-trigger; placed by a human).
type protectedBook struct {
	e             *env
	cs            *sdk.ClientSession
	tp, plain, sl string
	last          decimal.Decimal
}

func newProtectedBook(t *testing.T, settings messages.PolicySettings) *protectedBook {
	t.Helper()
	e := newEnv(t)
	key := e.addKey(t, "alice")
	e.seed(t, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	base := messages.PolicySettings{Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: base.Merge(settings)}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	b := &protectedBook{e: e, cs: connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")}
	if out, isErr := callJSON(t, b.cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.002"}); isErr {
		t.Fatalf("buy: %v", out)
	}
	tk, isErr := callJSON(t, b.cs, "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	if isErr {
		t.Fatalf("ticker: %v", tk)
	}
	b.last = decimal.RequireFromString(tk["last_price"].(string))
	out, isErr := callJSON(t, b.cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Sell", "order_type": "Limit",
		"qty": "0.002", "price": b.above("1.02"), "reduce_only": true})
	if isErr {
		t.Fatalf("take-profit: %v", out)
	}
	b.tp = out["order_id"].(string)
	if out, isErr = callJSON(t, b.cs, "place_order", limitBuy("30000")); isErr {
		t.Fatalf("resting buy: %v", out)
	}
	b.plain = out["order_id"].(string)
	b.sl = e.seedOrders(t, key, []map[string]any{{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Market", "qty": "0.002",
		"price": "0", "status": "Untriggered", "reduceOnly": true, "closeOnTrigger": true, "stopOrderType": "StopLoss", "orderLinkId": "human-stop-loss"}})[0]
	return b
}

// above is the last price times f, on BTCUSDT's 0.1 tick.
func (b *protectedBook) above(f string) string {
	return b.last.Mul(decimal.RequireFromString(f)).Round(1).String()
}

func (b *protectedBook) call(t *testing.T, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	args["symbol"], args["category"] = "BTCUSDT", "linear"
	return callJSON(t, b.cs, tool, args)
}

// openIDs are the ids get_open_orders lists.
func (b *protectedBook) openIDs(t *testing.T) map[string]bool {
	t.Helper()
	out, isErr := callJSON(t, b.cs, "get_open_orders", map[string]any{"category": "linear", "symbol": "BTCUSDT"})
	if isErr {
		t.Fatalf("get_open_orders: %v", out)
	}
	ids := map[string]bool{}
	for _, r := range out["orders"].([]any) {
		ids[r.(map[string]any)["order_id"].(string)] = true
	}
	return ids
}

// refusedAsProtective checks a refusal with code that says the order
// protects a position.
func refusedAsProtective(t *testing.T, what string, out map[string]any, isErr bool, code messages.Code) {
	t.Helper()
	d, _ := out["details"].(map[string]any)
	if !isErr || out["code"] != string(code) || d["protective_order"] != true {
		t.Fatalf("%s: want %s with details.protective_order, got %v", what, code, out)
	}
}

// Under the kill switch the agent cannot cancel a stop-loss or the
// take-profit, nor shrink the take-profit or touch the stop-loss; it can
// move the take-profit, cancel the order that adds risk, and
// cancel_all_orders cancels that one and leaves the protective ones.
func TestHaltedAgentCannotRemoveAStopLoss(t *testing.T) {
	b := newProtectedBook(t, messages.PolicySettings{})
	if out, isErr := callJSON(t, b.cs, "activate_kill_switch", map[string]any{}); isErr {
		t.Fatal(out)
	}
	out, isErr := b.call(t, "cancel_order", map[string]any{"order_id": b.sl})
	refusedAsProtective(t, "cancel of the stop-loss", out, isErr, messages.CodeKillSwitchActive)
	out, isErr = b.call(t, "cancel_order", map[string]any{"order_id": b.sl, "dry_run": true})
	refusedAsProtective(t, "dry run of the cancel of the stop-loss", out, isErr, messages.CodeKillSwitchActive)
	out, isErr = b.call(t, "cancel_order", map[string]any{"order_id": b.tp})
	refusedAsProtective(t, "cancel of the reduce-only take-profit", out, isErr, messages.CodeKillSwitchActive)
	out, isErr = b.call(t, "amend_order", map[string]any{"order_id": b.tp, "qty": "0.001"})
	refusedAsProtective(t, "shrinking the take-profit", out, isErr, messages.CodeKillSwitchActive)
	// A larger reduce-only order covers no more than the position; the
	// stop-loss is conditional, so any change to it adds risk.
	out, isErr = b.call(t, "amend_order", map[string]any{"order_id": b.sl, "qty": "0.003"})
	refusedAsProtective(t, "amending the stop-loss", out, isErr, messages.CodeKillSwitchActive)

	// Moving a take-profit only changes when profit is taken (D53).
	out, isErr = b.call(t, "amend_order", map[string]any{"order_id": b.tp, "price": b.above("1.03")})
	if isErr || out["risk_increasing"] != false || out["status"] != "amended" {
		t.Fatalf("moving the take-profit under the kill switch: %v", out)
	}
	out, isErr = b.call(t, "cancel_all_orders", map[string]any{})
	if isErr || out["count"] != float64(1) || out["protective_left"] != float64(1) {
		t.Fatalf("cancel_all_orders under the kill switch: %v", out)
	}
	if row := out["orders"].([]any)[0].(map[string]any); row["order_id"] != b.plain || row["status"] != "cancelled" {
		t.Fatalf("cancel_all_orders cancelled %v, want the resting buy", row)
	}
	open := b.openIDs(t)
	if !open[b.sl] || !open[b.tp] || open[b.plain] {
		t.Fatalf("open orders after the refusals: %v (sl %s, tp %s, plain %s)", open, b.sl, b.tp, b.plain)
	}
	out, isErr = b.call(t, "close_position", map[string]any{})
	closeWorks(t, out, isErr)
}

// Under a human's REDUCING the same cancels are refused for the posture;
// once the human resumes, the agent may cancel them, and each such cancel
// counts in max_orders_per_minute (a plain cancel does not); a narrowed
// allowlist keeps them too, while the plain order can still be cancelled.
func TestProtectiveOrdersUnderReducingAndActive(t *testing.T) {
	b := newProtectedBook(t, messages.PolicySettings{})
	ctx := context.Background()
	if _, err := b.e.sys.Handle(ctx, &messages.SetPostureRequest{User: "alice", Reduce: true}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	out, isErr := b.call(t, "cancel_order", map[string]any{"order_id": b.sl})
	refusedAsProtective(t, "cancel of the stop-loss under REDUCING", out, isErr, messages.CodeLimitExceeded)
	if d := out["details"].(map[string]any); d["limit"] != "posture" || d["reason"] != messages.CauseHuman {
		t.Fatalf("refusal under REDUCING: %v", out)
	}
	out, isErr = b.call(t, "amend_order", map[string]any{"order_id": b.tp, "qty": "0.001"})
	refusedAsProtective(t, "shrinking the take-profit under REDUCING", out, isErr, messages.CodeLimitExceeded)
	if _, err := b.e.sys.Handle(ctx, &messages.SetPostureRequest{User: "alice"}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}

	used := func() int {
		t.Helper()
		p, isErr := callJSON(t, b.cs, "get_posture", map[string]any{})
		if isErr {
			t.Fatalf("get_posture: %v", p)
		}
		n, err := decimal.NewFromString(p["limits"].(map[string]any)["max_orders_per_minute"].(map[string]any)["used"].(string))
		if err != nil {
			t.Fatalf("max_orders_per_minute.used: %v", p)
		}
		return int(n.IntPart())
	}
	before := used()
	if out, isErr := b.call(t, "cancel_order", map[string]any{"order_id": b.sl}); isErr || out["status"] != "cancelled" || out["origin"] != "external" {
		t.Fatalf("cancel of the stop-loss when ACTIVE: %v", out)
	}
	if got := used(); got != before+1 {
		t.Fatalf("max_orders_per_minute.used after cancelling a stop-loss: %d, want %d", got, before+1)
	}

	if _, err := b.e.sys.Handle(ctx, &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{Allow: stringsp("linear:ETHUSDT")}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	out, isErr = b.call(t, "cancel_order", map[string]any{"order_id": b.tp})
	refusedAsProtective(t, "cancel of the take-profit off the allowlist", out, isErr, messages.CodePermissionDenied)
	if out, isErr := b.call(t, "cancel_order", map[string]any{"order_id": b.plain}); isErr || out["status"] != "cancelled" {
		t.Fatalf("cancel of the resting buy off the allowlist: %v", out)
	}
	if got := used(); got != before+1 {
		t.Fatalf("max_orders_per_minute.used after a plain cancel: %d, want %d", got, before+1)
	}
	if open := b.openIDs(t); !open[b.tp] || open[b.sl] || open[b.plain] {
		t.Fatalf("open orders: %v, want only the take-profit %s", open, b.tp)
	}
}
