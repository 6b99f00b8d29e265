package mcp

import (
	"encoding/json"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// tradingDecoders are the trading tools' argument decoders, by tool.
var tradingDecoders = map[string]func(*args) (any, *messages.Error){
	"place_order":       decoder(decodePlaceOrder),
	"cancel_order":      decoder(decodeCancelOrder),
	"amend_order":       decoder(decodeAmendOrder),
	"cancel_all_orders": decoder(decodeCancelAll),
	"close_position":    decoder(decodeClosePosition),
	"set_trading_stop":  decoder(decodeTradingStop),
	"set_leverage":      decoder(decodeSetLeverage),
}

func decoder[A any](f func(*args) (A, *messages.Error)) func(*args) (any, *messages.Error) {
	return func(a *args) (any, *messages.Error) { return f(a) }
}

// decodeArgs runs tool's decoder on args as the wire carries them.
func decodeArgs(t *testing.T, tool string, args map[string]any) (any, *messages.Error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tradingDecoders[tool](parseArgs(raw))
}

// Each argument is checked in one place (decisions D140): the MCP parse
// of a trading tool only decodes, so a well-typed value that breaks a
// value rule passes it, and the tool's Validate (actors/risk) is what
// refuses it, with the field and the words of the answer over MCP. What
// the parse refuses is a fault of decoding alone, which Validate could
// not see: the decoded arguments of a decoding fault's base are valid.
func TestTradingParseOnlyDecodes(t *testing.T) {
	tools := map[string]bool{}
	for _, tl := range (&server{}).tradingTools() {
		tools[tl.name] = true
		if tradingDecoders[tl.name] == nil {
			t.Errorf("%s: no decoder in this test's table", tl.name)
		}
	}
	covered := map[string]bool{}
	for _, f := range valueFaults() {
		covered[f.tool] = true
		v, err := decodeArgs(t, f.tool, f.args)
		if err != nil {
			t.Errorf("%s %s: the parse refused a well-typed value (%s): value rules are Validate's", f.tool, f.name, err.Message)
			continue
		}
		e := risk.Of(f.tool).Validate(v)
		msg := f.message
		if msg == "" {
			msg = "invalid " + f.field + ": " + f.reason
		}
		if e == nil || e.Code != messages.CodeInvalidParams || e.Details["field"] != f.field || e.Details["reason"] != f.reason || e.Message != msg {
			t.Errorf("%s %s: Validate answered %v; want %q", f.tool, f.name, e, msg)
		}
	}
	for tool := range tools {
		if !covered[tool] {
			t.Errorf("%s: no value fault in the table", tool)
		}
	}
	for _, f := range decodeFaults() {
		if _, err := decodeArgs(t, f.tool, f.args); err == nil || err.Details["field"] != f.field || err.Details["reason"] != f.reason {
			t.Errorf("%s %s: the parse answered %v; want %s %q", f.tool, f.name, err, f.field, f.reason)
		}
	}
	for tool := range tools {
		base := map[string]map[string]any{"place_order": tradeOrder, "cancel_order": tradeCancel, "amend_order": tradeAmend,
			"cancel_all_orders": tradeAll, "close_position": tradeClose, "set_trading_stop": tradeStop, "set_leverage": tradeLev}[tool]
		v, err := decodeArgs(t, tool, base)
		if err != nil {
			t.Fatalf("%s: valid base refused: %v", tool, err)
		}
		if e := risk.Of(tool).Validate(v); e != nil {
			t.Errorf("%s: valid base refused by Validate: %v", tool, e)
		}
	}
}
