package venue_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// benchClock is a manual clock shared by the simulator and the client.
type benchClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *benchClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *benchClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// BenchmarkCreateOrderInProcess measures one CreateOrder round trip
// (validation, body, signing, HTTP over the in-process dialer, the
// simulator's full signed handler with matching, ack decoding). Market
// orders alternate sides so the position stays small; the shared clock
// moves one second every 8 orders to stay inside the venue's 10 orders/s.
func BenchmarkCreateOrderInProcess(b *testing.B) {
	clock := &benchClock{t: time.UnixMilli(1_767_225_600_000).UTC()}
	p, err := sim.StartInProcess(sim.Config{Seed: 7, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	key := sim.Key{APIKey: "BENCHKEY0123456789", APISecret: "bench-secret-0123456789abcdefghijkl"}
	if _, err := p.Sim().ProvisionKey(key, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(1_000_000_000)}); err != nil {
		b.Fatal(err)
	}
	c, err := venue.NewClient(venue.Config{BaseURL: p.BaseURL(), HTTPClient: &http.Client{Transport: p.Transport()},
		APIKey: key.APIKey, APISecret: key.APISecret, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderType: "Market",
		Qty: decimal.RequireFromString("0.010")}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%8 == 7 {
			clock.Advance(time.Second)
		}
		req.Side = "Buy"
		if i%2 == 1 {
			req.Side = "Sell"
		}
		req.OrderLinkID = "gx-bench-" + strconv.Itoa(i)
		if _, err := c.CreateOrder(ctx, req); err != nil {
			b.Fatalf("order %d: %v", i, err)
		}
		i++
	}
}
