package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The simulator's per-key limit on /v5/order/create for linear (Bybit's
// default, 10 per rolling second; venue/sim/ratelimit.go). Each benchmark
// user has its own paper key, so it caps one user's place_order rate; the
// pacer keeps every user under it so that no call is refused.
const (
	simCreateLimit  = 10
	simCreateWindow = time.Second
)

// BenchmarkHTTPPlaceOrder drives 1, 100 and 1,000 concurrent trade users,
// each with their own bearer token, MCP session, funded paper key and a
// policy that confirms nothing, through the real HTTP stack on loopback:
// front checks → SDK handler → guard → user actor (policy, journal
// first) → venue actor → signed venue client → simulator. Every call is a
// small limit buy far below the market (it rests and moves no book) with
// its own idempotency key, and must come back accepted and resting: a
// refusal fails the benchmark.
//
// The simulator refuses more than 10 creates per key per rolling second,
// so each user is paced under that (the sleep is not in the latency):
// req/s is capped near 9 per user, which binds at 1 user (at 100 and
// 1,000 the server is slower than the cap). p50 and p99 are the path's
// latency either way; path-req/s is users divided by the mean latency,
// the rate the path would carry without that cap.
func BenchmarkHTTPPlaceOrder(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("%s/users=%d", eraName(""), n), func(b *testing.B) {
			h := newHTTPEnv(b, HTTPOptions{RatePerSecond: 1e6, Burst: 1e6})
			tokens := benchTradeUsers(b, h, n)
			var accepted atomic.Int64
			var busy atomic.Int64 // ns spent inside measured calls, for path-req/s
			call := func(ctx context.Context, cs *sdk.ClientSession, i, seq int) error {
				if seq > 0 { // measured calls only, not the serial warm-up
					t0 := time.Now()
					defer func() { busy.Add(int64(time.Since(t0))) }()
				}
				return placeBenchOrder(ctx, cs, fmt.Sprintf("bench-%d-%d", i, seq), &accepted)
			}
			runHTTPBench(b, h, tokens, "", call, newPacer(n, simCreateLimit, simCreateWindow))
			if got, want := accepted.Load(), int64(b.N+n); got != want {
				b.Fatalf("%d orders accepted, want %d (b.N plus one warm-up per user)", got, want)
			}
			if ns := busy.Load(); ns > 0 {
				b.ReportMetric(float64(n)*float64(b.N)/(float64(ns)/1e9), "path-req/s")
			}
		})
	}
}

// placeBenchOrder places one resting limit buy (0.001 BTC at 30000, far
// below the simulator's ~67000) and counts it if it was accepted and
// rests.
func placeBenchOrder(ctx context.Context, cs *sdk.ClientSession, key string, accepted *atomic.Int64) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{
		"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit",
		"qty": "0.001", "price": "30000", "idempotency_key": key,
	}})
	if err != nil {
		return err
	}
	if len(res.Content) != 1 {
		return fmt.Errorf("place_order: %d content blocks", len(res.Content))
	}
	text, _ := res.Content[0].(*sdk.TextContent)
	if text == nil {
		return fmt.Errorf("place_order: content is %T", res.Content[0])
	}
	if res.IsError {
		return fmt.Errorf("place_order refused: %s", text.Text)
	}
	var out struct {
		Status       string `json:"status"`
		OrderStatus  string `json:"order_status"`
		ResultSource string `json:"result_source"`
	}
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil {
		return fmt.Errorf("place_order: %v", err)
	}
	if out.Status != "accepted" || out.OrderStatus != "New" || out.ResultSource == "replay" {
		return fmt.Errorf("place_order: not a new resting order: %s", text.Text)
	}
	accepted.Add(1)
	return nil
}

// newPacer returns a pace function for n users that keeps each user's
// calls under limit per window as the venue counts them. The venue counts
// a call when it arrives, which is after the call starts and before the
// user's next call starts (calls are sequential per user), so any limit
// consecutive starts spanning more than window keep any limit+1
// consecutive arrivals more than window apart.
func newPacer(n, limit int, window time.Duration) func(i int) {
	const margin = 20 * time.Millisecond
	starts := make([][]time.Time, n) // user i's last limit-1 starts; only user i's goroutine touches it
	return func(i int) {
		s := starts[i]
		if len(s) == limit-1 {
			if wait := time.Until(s[0].Add(window + margin)); wait > 0 {
				time.Sleep(wait)
			}
			s = s[1:]
		}
		starts[i] = append(s, time.Now())
	}
}

// benchTradeUsers creates n trade users, each with a funded paper key of
// its own, a trade ceiling on linear:BTCUSDT that confirms nothing and
// limits nothing the benchmark reaches, and a token; it returns the tokens.
func benchTradeUsers(b *testing.B, h *httpEnv, n int) []string {
	b.Helper()
	ctx := context.Background()
	high := decimal.NewFromInt(1_000_000_000)
	maxCount := 100000
	trade, paper := messages.ProfileTrade, messages.VenuePaper
	ceiling := messages.PolicySettings{
		Profile: &trade, Allow: stringsp("linear:BTCUSDT"), VenueCeiling: &paper,
		ConfirmActions: stringsp(), ConfirmAboveNotionalUSDT: &high,
		MaxOrderNotionalUSDT: &high, DailyNotionalCapUSDT: &high,
		MaxOrdersPerMinute: &maxCount, MaxUnconfirmedActionsPerHour: &maxCount,
	}
	tokens := make([]string, n)
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tok, err := benchTradeUser(ctx, h, fmt.Sprintf("trader%04d", i), ceiling)
			if err != nil {
				failed.Store(err)
				return
			}
			tokens[i] = tok
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return tokens
}

func benchTradeUser(ctx context.Context, h *httpEnv, user string, ceiling messages.PolicySettings) (string, error) {
	var key struct {
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
	}
	if err := simPost(h.simURL+"/sim/keys", map[string]any{}, &key); err != nil {
		return "", err
	}
	if err := simPost(h.simURL+"/sim/accounts/"+key.APIKey+"/balances", map[string]string{"USDT": "1000000"}, nil); err != nil {
		return "", err
	}
	steps := []messages.Command{
		&messages.CreateUserRequest{User: user},
		&messages.AddCredentialRequest{User: user, Environment: "paper", APIKey: key.APIKey, APISecret: messages.NewSecret(key.APISecret)},
		&messages.SetCeilingRequest{User: user, Settings: ceiling},
	}
	for _, m := range steps {
		if _, err := h.sys.Submit(ctx, m, adminSocket); err != nil {
			return "", fmt.Errorf("%s: %T: %w", user, m, err)
		}
	}
	res, err := h.sys.Submit(ctx, &messages.IssueTokenRequest{User: user}, adminSocket)
	if err != nil {
		return "", err
	}
	return res.(*messages.TokenIssued).Token, nil
}

// simPost posts JSON to a simulator test endpoint.
func simPost(url string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d", url, resp.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(got, out)
	}
	return nil
}
