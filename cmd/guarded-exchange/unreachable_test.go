package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// With the exchange unreachable (its port closed), serve answers
// initialize, tools/list and the journal at once, and a trading call is
// answered with a retryable exchange_unavailable, nothing sent, instead of
// waiting.
func TestServeWithTheExchangeUnreachable(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	s := sim.New(sim.Config{Seed: 5})
	srv := httptest.NewServer(s.Handler())
	demo := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + srv.URL, "GX_BYBIT_WS_PRIVATE_URL=ws" + srv.URL[len("http"):] + "/v5/private",
		"GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true"}
	key := s.DefaultKey()
	if r := run(t, in.env(demo...), key.APIKey+"\n"+key.APISecret+"\n", "keys", "add"); r.code != 0 {
		t.Fatalf("keys add: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, in.env(demo...), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "demo"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	srv.Close() // from now on nothing listens there

	cs, _ := connectStdio(t, in, "", demo...)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, &sdk.ListToolsParams{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_journal", Arguments: map[string]any{"limit": 5}}); err != nil || res.IsError {
		t.Fatalf("get_my_journal: %v %+v", err, res)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear",
		"side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30000"}})
	if err != nil || !res.IsError {
		t.Fatalf("place_order with the exchange unreachable: %v %+v", err, res)
	}
	var e struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &e); err != nil || e.Code != "exchange_unavailable" {
		t.Fatalf("place_order: %s", res.Content[0].(*sdk.TextContent).Text)
	}
	if r := run(t, in.env(), "", "journal", "dump", "--type", "order_attempt"); r.code != 0 || r.stdout != "" {
		t.Fatalf("an attempt was journaled: %d %q", r.code, r.stdout)
	}
}

// BenchmarkServeSpawnToToolsListUnreachable is BenchmarkServeSpawnToToolsList
// on bybit-demo with a stored key and the exchange's port closed: start-up
// never waits on the network, so it should take the same time.
func BenchmarkServeSpawnToToolsListUnreachable(b *testing.B) {
	in := newInstall(b)
	s := sim.New(sim.Config{Seed: 5})
	srv := httptest.NewServer(s.Handler())
	demo := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + srv.URL, "GX_BYBIT_WS_PRIVATE_URL=ws" + srv.URL[len("http"):] + "/v5/private",
		"GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true", "GX_LOG_LEVEL=warn"}
	key := s.DefaultKey()
	if r := run(b, in.env(demo...), key.APIKey+"\n"+key.APISecret+"\n", "keys", "add"); r.code != 0 {
		b.Fatalf("keys add: %d %s", r.code, r.stderr)
	}
	srv.Close()
	var durations []time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "serve")
		cmd.Env = in.env(demo...)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`+"\n")
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"id":2`)) {
				break
			}
		}
		durations = append(durations, time.Since(start))
		stdin.Close()
		io.Copy(io.Discard, stdout)
		cmd.Wait()
	}
	b.ReportMetric(float64(median(durations).Microseconds())/1000, "median-ms")
}
