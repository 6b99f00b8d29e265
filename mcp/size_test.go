package mcp

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The largest answer each market tool can give stays under 20,000
// characters and is valid JSON.
func TestMarketAnswersFitTheContextBudget(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, "")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_klines", map[string]any{"symbol": "BTCUSDT", "category": "linear", "interval": "1", "limit": klinesMaxLimit}},
		{"get_klines", map[string]any{"symbol": "ETHUSDT", "category": "spot", "interval": "M", "limit": klinesMaxLimit}},
		{"get_orderbook", map[string]any{"symbol": "BTCUSDT", "category": "spot", "limit": orderbookMaxLimit}},
		{"get_ticker", map[string]any{"symbol": "SOLUSDT", "category": "linear"}},
		{"get_instrument", map[string]any{"symbol": "BTCUSDT", "category": "linear"}},
		{"get_my_policy", map[string]any{}},
	} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if !json.Valid([]byte(text)) {
			t.Fatalf("%s: not JSON", c.tool)
		}
		if len(text) >= 20000 {
			t.Fatalf("%s: %d characters", c.tool, len(text))
		}
		t.Logf("%s: %d characters", c.tool, len(text))
	}
}
