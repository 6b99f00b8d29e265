package mcp

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// wait_for_update answers once the simulator fills a resting order (the
// stream's push), before its timeout, with the order's row; and after
// timeout_s, saying nothing changed, when nothing does.
func TestWaitForUpdateFillAndTimeout(t *testing.T) {
	e := newEnvWith(t, true)
	outside := e.streamUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitStream(t, cs, outside)
	id := placeResting(t, cs, "30000")

	const timeout = 20
	ch := waitAsync(cs, map[string]any{"order_id": id, "timeout_s": timeout})
	time.Sleep(300 * time.Millisecond) // the watch is registered
	// The price falls through the order's: the simulator fills it at the
	// next second and pushes the order.
	simDo(t, http.MethodPost, e.simURL+"/sim/price", map[string]any{"category": "linear", "symbol": "BTCUSDT", "price": "29000"}, nil)
	r := <-ch
	if r.isErr || r.out["changed"] != true {
		t.Fatalf("wait_for_update: %v", r.out)
	}
	if r.took >= timeout*time.Second {
		t.Fatalf("answered after %s, at the timeout", r.took)
	}
	orders := rows(r.out, "orders")
	i := slices.IndexFunc(orders, func(o map[string]any) bool { return o["order_id"] == id })
	if i < 0 || orders[i]["status"] != "Filled" || orders[i]["filled_qty"] != "0.001" {
		t.Fatalf("the filled order's row is missing: %v", r.out)
	}

	// Nothing on ETHUSDT changes: the answer comes after timeout_s.
	start := time.Now()
	out, isErr := callJSON(t, cs, "wait_for_update", map[string]any{"symbol": "ETHUSDT", "timeout_s": 1})
	if isErr || out["changed"] != false || out["orders"] != nil || out["notice"] == nil {
		t.Fatalf("timeout: %v", out)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("answered after %s, before timeout_s", took)
	}
}

// A position change on the symbol wakes a symbol watch with the
// position's row.
func TestWaitForUpdateSymbolSeesThePosition(t *testing.T) {
	e := newEnvWith(t, true)
	outside := e.streamUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitStream(t, cs, outside)
	ch := waitAsync(cs, map[string]any{"symbol": "BTCUSDT", "timeout_s": 20})
	time.Sleep(300 * time.Millisecond)
	out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.001"})
	if isErr {
		t.Fatalf("place_order: %v", out)
	}
	r := <-ch
	if r.isErr || r.out["changed"] != true || len(rows(r.out, "orders"))+len(rows(r.out, "positions")) == 0 {
		t.Fatalf("wait_for_update: %v", r.out)
	}
}

// Bad arguments are invalid_params naming the field; a user without a
// stream is told to read instead.
func TestWaitForUpdateInvalidParams(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly)}, "")
	for _, c := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"symbol": "BTCUSDT"}, "timeout_s"},
		{map[string]any{"symbol": "BTCUSDT", "timeout_s": 0}, "timeout_s"},
		{map[string]any{"symbol": "BTCUSDT", "timeout_s": 31}, "timeout_s"},
		{map[string]any{"symbol": "BTCUSDT", "timeout_s": "5"}, "timeout_s"},
		{map[string]any{"symbol": "BTCUSDT", "timeout_s": 1.5}, "timeout_s"},
		{map[string]any{"timeout_s": 5}, "order_id"},
		{map[string]any{"order_id": "../etc", "timeout_s": 5}, "order_id"},
		{map[string]any{"symbol": "btc usdt", "timeout_s": 5}, "symbol"},
		{map[string]any{"symbol": "BTCUSDT", "timeout_s": 5, "heartbeat_s": 0}, "heartbeat_s"},
	} {
		out, isErr := callJSON(t, cs, "wait_for_update", c.args)
		if !isErr || out["code"] != "invalid_params" {
			t.Fatalf("%v: %v", c.args, out)
		}
		if d, _ := out["details"].(map[string]any); d["field"] != c.field {
			t.Fatalf("%v: details %v, want field %s", c.args, out["details"], c.field)
		}
	}
	// alice has no key here: nothing to watch.
	out, isErr := callJSON(t, cs, "wait_for_update", map[string]any{"symbol": "BTCUSDT", "timeout_s": 1})
	if !isErr || out["next_step"] == nil {
		t.Fatalf("no key: %v", out)
	}
}

// BenchmarkWaitForUpdateLatency measures the time from an order push
// (the simulator applies an outside order and pushes it before its REST
// answer; the time is taken before the REST call, so it is an upper bound)
// to wait_for_update's answer; target at most 200 ms. It reports the
// median as p50-ms.
func BenchmarkWaitForUpdateLatency(b *testing.B) {
	e := newEnvWith(b, true)
	outside := e.streamUser(b, "alice", messages.PolicySettings{})
	cs := connect(b, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), CallsPerSecond: 1e9, CallBurst: 1e9}, "")
	waitStream(b, cs, outside)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		ch := waitAsync(cs, map[string]any{"symbol": "BTCUSDT", "timeout_s": 10})
		// The watch is registered, and the simulator's order rate limit
		// (10 creates a second per key) is kept.
		time.Sleep(120 * time.Millisecond)
		pushed := time.Now()
		outsideOrder(b, outside, "20000", fmt.Sprintf("bench-%d", i))
		r := <-ch
		if r.isErr || r.out["changed"] != true {
			b.Fatalf("wait_for_update: %v", r.out)
		}
		lat = append(lat, time.Since(pushed))
		i++
		if i%40 == 0 { // keep the open orders few
			_, _ = cs.CallTool(context.Background(), toolParams("cancel_all_orders", map[string]any{"symbol": "BTCUSDT", "category": "linear"}))
		}
	}
	b.ReportMetric(float64(medianOf(lat).Microseconds())/1000, "p50-ms")
}

// One session may keep at most MaxWaitsPerSession waits in flight, below
// the stdio transport's MaxInFlight, so a session full of waits still
// gets a ping and other calls answered: of one wait more than the bound,
// started together, exactly one is refused at once with rate_limited.
func TestWaitForUpdateBoundPerSession(t *testing.T) {
	if MaxWaitsPerSession >= MaxInFlight {
		t.Fatalf("MaxWaitsPerSession %d must stay below MaxInFlight %d", MaxWaitsPerSession, MaxInFlight)
	}
	e := newEnvWith(t, true)
	outside := e.streamUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), CallBurst: 100}, "")
	waitStream(t, cs, outside)
	const timeout = 5
	results := make(chan waitResult, MaxWaitsPerSession+1)
	for range MaxWaitsPerSession + 1 {
		go func() { results <- <-waitAsync(cs, map[string]any{"symbol": "ETHUSDT", "timeout_s": timeout}) }()
	}
	first := <-results
	if !first.isErr || first.out["code"] != string(messages.CodeRateLimited) ||
		first.out["details"].(map[string]any)["limit"] != float64(MaxWaitsPerSession) || first.took >= timeout*time.Second {
		t.Fatalf("the wait over the bound: %v after %s", first.out, first.took)
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping while the session's waits are in flight: %v", err)
	}
	if out, isErr := callJSON(t, cs, "get_my_policy", map[string]any{}); isErr {
		t.Fatalf("a call while the session's waits are in flight: %v", out)
	}
	for range MaxWaitsPerSession {
		if r := <-results; r.isErr || r.out["changed"] != false {
			t.Fatalf("a wait within the bound: %v", r.out)
		}
	}
}
