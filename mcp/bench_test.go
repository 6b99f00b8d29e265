package mcp

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGetTickerRoundTrip measures one get_ticker through MCP (in-memory
// transport) → guard → market actor → venue client → simulator on loopback.
// BenchmarkSimTickerAlone measures the simulator's own HTTP round trip; the
// difference is the server's overhead.
func BenchmarkGetTickerRoundTrip(b *testing.B) {
	e := newEnv(b)
	cs := connect(b, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, "")
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
