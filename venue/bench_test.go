package venue

import (
	"context"
	"net/http"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkTickerRoundTrip measures one Ticker call against a loopback
// server serving the recorded linear ticker (request build, HTTP over
// 127.0.0.1 keep-alive, envelope and decimal parsing).
func BenchmarkTickerRoundTrip(b *testing.B) {
	body := readTestdata(b, "v5-market-tickers.linear.ccxt.json")
	srv := newBenchServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	c, err := NewClient(Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Ticker(ctx, messages.CategoryLinear, "BTCUSDT"); err != nil {
			b.Fatal(err)
		}
	}
}
