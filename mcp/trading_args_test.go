package mcp

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// absentArg, as a value in argsWith, leaves the field out.
type absentArg struct{}

// argsWith is base with field set to v (left out for absentArg{}).
func argsWith(base map[string]any, field string, v any) map[string]any {
	out := with(base, field, v)
	if _, ok := v.(absentArg); ok {
		delete(out, field)
	}
	return out
}

// valueFault is a trading call whose arguments are well typed (every
// field decodes) but break one value rule: the field it names and the
// words the agent is told.
type valueFault struct {
	tool, name string
	args       map[string]any
	field      string
	reason     string // details.reason
	message    string // the message; "invalid <field>: <reason>" when empty
}

// Bases of the trading tools' calls, each valid.
var (
	tradeOrder  = map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.01", "price": "30000"}
	tradeCancel = map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": "abc-1"}
	tradeAmend  = with(tradeCancel, "qty", "0.005")
	tradeAll    = map[string]any{"symbol": "BTCUSDT", "category": "linear"}
	tradeClose  = with(tradeAll, "qty", "0.001")
	tradeStop   = with(tradeAll, "stop_loss", "25000")
	tradeLev    = with(tradeAll, "leverage", "2")
)

const (
	reasonSymbol   = "must match ^[A-Z0-9]{2,30}$ (uppercase, e.g. BTCUSDT)"
	reasonCategory = `must be one of "spot", "linear"`
	reasonKey      = "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"
	reasonOrderID  = "must be the order_id of get_open_orders"
	reasonPositive = "must be a positive decimal string"
)

// valueFaults lists, for each trading tool and each field with a value
// rule, a well-typed value that breaks it, with the answer the agent has
// always been given for it.
func valueFaults() []valueFault {
	var out []valueFault
	common := func(tool string, base map[string]any) {
		out = append(out,
			valueFault{tool, "symbol lower", argsWith(base, "symbol", "btcusdt"), "symbol", reasonSymbol, ""},
			valueFault{tool, "symbol empty", argsWith(base, "symbol", ""), "symbol", reasonSymbol, ""},
			valueFault{tool, "symbol spaced", argsWith(base, "symbol", "BTC USDT"), "symbol", reasonSymbol, ""},
			valueFault{tool, "category inverse", argsWith(base, "category", "inverse"), "category", reasonCategory, ""},
			valueFault{tool, "category empty", argsWith(base, "category", ""), "category", reasonCategory, ""},
			valueFault{tool, "category cased", argsWith(base, "category", "Linear"), "category", reasonCategory, ""},
			valueFault{tool, "key spaced", argsWith(base, "idempotency_key", "a b"), "idempotency_key", reasonKey, ""},
			valueFault{tool, "key long", argsWith(base, "idempotency_key", strings.Repeat("k", 65)), "idempotency_key", reasonKey, ""},
		)
	}
	orderID := func(tool string, base map[string]any) {
		out = append(out,
			valueFault{tool, "order id injected", argsWith(base, "order_id", "x'; DROP--"), "order_id", reasonOrderID, ""},
			valueFault{tool, "order id empty", argsWith(base, "order_id", ""), "order_id", reasonOrderID, ""},
		)
	}
	linearOnly := func(tool string, base map[string]any, what string) {
		out = append(out, valueFault{tool, "spot", argsWith(base, "category", "spot"), "category", "linear_only", "invalid category: " + what})
	}

	common("place_order", tradeOrder)
	out = append(out,
		valueFault{"place_order", "side upper", argsWith(tradeOrder, "side", "BUY"), "side", `must be one of "Buy", "Sell"`, ""},
		valueFault{"place_order", "side empty", argsWith(tradeOrder, "side", ""), "side", `must be one of "Buy", "Sell"`, ""},
		valueFault{"place_order", "order type stop", argsWith(tradeOrder, "order_type", "Stop"), "order_type", `must be one of "Limit", "Market"`, ""},
		valueFault{"place_order", "qty zero", argsWith(tradeOrder, "qty", "0.000"), "qty", reasonPositive, ""},
		valueFault{"place_order", "limit without price", argsWith(tradeOrder, "price", absentArg{}), "price", "a Limit order needs a positive price", ""},
		valueFault{"place_order", "limit at zero", argsWith(tradeOrder, "price", "0"), "price", "a Limit order needs a positive price", ""},
		valueFault{"place_order", "market with price", argsWith(tradeOrder, "order_type", "Market"), "price", "a Market order takes no price; the server sets the worst price from slippage_pct", ""},
		valueFault{"place_order", "reduce-only on spot", with(tradeOrder, "category", "spot", "reduce_only", true), "reduce_only", "linear_only", "invalid reduce_only: reduce-only orders exist on linear only"},
	)
	common("cancel_order", tradeCancel)
	orderID("cancel_order", tradeCancel)
	common("amend_order", tradeAmend)
	orderID("amend_order", tradeAmend)
	out = append(out,
		valueFault{"amend_order", "nothing to change", tradeCancel, "qty", "give qty, price or both", ""},
		valueFault{"amend_order", "qty zero", argsWith(tradeAmend, "qty", "0"), "qty", reasonPositive, ""},
		valueFault{"amend_order", "price zero", argsWith(tradeAmend, "price", "0.0"), "price", reasonPositive, ""},
	)
	common("cancel_all_orders", tradeAll)
	common("close_position", tradeClose)
	linearOnly("close_position", tradeClose, "positions exist on linear only")
	common("set_trading_stop", tradeStop)
	linearOnly("set_trading_stop", tradeStop, "positions exist on linear only")
	out = append(out,
		valueFault{"set_trading_stop", "no level", tradeAll, "take_profit", "give take_profit, stop_loss or both", ""},
		valueFault{"set_trading_stop", "stop loss zero", argsWith(tradeStop, "stop_loss", "0"), "stop_loss", "must be a positive price", ""},
		valueFault{"set_trading_stop", "take profit zero", argsWith(tradeStop, "take_profit", "0"), "take_profit", "must be a positive price", ""},
	)
	common("set_leverage", tradeLev)
	linearOnly("set_leverage", tradeLev, "leverage exists on linear only")
	out = append(out, valueFault{"set_leverage", "leverage zero", argsWith(tradeLev, "leverage", "0"), "leverage", reasonPositive, ""})
	return out
}

// Over MCP, an argument that breaks a value rule or does not decode is
// invalid_params naming the field with the words the agent has always
// been told, whichever side checks it; so is one sent with a
// confirmation form's state (a repeat of a parked call), which the
// arguments' check precedes.
func TestTradingArgumentFaultsAnswerUnchanged(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), CallsPerSecond: 1e6, CallBurst: 1e6}, "")
	type fault struct {
		tool, name    string
		args          map[string]any
		field, reason string
		message       string
	}
	var faults []fault
	for _, f := range valueFaults() {
		faults = append(faults, fault{f.tool, f.name, f.args, f.field, f.reason, f.message})
	}
	for _, f := range decodeFaults() {
		faults = append(faults, fault{f.tool, f.name, f.args, f.field, f.reason, ""})
	}
	for i, f := range faults {
		msg := f.message
		if msg == "" {
			msg = "invalid " + f.field + ": " + f.reason
		}
		out, isErr := callJSON(t, cs, f.tool, f.args)
		d, _ := out["details"].(map[string]any)
		if !isErr || out["code"] != "invalid_params" || d["field"] != f.field || d["reason"] != f.reason || out["message"] != msg {
			t.Errorf("%s %s: got %v; want invalid_params on %s, %q", f.tool, f.name, out, f.field, msg)
		}
		if i%3 != 0 {
			continue // a third of them again with a form's state
		}
		out, err := answerRoundErr(cs, f.tool, f.args, requestStatePrefix+"AAAA", nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ = out["details"].(map[string]any)
		if out["is_error"] != true || out["code"] != "invalid_params" || d["field"] != f.field || d["reason"] != f.reason || out["message"] != msg {
			t.Errorf("%s %s with a form's state: got %v; want invalid_params on %s, %q", f.tool, f.name, out, f.field, msg)
		}
	}
}

// decodeFault is a trading call the parse itself refuses: a fault of
// decoding (a JSON type, a decimal's wire form, presence, an unknown
// argument), never of a value rule.
type decodeFault struct {
	tool, name string
	args       map[string]any
	field      string
	reason     string
}

// decodeFaults lists, for each trading tool, the faults of decoding.
func decodeFaults() []decodeFault {
	var out []decodeFault
	bases := map[string]map[string]any{"place_order": tradeOrder, "cancel_order": tradeCancel, "amend_order": tradeAmend,
		"cancel_all_orders": tradeAll, "close_position": tradeClose, "set_trading_stop": tradeStop, "set_leverage": tradeLev}
	required := map[string][]string{"place_order": {"symbol", "category", "side", "order_type", "qty"}, "cancel_order": {"symbol", "category", "order_id"},
		"amend_order": {"symbol", "category", "order_id"}, "cancel_all_orders": {"symbol", "category"}, "close_position": {"symbol", "category"},
		"set_trading_stop": {"symbol", "category"}, "set_leverage": {"symbol", "category", "leverage"}}
	decimals := map[string][]string{"place_order": {"qty", "price"}, "amend_order": {"qty", "price"}, "close_position": {"qty"},
		"set_trading_stop": {"stop_loss", "take_profit"}, "set_leverage": {"leverage"}}
	for _, tool := range slices.Sorted(maps.Keys(bases)) {
		base := bases[tool]
		for _, f := range required[tool] {
			out = append(out, decodeFault{tool, f + " missing", argsWith(base, f, absentArg{}), f, "required"},
				decodeFault{tool, f + " null", argsWith(base, f, nil), f, "required"})
		}
		for _, f := range []string{"symbol", "category", "idempotency_key"} {
			out = append(out, decodeFault{tool, f + " number", argsWith(base, f, 42), f, "must be a JSON string"})
		}
		for _, f := range decimals[tool] {
			for _, v := range []any{"-1", "+1", "1e2", " 1", "", "0x10", strings.Repeat("9", 21)} {
				out = append(out, decodeFault{tool, f + " " + fmt.Sprint(v), argsWith(base, f, v), f, decimalReason})
			}
			out = append(out, decodeFault{tool, f + " number", argsWith(base, f, 1), f, "must be a JSON string"})
		}
		out = append(out,
			decodeFault{tool, "key empty", argsWith(base, "idempotency_key", ""), "idempotency_key", reasonKey},
			decodeFault{tool, "dry_run string", argsWith(base, "dry_run", "yes"), "dry_run", "must be true or false"},
			decodeFault{tool, "unknown", argsWith(base, "leverage_override", "9"), "leverage_override", "unknown argument for this tool"})
	}
	for _, tool := range []string{"place_order", "cancel_order", "amend_order"} {
		for _, f := range []string{"side", "order_type", "order_id"} {
			if _, ok := bases[tool][f]; ok {
				out = append(out, decodeFault{tool, f + " bool", argsWith(bases[tool], f, true), f, "must be a JSON string"})
			}
		}
	}
	return append(out,
		decodeFault{"place_order", "reduce_only string", argsWith(tradeOrder, "reduce_only", "true"), "reduce_only", "must be true or false"},
		decodeFault{"close_position", "qty zero", argsWith(tradeClose, "qty", "0.000"), "qty", "must be positive; leave it out to close all"})
}
