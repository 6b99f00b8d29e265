package mcp

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// Every tool call has one info line: the tool (or "(unknown)"), the user,
// the outcome code and the duration; the arguments' values and an unknown
// tool's name are never in the log.
func TestToolCallActivityLine(t *testing.T) {
	e := newEnv(t)
	e.confirmUser(t, "alice", false)
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), Logger: logger}, "")
	const planted = "PLANTEDsk_live_9Qz7Wm"
	if _, isErr := callJSON(t, cs, "get_ticker", map[string]any{"category": "linear", "symbol": "BTCUSDT"}); isErr {
		t.Fatal("get_ticker refused")
	}
	if _, isErr := callJSON(t, cs, "get_ticker", map[string]any{"category": "linear", "symbol": "BTCUSDT", "memo": planted}); !isErr {
		t.Fatal("an unknown argument was accepted")
	}
	if _, isErr := callJSON(t, cs, "place_order", map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "order_type": "Limit",
		"qty": "0.001", "price": "30000", "idempotency_key": planted}); !isErr {
		t.Fatal("place_order with no channel was not refused")
	}
	if _, isErr := callJSON(t, cs, planted, map[string]any{}); !isErr {
		t.Fatal("an unknown tool answered")
	}
	out := logs.String()
	if strings.Contains(out, planted) {
		t.Fatalf("a value the agent sent is in the log:\n%s", out)
	}
	var calls []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		if m["msg"] == "tool call" {
			calls = append(calls, m)
		}
	}
	want := []struct{ tool, outcome, limit string }{
		{"get_ticker", "ok", ""}, {"get_ticker", "invalid_params", ""}, {"place_order", "confirmation_channel_unavailable", "confirm_actions"}, {"(unknown)", "not_found", ""},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d tool call lines, want %d:\n%s", len(calls), len(want), out)
	}
	for i, w := range want {
		c := calls[i]
		if c["tool"] != w.tool || c["outcome"] != w.outcome || c["user"] != "alice" || c["level"] != "INFO" {
			t.Errorf("line %d: %v, want tool %s outcome %s", i, c, w.tool, w.outcome)
		}
		if _, ok := c["duration_ms"].(float64); !ok {
			t.Errorf("line %d has no duration_ms: %v", i, c)
		}
		if w.limit != "" && c["limit"] != w.limit {
			t.Errorf("line %d: limit %v, want %s", i, c["limit"], w.limit)
		}
	}
}
