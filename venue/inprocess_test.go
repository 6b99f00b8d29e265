package venue_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// The REST client reaches the in-process paper venue through an injected
// transport: public and signed calls work, and clients built from one
// http.Client share its transport. A client handed the transport but
// another base URL reaches nothing.
func TestClientOverInProcessTransport(t *testing.T) {
	p, err := sim.StartInProcess(sim.Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := sim.Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret-0123456789abcdefghijkl"}
	if _, err := p.Sim().ProvisionKey(key, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: p.Transport(), Timeout: venue.DefaultHTTPTimeout}
	c, err := venue.NewClient(venue.Config{BaseURL: p.BaseURL(), HTTPClient: hc, APIKey: key.APIKey, APISecret: key.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if tk, err := c.Ticker(ctx, messages.CategoryLinear, "BTCUSDT"); err != nil || !tk.LastPrice.IsPositive() {
		t.Fatalf("ticker %+v %v", tk, err)
	}
	info, err := c.QueryAPIKey(ctx)
	if err != nil || info.ReadOnly {
		t.Fatalf("query-api %+v %v", info, err)
	}
	wb, err := c.WalletBalance(ctx)
	if err != nil || len(wb.Coins) != 1 || !wb.Coins[0].WalletBalance.Equal(decimal.NewFromInt(10000)) {
		t.Fatalf("wallet %+v %v", wb, err)
	}

	other, err := venue.NewClient(venue.Config{BaseURL: "http://127.0.0.1:1", HTTPClient: hc, ReadRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.ServerTime(ctx); messages.CodeOf(err) != messages.CodeExchangeUnavailable {
		t.Fatalf("another base URL through the in-process transport: %v", err)
	}
}

// BenchmarkTickerInProcess measures one Ticker read against the simulator
// through the in-process transport; BenchmarkTickerLoopback the same
// against the simulator on a loopback TCP port, for comparison.
func BenchmarkTickerInProcess(b *testing.B) {
	p, err := sim.StartInProcess(sim.Config{Seed: 7, NoPublicRateLimit: true})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	benchTicker(b, p.BaseURL(), &http.Client{Transport: p.Transport()})
}

func BenchmarkTickerLoopback(b *testing.B) {
	srv, err := sim.Start(sim.Config{Seed: 7, NoPublicRateLimit: true}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	benchTicker(b, srv.Announcement().REST, nil)
}

func benchTicker(b *testing.B, base string, hc *http.Client) {
	c, err := venue.NewClient(venue.Config{BaseURL: base, HTTPClient: hc})
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
