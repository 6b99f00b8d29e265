package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// hangingVenue is a loopback venue that answers normally until hang is
// set; from then on it accepts every connection and never answers.
type hangingVenue struct {
	hang              atomic.Bool
	started, finished atomic.Int64 // hung requests
}

func (h *hangingVenue) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.hang.Load() {
			next.ServeHTTP(w, r)
			return
		}
		h.started.Add(1)
		defer h.finished.Add(1)
		<-r.Context().Done() // until the client gives up
	})
}

// Nothing on serve's start-up path waits on the network: against an
// exchange that accepts connections and never answers, serve answers
// initialize and tools/list while the start-up key check is still pending.
func TestServeStartsWhileTheKeyCheckHangs(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	s := sim.New(sim.Config{Seed: 5})
	hv := &hangingVenue{}
	srv := httptest.NewServer(hv.wrap(s.Handler()))
	defer srv.Close()
	env := in.env("GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL="+srv.URL, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true")
	key := s.DefaultKey()
	if r := run(t, env, key.APIKey+"\n"+key.APISecret+"\n", "keys", "add"); r.code != 0 {
		t.Fatalf("keys add on bybit-demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	hv.hang.Store(true)

	// connectStdio's safety timeout (30 s) is far above the venue
	// timeout (10 s); what is asserted is that the answers came while the
	// key check had not finished, not how fast they came.
	cs, _ := connectStdio(t, in, "", "GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL="+srv.URL, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true")
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, &sdk.ListToolsParams{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	if n := hv.finished.Load(); n != 0 {
		t.Fatalf("%d hung venue requests had already ended when tools/list answered: start-up waited on the network", n)
	}
	// The key check does reach the venue (and hangs there).
	deadline := time.Now().Add(20 * time.Second)
	for hv.started.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if hv.started.Load() == 0 {
		t.Fatal("the start-up key check never reached the venue")
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_my_policy while the key check hangs: %v %+v", err, res)
	}
	if n := hv.finished.Load(); n != 0 {
		t.Fatalf("the hung key check ended (%d) before get_my_policy answered", n)
	}
}

// The key re-check runs after serve's first answers, but a trading call
// never overtakes it: against an exchange that never answers, a
// place_order sent as soon as the session is open waits for the re-check
// and is answered exchange_unavailable (checking_key), nothing sent,
// while a read made meanwhile is answered at once.
func TestServeHoldsTradingUntilTheStartupKeyCheck(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	s := sim.New(sim.Config{Seed: 5})
	hv := &hangingVenue{}
	srv := httptest.NewServer(hv.wrap(s.Handler()))
	defer srv.Close()
	venueEnv := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + srv.URL, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true"}
	key := s.DefaultKey()
	if r := run(t, in.env(venueEnv...), key.APIKey+"\n"+key.APISecret+"\n", "keys", "add"); r.code != 0 {
		t.Fatalf("keys add on bybit-demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, in.env(venueEnv...), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	hv.hang.Store(true)

	cs, _ := connectStdio(t, in, "2025-11-25", venueEnv...)
	defer cs.Close()
	type answer struct {
		out   map[string]any
		isErr bool
		took  time.Duration
	}
	placed := make(chan answer, 1)
	start := time.Now()
	go func() {
		out, isErr := callTool(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy",
			"order_type": "Limit", "qty": "0.001", "price": "30000"})
		placed <- answer{out, isErr, time.Since(start)}
	}()
	if _, isErr := callTool(t, cs, "get_my_policy", map[string]any{}); isErr {
		t.Fatal("get_my_policy refused while the key check hangs")
	}
	select {
	case a := <-placed:
		t.Fatalf("place_order answered before the key check ended: %v", a.out)
	default:
	}
	a := <-placed
	details, _ := a.out["details"].(map[string]any)
	if !a.isErr || a.out["code"] != "exchange_unavailable" || details["reason"] != "checking_key" {
		t.Fatalf("place_order during the start-up key check: %v", a.out)
	}
	if a.took < 4*time.Second {
		t.Fatalf("place_order was answered after %s, before the hold's bound", a.took)
	}
}
