package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func stringsp(v ...string) *[]string             { return &v }
func profp(p messages.Profile) *messages.Profile { return &p }

// tradeUser gives user a funded paper key and a trade policy on
// BTCUSDT without confirmation (none exists yet), with a daily cap.
func (e *env) tradeUser(t testing.TB, user string, settings messages.PolicySettings) {
	t.Helper()
	key := e.addKey(t, user)
	e.seed(t, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	base := messages.PolicySettings{Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: user, Settings: base.Merge(settings)}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
}

// The trading tools are shown to, and callable by, the trade profile
// only; they are destructive.
func TestTradingToolsOnlyForTrade(t *testing.T) {
	e := newEnv(t)
	ro := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly)}, "")
	out, isErr := callJSON(t, ro, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.01", "price": "30000"})
	if !isErr || out["code"] != "permission_denied" {
		t.Fatalf("read_only calling place_order: %v", out)
	}
	tr := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	res, err := tr.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tl := range res.Tools {
		if tl.Name == "place_order" || tl.Name == "cancel_order" || tl.Name == "set_leverage" || tl.Name == "close_position" || tl.Name == "set_trading_stop" || tl.Name == "amend_order" || tl.Name == "cancel_all_orders" {
			seen++
			if tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint || tl.Annotations.ReadOnlyHint {
				t.Fatalf("%s annotations %+v", tl.Name, tl.Annotations)
			}
		}
	}
	if seen != 7 {
		t.Fatalf("trade profile sees %d of the 7 trading tools", seen)
	}
}

// Over MCP: a dry run previews, a limit order rests, a cancel cancels it
// (origin system), and the answers carry decimals as strings.
func TestPlaceAndCancelOverMCP(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	order := map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.0105", "price": "30000"}
	prev, isErr := callJSON(t, cs, "place_order", with(order, "dry_run", true))
	if isErr || prev["status"] != "preview" || prev["qty"] != "0.01" || prev["requested_qty"] != "0.0105" || prev["notional_usdt"] != "300" {
		t.Fatalf("dry run: %v", prev)
	}
	placed, isErr := callJSON(t, cs, "place_order", with(order, "idempotency_key", "mcp-1"))
	if isErr || placed["status"] != "accepted" || placed["order_status"] != "New" || placed["filled_qty"] != "0" || placed["origin"] != "system" {
		t.Fatalf("place: %v", placed)
	}
	again, isErr := callJSON(t, cs, "place_order", with(with(order, "qty", "0.01050"), "idempotency_key", "mcp-1"))
	if isErr || again["result_source"] != "replay" || again["order_id"] != placed["order_id"] {
		t.Fatalf("replay: %v", again)
	}
	amended, isErr := callJSON(t, cs, "amend_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": placed["order_id"], "price": "29500"})
	if isErr || amended["status"] != "amended" || amended["price"] != "29500" || amended["risk_increasing"] != false {
		t.Fatalf("amend: %v", amended)
	}
	preview, isErr := callJSON(t, cs, "cancel_all_orders", map[string]any{"symbol": "BTCUSDT", "category": "linear", "dry_run": true})
	if isErr || preview["status"] != "preview" || preview["count"] != float64(1) || preview["external_count"] != float64(0) {
		t.Fatalf("cancel_all preview: %v", preview)
	}
	cancelled, isErr := callJSON(t, cs, "cancel_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": placed["order_id"]})
	if isErr || cancelled["status"] != "cancelled" || cancelled["origin"] != "system" || cancelled["client_order_id"] != placed["client_order_id"] {
		t.Fatalf("cancel: %v", cancelled)
	}
}

// A hostile agent: numbers, exponents, negatives, unknown fields and
// injected text are invalid_params that never echo the value; splitting
// a large order into small ones hits the daily cap, which names itself.
func TestHostileAgentTrading(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{DailyNotionalCapUSDT: decp("700"), MaxOrderNotionalUSDT: decp("400")})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	order := map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.01", "price": "30000"}
	bad := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"number qty", with(order, "qty", 0.01), "qty"},
		{"exponent", with(order, "qty", "1e-2"), "qty"},
		{"negative", with(order, "qty", "-0.01"), "qty"},
		{"zero", with(order, "qty", "0"), "qty"},
		{"spaces", with(order, "price", " 30000"), "price"},
		{"unknown field", with(order, "leverage_override", "IGNORE PREVIOUS INSTRUCTIONS"), "leverage_override"},
		{"bad side", with(order, "side", "BUY; drop"), "side"},
		{"market with price", with(order, "order_type", "Market"), "price"},
		{"bool as string", with(order, "reduce_only", "true"), "reduce_only"},
		{"long key", with(order, "idempotency_key", strings.Repeat("k", 65)), "idempotency_key"},
	}
	for _, b := range bad {
		out, isErr := callJSON(t, cs, "place_order", b.args)
		if !isErr || out["code"] != "invalid_params" {
			t.Fatalf("%s: %v", b.name, out)
		}
		if d, _ := out["details"].(map[string]any); d["field"] != b.field {
			t.Fatalf("%s: details %v", b.name, out["details"])
		}
		for _, leak := range []string{"IGNORE", "1e-2", "-0.01", "BUY; drop"} {
			if strings.Contains(mustString(out), leak) {
				t.Fatalf("%s: the answer echoes %q: %v", b.name, leak, out)
			}
		}
	}
	for i, p := range []string{"30000", "30000.1"} {
		if out, isErr := callJSON(t, cs, "place_order", with(order, "price", p)); isErr {
			t.Fatalf("split %d: %v", i, out)
		}
	}
	out, isErr := callJSON(t, cs, "place_order", with(order, "price", "30000.2"))
	d, _ := out["details"].(map[string]any)
	if !isErr || out["code"] != "limit_exceeded" || d["limit"] != "daily_notional_cap_usdt" || d["allowed"] != "700" {
		t.Fatalf("third split order: %v", out)
	}
	out, isErr = callJSON(t, cs, "place_order", with(order, "qty", "0.02"))
	d, _ = out["details"].(map[string]any)
	if !isErr || d["limit"] != "max_order_notional_usdt" || d["allowed"] != "400" {
		t.Fatalf("one large order: %v", out)
	}
	// The refusals are in the journal; the invalid calls are not.
	refused := 0
	for _, r := range e.records(t) {
		if messages.RecordType(r.Type) == messages.RecordOrderRefused {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("%d order_refused records, want 2", refused)
	}
}

func mustString(v any) string { return string(mustJSON(v)) }

func decp(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }

// set_leverage over MCP: lowering goes through the kill switch; spot is
// linear_only; a number is invalid_params.
func TestSetLeverageOverMCP(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	if out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{}); isErr {
		t.Fatal(out)
	}
	out, isErr := callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": "2"})
	if isErr || out["status"] != "set" || out["leverage"] != "2" || out["risk_increasing"] != false {
		t.Fatalf("lowering: %v", out)
	}
	out, isErr = callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": "5"})
	if !isErr || out["code"] != "kill_switch_active" {
		t.Fatalf("raising under the kill switch: %v", out)
	}
	out, _ = callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "spot", "leverage": "2"})
	if d, _ := out["details"].(map[string]any); out["code"] != "invalid_params" || d["reason"] != "linear_only" {
		t.Fatalf("spot: %v", out)
	}
	out, _ = callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": 2})
	if out["code"] != "invalid_params" {
		t.Fatalf("a number: %v", out)
	}
}

// close_position over MCP: a market buy opens a position, close_position
// closes it under the kill switch, and a second close finds nothing.
func TestClosePositionOverMCP(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.002"})
	if isErr || out["filled_qty"] != "0.002" || out["sent_as"] != "Limit IOC" {
		t.Fatalf("market buy: %v", out)
	}
	callJSON(t, cs, "activate_kill_switch", map[string]any{})
	out, isErr = callJSON(t, cs, "set_trading_stop", map[string]any{"symbol": "BTCUSDT", "category": "linear", "stop_loss": "1000"})
	if isErr || out["status"] != "set" || out["stop_loss"] != "1000" || out["position_side"] != "Buy" {
		t.Fatalf("stop loss under the kill switch: %v", out)
	}
	out, _ = callJSON(t, cs, "set_trading_stop", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	if out["code"] != "invalid_params" {
		t.Fatalf("no level: %v", out)
	}
	out, isErr = callJSON(t, cs, "close_position", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	if isErr || out["side"] != "Sell" || out["filled_qty"] != "0.002" || out["reduce_only"] != true {
		t.Fatalf("close: %v", out)
	}
	out, _ = callJSON(t, cs, "close_position", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	if d, _ := out["details"].(map[string]any); out["code"] != "not_found" || d["reason"] != "position_not_found" {
		t.Fatalf("nothing to close: %v", out)
	}
}
