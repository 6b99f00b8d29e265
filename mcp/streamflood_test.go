package mcp

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// floodedEnv is the posture stack with a hostile proxy in front of the
// simulator's private stream, a trade user "alice" whose stream is
// subscribed through it, and an MCP session of hers without a call budget.
func floodedEnv(t testing.TB, settings messages.PolicySettings) (*env, *hostile.Proxy, *sdk.ClientSession) {
	t.Helper()
	var proxy *hostile.Proxy
	e := newPostureEnv(t, postureConfig{streamVia: func(ws string) string {
		p, err := hostile.New(ws)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		proxy = p
		return p.URL()
	}})
	e.tradeUser(t, "alice", settings)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), CallsPerSecond: 1e9, CallBurst: 1e9}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := proxy.WaitSubscribed(ctx, 1); err != nil {
		t.Fatalf("the private stream never subscribed through the proxy: %v", err)
	}
	return e, proxy, cs
}

// forgedOrder is the i-th push of a flood: an external order the account
// never placed, each with its own order id (nothing to coalesce).
func forgedOrder(i int) []byte {
	return hostile.Push("order", hostile.Order(map[string]any{
		"orderId": fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), "orderLinkId": fmt.Sprintf("ext-%d", i),
	}))
}

// heapPeak samples the live heap every 50 ms until stop is called and
// answers the highest sample.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A flood of forged order pushes (20,000 a second) cannot take the kill
// switch away: activate_kill_switch answers and the switch is on while
// the flood goes on, reads answer, the journal keeps a bounded number of
// venue_update records and bytes per push, and the heap does not grow
// with the pushes (docs/architecture.md, the private stream path).
func TestKillSwitchAnswersDuringAStreamFlood(t *testing.T) {
	e, proxy, cs := floodedEnv(t, messages.PolicySettings{})
	base := liveHeap()
	peak := heapPeak()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const perSecond, floodFor = 20000, 4 * time.Second
	var pushed atomic.Int64
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		pushed.Store(int64(proxy.Flood(ctx, perSecond, floodFor, forgedOrder)))
	}()
	// Well into the flood: a second's worth of pushes reached the client.
	deadline := time.Now().Add(20 * time.Second)
	for proxy.Injected() < perSecond && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if proxy.Injected() < perSecond {
		t.Fatalf("the flood did not get going: %d pushes", proxy.Injected())
	}

	// Liveness only (speed is BenchmarkKillSwitchDuringAStreamFlood's):
	// the kill switch answers at all, and is on, while the flood goes on.
	kctx, kcancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := cs.CallTool(kctx, &sdk.CallToolParams{Name: "activate_kill_switch", Arguments: map[string]any{}})
	kcancel()
	if err != nil || res.IsError {
		t.Fatalf("activate_kill_switch during the flood: %v %+v", err, res)
	}
	// A read of the user's state, and one through the venue actor that
	// owns the stream.
	for _, read := range []string{"get_my_policy", "get_positions"} {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		res, err = cs.CallTool(rctx, &sdk.CallToolParams{Name: read, Arguments: map[string]any{}})
		rcancel()
		if err != nil || res.IsError {
			t.Fatalf("%s during the flood: %v %+v", read, err, res)
		}
	}
	flooding := proxy.Injected() < int(perSecond*floodFor.Seconds())
	<-flooded
	if !flooding {
		t.Logf("the flood ended before the calls answered (%d pushes)", proxy.Injected())
	}
	if p := posture(t, cs); p["kill_switch"] != string(messages.KillSwitchUser) {
		t.Fatalf("the kill switch is not on after the flood: %v", p)
	}
	// The peak counts garbage the collector had not reached yet, which
	// depends on its timing: its bound is loose. What the flood leaves
	// behind, after a collection, is the measure of growth with the
	// pushes, and its bound is tight.
	grown := int64(peak()) - int64(base)
	kept := int64(liveHeap()) - int64(base)
	n := pushed.Load()
	t.Logf("%d pushes; live heap %d MB before, peak %+d MB, kept %+d MB", n, base>>20, grown>>20, kept>>20)
	if grown > 160<<20 {
		t.Fatalf("the heap grew by %d MB under %d pushes: it grows with the flood", grown>>20, n)
	}
	if kept > 24<<20 {
		t.Fatalf("the flood of %d pushes left %d MB on the heap", n, kept>>20)
	}

	var on, updates, bytes int
	for _, r := range e.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordKillSwitchOn:
			on++
		case messages.RecordVenueUpdate:
			updates++
			bytes += len(r.Payload)
		}
	}
	t.Logf("journal: %d venue_update records, %d bytes for %d pushes", updates, bytes, n)
	if on == 0 {
		t.Fatal("the journal shows no kill_switch_on")
	}
	// One record per drain, at most every 200 ms, each with at most 32
	// rows of external orders: far fewer records than pushes, and a few
	// bytes a push (one record per push took about 265).
	if updates > int(n)/100+10 || bytes > 64*int(n)+256<<10 {
		t.Fatalf("the journal grew with the pushes: %d venue_update records, %d bytes for %d pushes", updates, bytes, n)
	}
}

// A stream that reconnects every 200 ms is not healthy, although it is
// never down for long: posture goes REDUCING for stream_stale within
// stream_stale_s of the flapping, and comes back by itself once it stops:
// once the reconnects have thinned out (at most 5 in the last minute) and
// a connection held 3 s (docs/decisions.md D90).
func TestPostureStreamStaleCountsFlaps(t *testing.T) {
	stale := 2
	e, proxy, cs := floodedEnv(t, messages.PolicySettings{StreamStaleS: &stale})
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)

	stop := proxy.Flap(200 * time.Millisecond)
	defer stop()
	start := time.Now()
	p := waitPosture(t, cs, time.Duration(stale)*time.Second+10*time.Second, "REDUCING for stream_stale while flapping",
		stateIs("REDUCING", messages.CauseStreamStale))
	t.Logf("REDUCING %.1f s into the flapping (%d connections): %v", time.Since(start).Seconds(), proxy.Accepted(), p["stream"])
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, out, isErr, messages.CauseStreamStale)

	stop()
	waitPosture(t, cs, time.Minute+15*time.Second, "ACTIVE again once the flapping stopped", streamConnected)
	recs := postureRecords(t, e)
	if !hasTransition(t, recs, messages.ActorSystem, messages.CauseStreamStale, "ACTIVE", "REDUCING") ||
		!hasTransition(t, recs, messages.ActorSystem, messages.CauseStreamStale+"_cleared", "REDUCING", "ACTIVE") {
		t.Fatalf("the journal does not show stream_stale entering and clearing: %d posture records", len(recs))
	}
}
