package mcp

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkGetTickerRoundTrip measures one get_ticker through MCP (in-memory
// transport) → guard → System's public read → venue client → simulator on loopback.
// BenchmarkSimTickerAlone measures the simulator's own HTTP round trip; the
// difference is the server's overhead.
func BenchmarkGetTickerRoundTrip(b *testing.B) {
	e := newEnv(b)
	cs := connect(b, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly), CallsPerSecond: 1e9, CallBurst: 1e9}, "")
	ctx := context.Background()
	params := &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear"}}
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(float64(medianOf(ds).Nanoseconds())/1000, "median-µs")
}

func BenchmarkSimTickerAlone(b *testing.B) {
	e := newEnv(b)
	url := e.simURL + "/v5/market/tickers?category=linear&symbol=BTCUSDT"
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(float64(medianOf(ds).Nanoseconds())/1000, "median-µs")
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkStateChangingToolCall measures one state-changing tool call end
// to end: activate_kill_switch through MCP (in-memory transport) → guard
// (tool_call record) → user actor → journal → answer. Each iteration turns
// the switch on (timed) and a human turns it off again (not timed), so every
// timed call changes state. journal-µs is one durable journal write alone
// (one fsync) measured on the same journal; overhead-µs is the difference;
// server-µs subtracts the MCP floor (a tool call that does nothing) too.
// Target: one fsync plus ≤ 100 µs.
//
// The call and the lone write are each measured right after an untimed
// write has come back (barrier): the journal is idle, nothing queued ahead
// of them (the human's untimed switch-off was, and a write measured right
// behind it paid for the flusher finishing that one's turn).
func BenchmarkStateChangingToolCall(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	if _, err := e.sys.Handle(ctx, &messages.CreateUserRequest{User: "kim"}, messages.ActorCLIAdmin); err != nil {
		b.Fatal(err)
	}
	noop := &tool{name: "test_noop", title: "noop", description: "noop", kind: KindRead, schema: objectSchema(nil, map[string]any{}),
		handle: func(context.Context, *call) (any, error) { return map[string]any{}, nil }}
	cs := connect(b, Options{Backend: e.sys, Principal: fixedPrincipal("kim", ProfileReadOnly), extraTools: []*tool{noop}, CallsPerSecond: 1e9, CallBurst: 1e9}, "")
	noopParams := &sdk.CallToolParams{Name: "test_noop", Arguments: map[string]any{}}
	write := func() time.Duration {
		start := time.Now()
		if _, err := e.sys.JournalJSON(ctx, messages.RecordServerStarted, "", messages.ActorSystem, map[string]any{"bench": true}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var ds, js, ns []time.Duration
	for b.Loop() {
		b.StopTimer()
		write() // barrier: the last round's switch-off is behind us
		b.StartTimer()
		ds = append(ds, killSwitchRound(b, e, cs, "kim"))
		b.StopTimer()
		write() // barrier again, then the lone write as the call had it
		js = append(js, write())
		b.StartTimer()
	}
	// The floor is measured apart: a read's tool_call is flushed on its
	// own, and interleaved it would hold the disk when the next state
	// change arrives.
	b.StopTimer()
	for range 200 {
		start := time.Now()
		if res, err := cs.CallTool(ctx, noopParams); err != nil || res.IsError {
			b.Fatalf("noop: %v %+v", err, res)
		}
		ns = append(ns, time.Since(start))
	}
	call, journal, floor := medianOf(ds), medianOf(js), medianOf(ns)
	b.ReportMetric(float64(call.Microseconds()), "median-µs")
	b.ReportMetric(float64(journal.Microseconds()), "journal-µs")
	b.ReportMetric(float64((call - journal).Microseconds()), "overhead-µs")
	// mcp-floor-µs is a tool call that does nothing (the SDK's in-memory
	// round trip and the guard); server-µs is what the state change adds
	// beyond that floor and the fsync.
	b.ReportMetric(float64(floor.Microseconds()), "mcp-floor-µs")
	b.ReportMetric(float64((call - journal - floor).Microseconds()), "server-µs")
}
