package mcp

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// benchUsers creates n users with a token each, concurrently (the journal
// commits them in groups), and returns their tokens.
func benchUsers(b *testing.B, h *httpEnv, n int) []string {
	b.Helper()
	ctx := context.Background()
	tokens := make([]string, n)
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			u := fmt.Sprintf("bench%04d", i)
			if _, err := h.sys.Submit(ctx, &messages.CreateUserRequest{User: u}, adminSocket); err != nil {
				failed.Store(err)
				return
			}
			res, err := h.sys.Submit(ctx, &messages.IssueTokenRequest{User: u}, adminSocket)
			if err != nil {
				failed.Store(err)
				return
			}
			tokens[i] = res.(*messages.TokenIssued).Token
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return tokens
}

// BenchmarkHTTPGetTicker drives 1, 100 and 1,000 concurrent users, each
// with their own bearer token and MCP session (2026-07-28 on the stateless
// handler; 2025-11-25 on the stateful one, each session holding its
// standalone stream open),
// through the real HTTP stack on loopback: front checks → SDK handler →
// guard → System's public read → venue client → simulator. It reports p50 and p99
// latency per call and calls per second, and the heap each connected user
// costs (heap-B/user, measured after all sessions connected and one call
// each).
func BenchmarkHTTPGetTicker(b *testing.B) {
	for _, era := range []string{"", "2025-11-25"} {
		for _, n := range []int{1, 100, 1000} {
			benchHTTPGetTicker(b, era, n)
		}
	}
}

func benchHTTPGetTicker(b *testing.B, era string, n int) {
	b.Run(fmt.Sprintf("%s/users=%d", eraName(era), n), func(b *testing.B) {
		h := newHTTPEnv(b, HTTPOptions{RatePerSecond: 1e6, Burst: 1e6})
		tokens := benchUsers(b, h, n)
		params := &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear"}}
		call := func(ctx context.Context, cs *sdk.ClientSession, _, _ int) error {
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				return err
			}
			if res.IsError {
				return fmt.Errorf("get_ticker: tool error %v", res.Content)
			}
			return nil
		}
		runHTTPBench(b, h, tokens, era, call, nil)
	})
}

// eraName names a protocol era in a sub-benchmark ("" is the default).
func eraName(era string) string {
	if era == "" {
		return "era=2026-07-28"
	}
	return "era=" + era
}

// benchCall makes call number seq of user i on the user's session and
// returns an error unless the call succeeded.
type benchCall func(ctx context.Context, cs *sdk.ClientSession, i, seq int) error

// runHTTPBench connects one MCP session per token over a shared loopback
// transport, makes one warm-up call per session (seq 0), then spreads
// b.N calls over all users concurrently, each user calling in a closed
// loop. pace, when set, is called before each measured call of user i
// and may sleep (a per-user limit the venue imposes); the time it sleeps
// is not in the latency. Any failed call fails the benchmark. It reports
// p50 and p99 latency, calls per second, and the heap each connected user
// costs (heap-B/user, after all sessions connected and one call each).
func runHTTPBench(b *testing.B, h *httpEnv, tokens []string, era string, call benchCall, pace func(i int)) {
	b.Helper()
	n := len(tokens)
	ctx := context.Background()
	tr := &http.Transport{MaxIdleConns: 2 * n, MaxIdleConnsPerHost: 2 * n, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sessions := make([]*sdk.ClientSession, n)
	for i, tok := range tokens {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint: h.url, HTTPClient: &http.Client{Transport: bearerTransport{tok, tr}}, MaxRetries: -1,
		}, &sdk.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			b.Fatalf("connect %d: %v", i, err)
		}
		sessions[i] = cs
		if pace != nil {
			pace(i)
		}
		if err := call(ctx, cs, i, 0); err != nil {
			b.Fatalf("warm-up call %d: %v", i, err)
		}
	}
	b.Cleanup(func() {
		for _, cs := range sessions {
			_ = cs.Close()
		}
	})
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perUser := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)

	lat := make([][]time.Duration, n)
	var next atomic.Int64
	total := int64(b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Value
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; next.Add(1) <= total; seq++ {
				if pace != nil {
					pace(i)
				}
				t0 := time.Now()
				if err := call(ctx, sessions[i], i, seq); err != nil {
					failed.Store(fmt.Errorf("user %d call %d: %w", i, seq, err))
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	if len(all) != b.N {
		b.Fatalf("%d of %d calls measured", len(all), b.N)
	}
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(perUser, "heap-B/user")
}

// bearerTransport adds a bearer token over a shared transport.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
