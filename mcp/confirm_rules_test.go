package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// What get_posture, get_my_policy and the trading tools tell the agent
// about confirmations, previews and repeats, over the real MCP transport,
// against the actor system, the journal and the simulator.

// limitsOf is get_posture's limits object.
func limitsOf(t testing.TB, p map[string]any) map[string]any {
	t.Helper()
	l, ok := p["limits"].(map[string]any)
	if !ok {
		t.Fatalf("get_posture has no limits: %v", p)
	}
	return l
}

// pendingUse is get_posture's limits.max_pending as "used/left".
func pendingUse(t testing.TB, p map[string]any) string {
	t.Helper()
	mp, _ := limitsOf(t, p)["max_pending"].(map[string]any)
	return mustString(mp["used"]) + "/" + mustString(mp["left"])
}

// get_posture counts the confirmations that wait for a human in
// limits.max_pending: one more per parked action, one less once it is
// withdrawn.
func TestPostureCountsWaitingConfirmations(t *testing.T) {
	e := newEnvConfig(t, func(c *actors.Config) { c.ConfirmCLI = true })
	e.confirmUser(t, "alice", false)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	if got := pendingUse(t, posture(t, cs)); got != `"0"/"5"` {
		t.Fatalf("max_pending with nothing parked: %s", got)
	}
	var ids []string
	for i, price := range []string{"30000", "30000.5"} {
		out, isErr := callJSON(t, cs, "place_order", limitOrder(price))
		if isErr || out["status"] != "pending" {
			t.Fatalf("park %d: %v", i, out)
		}
		ids = append(ids, out["confirmation_id"].(string))
	}
	if got := pendingUse(t, posture(t, cs)); got != `"2"/"3"` {
		t.Fatalf("max_pending with two confirmations waiting: %s, want 2 used, 3 left", got)
	}
	if out, isErr := callJSON(t, cs, "cancel_confirmation", map[string]any{"confirmation_id": ids[0]}); isErr {
		t.Fatalf("cancel_confirmation: %v", out)
	}
	if got := pendingUse(t, posture(t, cs)); got != `"1"/"4"` {
		t.Fatalf("max_pending after one was withdrawn: %s", got)
	}
}

// A preview sends nothing and claims nothing: with max_orders_per_minute
// N, N+3 previews leave every rolling counter of get_posture as it was,
// and N real orders still go through after them.
func TestPreviewsConsumeNoLimit(t *testing.T) {
	e := newEnv(t)
	const n = 2
	e.tradeUser(t, "alice", messages.PolicySettings{MaxOrdersPerMinute: intp(n)})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	before := limitsOf(t, posture(t, cs))
	order := limitOrder("30000")
	for i := 0; i < n+3; i++ {
		out, isErr := callJSON(t, cs, "place_order", with(with(order, "dry_run", true), "idempotency_key", "preview"))
		if isErr || out["status"] != "preview" {
			t.Fatalf("preview %d: %v", i, out)
		}
	}
	if after := limitsOf(t, posture(t, cs)); !reflect.DeepEqual(before, after) {
		t.Fatalf("previews moved the rolling counters:\nbefore %v\nafter  %v", before, after)
	}
	// The key the previews named was never claimed: the first real call
	// with it goes to the venue; N real orders go through.
	out, isErr := callJSON(t, cs, "place_order", with(order, "idempotency_key", "preview"))
	if isErr || out["status"] != "accepted" || out["result_source"] != "venue" {
		t.Fatalf("the first real order after %d previews: %v", n+3, out)
	}
	if out, isErr := callJSON(t, cs, "place_order", limitOrder("30000.1")); isErr || out["status"] != "accepted" {
		t.Fatalf("the second real order: %v", out)
	}
	out, isErr = callJSON(t, cs, "place_order", limitOrder("29000"))
	if d, _ := out["details"].(map[string]any); !isErr || out["code"] != string(messages.CodeLimitExceeded) || d["limit"] != "max_orders_per_minute" {
		t.Fatalf("a third order in the minute: %v", out)
	}
}

// Under the kill switch a repeat sends nothing and re-states a past fact:
// the same idempotency key (within 24 h) and the same keyless order
// (within 30 s, in any spelling of the same planned order) are answered with the earlier answer, result_source
// "replay", journaled as order_repeat (D88); a new risk-increasing order
// is refused with kill_switch_active.
func TestRepeatsUnderTheKillSwitchReplay(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	keyed := with(limitOrder("30000"), "idempotency_key", "ks-1")
	keyless := limitOrder("30000.1")
	first, isErr := callJSON(t, cs, "place_order", keyed)
	if isErr || first["status"] != "accepted" {
		t.Fatalf("keyed order: %v", first)
	}
	firstNoKey, isErr := callJSON(t, cs, "place_order", keyless)
	if isErr || firstNoKey["status"] != "accepted" {
		t.Fatalf("keyless order: %v", firstNoKey)
	}
	if out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{}); isErr || out["kill_switch"] != "user" {
		t.Fatalf("activate_kill_switch: %v", out)
	}
	for _, c := range []struct {
		name  string
		args  map[string]any
		first map[string]any
	}{{"keyed", keyed, first}, {"keyless", keyless, firstNoKey}, {"keyless, another spelling of the same planned order", with(keyless, "qty", "0.0105"), firstNoKey}} {
		out, isErr := callJSON(t, cs, "place_order", c.args)
		if isErr || out["result_source"] != messages.ResultSourceReplay || out["status"] != "accepted" ||
			out["client_order_id"] != c.first["client_order_id"] || out["order_id"] != c.first["order_id"] {
			t.Fatalf("%s repeat under the kill switch: %v, want the earlier answer as a replay", c.name, out)
		}
	}
	out, isErr := callJSON(t, cs, "place_order", limitOrder("30000.2"))
	if !isErr || out["code"] != string(messages.CodeKillSwitchActive) {
		t.Fatalf("a new order under the kill switch: %v", out)
	}
	var reasons []string
	attempts := 0
	for _, r := range e.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordOrderAttempt:
			attempts++
		case messages.RecordOrderRepeat:
			var rep messages.OrderRepeatEvent
			if err := json.Unmarshal(r.Payload, &rep); err != nil {
				t.Fatal(err)
			}
			reasons = append(reasons, rep.Reason)
		}
	}
	if attempts != 2 || !reflect.DeepEqual(reasons, []string{"replay", "safety_net", "safety_net"}) {
		t.Fatalf("%d attempts (want 2), order_repeat reasons %v (want replay, safety_net, safety_net)", attempts, reasons)
	}
}

// get_my_policy states the confirmation rule in one line, and a pending
// answer or a refusal names the setting that asked for the confirmation:
// with the default confirm_actions a 62 USDT order is confirmed because
// place_order is in confirm_actions, whatever the threshold; with an
// empty confirm_actions only an order at or above the threshold is.
func TestConfirmationSettingsSayWhatTheyDo(t *testing.T) {
	e := newEnvConfig(t, func(c *actors.Config) { c.ConfirmCLI = true })
	e.confirmUser(t, "alice", false)
	threshold := decp("200")
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice",
		Settings: messages.PolicySettings{ConfirmActions: stringsp(messages.TradingTools...), ConfirmAboveNotionalUSDT: threshold}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	pol, isErr := callJSON(t, cs, "get_my_policy", map[string]any{})
	want := "always confirmed (confirm_actions): place_order, cancel_order, amend_order, cancel_all_orders, set_trading_stop, close_position, set_leverage; " +
		"confirmed only at or above 200 USDT (confirm_above_notional_usdt): none; never confirmed: none"
	if isErr || pol["confirmation_rule"] != want {
		t.Fatalf("confirmation_rule %q\nwant             %q", pol["confirmation_rule"], want)
	}
	small := map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.002", "price": "31000"}
	out, isErr := callJSON(t, cs, "place_order", small)
	if isErr || out["status"] != "pending" || out["confirmed_by"] != messages.ConfirmByActions {
		t.Fatalf("a 62 USDT order with place_order in confirm_actions: %v", out)
	}

	// Only the threshold: a 62 USDT order goes, a 310 USDT one waits.
	e.confirmUser(t, "bob", false)
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "bob",
		Settings: messages.PolicySettings{ConfirmActions: stringsp("cancel_order"), ConfirmAboveNotionalUSDT: threshold}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	bob := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("bob", ProfileTrade)}, "")
	pol, _ = callJSON(t, bob, "get_my_policy", map[string]any{})
	want = "always confirmed (confirm_actions): cancel_order; confirmed only at or above 200 USDT (confirm_above_notional_usdt): place_order, amend_order, close_position; " +
		"never confirmed: cancel_all_orders, set_trading_stop, set_leverage"
	if pol["confirmation_rule"] != want {
		t.Fatalf("confirmation_rule %q\nwant             %q", pol["confirmation_rule"], want)
	}
	if out, isErr := callJSON(t, bob, "place_order", small); isErr || out["status"] != "accepted" {
		t.Fatalf("a 62 USDT order under a 200 USDT threshold: %v", out)
	}
	large := with(small, "qty", "0.01")
	out, isErr = callJSON(t, bob, "place_order", large)
	if isErr || out["status"] != "pending" || out["confirmed_by"] != messages.ConfirmByNotional {
		t.Fatalf("a 310 USDT order under a 200 USDT threshold: %v", out)
	}
	st, isErr := callJSON(t, bob, "get_confirmation_status", map[string]any{"confirmation_id": out["confirmation_id"]})
	if isErr || st["confirmed_by"] != messages.ConfirmByNotional {
		t.Fatalf("get_confirmation_status: %v", st)
	}

	// Without a channel the refusal names the setting and its value.
	nochan := newEnv(t)
	nochan.confirmUser(t, "bob", false)
	if _, err := nochan.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "bob",
		Settings: messages.PolicySettings{ConfirmActions: stringsp(), ConfirmAboveNotionalUSDT: threshold}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	nb := connect(t, Options{Backend: nochan.sys, Principal: fixedPrincipal("bob", ProfileTrade)}, "")
	out, isErr = callJSON(t, nb, "place_order", large)
	d, _ := out["details"].(map[string]any)
	if !isErr || out["code"] != string(messages.CodeConfirmationChannelUnavailable) || d["confirmed_by"] != messages.ConfirmByNotional ||
		d["limit"] != messages.ConfirmByNotional || d["allowed"] != "200" {
		t.Fatalf("no channel, confirmed by value: %v", out)
	}
}
