package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio session ends (stdin EOF): with cancel_on_disconnect on, serve
// cancels the order the agent left resting before it exits, and the
// journal says so under system:deadman.
func TestStdioEOFFiresTheDeadmanSwitch(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	if r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "paper", "--cancel-on-disconnect", "true"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	cs, stderr := connectStdio(t, in, "")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{
		"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30000"}})
	if err != nil || res.IsError {
		t.Fatalf("place_order: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil { // EOF on stdin; waits for the exit
		t.Fatalf("serve exit: %v\n%s", err, stderr)
	}
	dump := run(t, in.env(), "", "journal", "dump")
	var trig map[string]any
	cancels := 0
	for _, l := range strings.Split(strings.TrimSpace(dump.stdout), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec["type"] == "deadman_triggered":
			trig = rec
		case rec["type"] == "order_outcome" && rec["actor"] == "system:deadman":
			if p, _ := rec["payload"].(map[string]any); p["status"] == "accepted" {
				cancels++
			}
		}
	}
	if trig == nil || trig["actor"] != "system:deadman" {
		t.Fatalf("no deadman_triggered record:\n%s", dump.stdout)
	}
	if p := trig["payload"].(map[string]any); p["reason"] != "disconnect" || p["orders"] != float64(1) {
		t.Fatalf("deadman_triggered %v", p)
	}
	if cancels != 1 {
		t.Fatalf("%d accepted cancels by system:deadman, want 1", cancels)
	}
	// The journal with the switch's records replays: the next start reads it.
	if r := run(t, in.env(), "", "policy", "show", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"cancel_on_disconnect":true`) {
		t.Fatalf("after the dead-man's records: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// --deny-tool and GX_DENY_TOOLS: an unknown name refuses to start (exit 2,
// the entry named, not its text); a known one is hidden and refused.
func TestServeDenyTool(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	r := run(t, in.env(), "", "serve", "--deny-tool", "get_ticker", "--deny-tool", "no_such_tool")
	if r.code != 2 || !strings.Contains(r.stderr, "deny-tool entry 2 is not a tool") || strings.Contains(r.stderr, "no_such_tool") {
		t.Fatalf("unknown --deny-tool: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env("GX_DENY_TOOLS=get_ticker, nope"), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "GX_DENY_TOOLS") {
		t.Fatalf("unknown GX_DENY_TOOLS: %d %q", r.code, r.stderr)
	}
	cs, _ := connectStdio(t, in, "", "GX_DENY_TOOLS=get_ticker,get_klines")
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "get_ticker" || tl.Name == "get_klines" {
			t.Fatalf("%s is listed", tl.Name)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "permission_denied") {
		t.Fatalf("get_ticker: %v %+v", err, res)
	}
}

// A relayed client goes away: the engine fires the dead-man switch for the
// relayed session's user while its own session goes on; the relay
// client's --deny-tool list is added to the engine's for its session.
func TestRelayClientGoneFiresTheDeadmanSwitch(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	if r := run(t, in.env("GX_USER=bob"), "", "init"); r.code != 0 {
		t.Fatalf("init bob: %d %s", r.code, r.stderr)
	}
	if r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "bob", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "paper", "--cancel-on-disconnect", "true"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	engine, _ := connectStdio(t, in, "")
	defer engine.Close()
	relayed, _ := connectStdio(t, in, "", "GX_USER=bob", "GX_DENY_TOOLS=get_klines")
	tools, err := relayed.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "get_klines" {
			t.Fatal("the relay client's --deny-tool was not applied")
		}
	}
	res, err := relayed.CallTool(context.Background(), &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{
		"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30000"}})
	if err != nil || res.IsError {
		t.Fatalf("place_order: %v %+v", err, res)
	}
	if err := relayed.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := run(t, in.env(), "", "journal", "dump", "--type", "deadman_triggered", "--user", "bob")
		if strings.Contains(d.stdout, `"reason":"disconnect"`) {
			if !strings.Contains(d.stdout, `"orders":1`) {
				t.Fatalf("deadman_triggered: %s", d.stdout)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no deadman_triggered for bob after the relay client left: %q %q", d.stdout, d.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := engine.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("the engine's own session ended: %v", err)
	}
}
