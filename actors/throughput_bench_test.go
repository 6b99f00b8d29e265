package actors

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// BenchmarkDurableOrders1000Users measures durable orders per second:
// 1,000 trade users, each with its own paper key on the in-process
// simulator (the embedded paper venue's transport: no port), place resting
// limit buys at once through the whole action path (place_order as the
// agent: policy, market read, order_attempt durable, the venue's create
// and read-back, order_outcome durable, the answer). Every answer must be
// accepted; orders/s counts answered orders over the wall time, and the
// journal's group commit is what lets them share fsyncs (fsyncs/order).
// One op is one round of 1,000 orders (one per user, all at once); rounds
// start at most every 150 ms, so no key goes over the venue's 10 creates
// per second (the pause is not timed).
func BenchmarkDurableOrders1000Users(b *testing.B) {
	const users = 1000
	p, err := sim.StartInProcess(sim.Config{Seed: 11, NoPublicRateLimit: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	hc := &http.Client{Transport: p.Transport(), Timeout: venue.DefaultHTTPTimeout}
	ts := startUsersWith(b, b.TempDir(), func(c *Config) {
		c.Environment, c.MasterKey = "paper", make([]byte, 32)
		c.Clients = func(k, s string) (*venue.Client, error) {
			return venue.NewClient(venue.Config{BaseURL: p.BaseURL(), HTTPClient: hc, APIKey: k, APISecret: s})
		}
	})
	high := decimal.NewFromInt(1_000_000_000)
	maxCount := 100000
	trade, paper := messages.ProfileTrade, messages.VenuePaper
	ceiling := messages.PolicySettings{Profile: &trade, Allow: strs("linear:BTCUSDT"), VenueCeiling: &paper, ConfirmActions: strs(),
		ConfirmAboveNotionalUSDT: &high, MaxOrderNotionalUSDT: &high, DailyNotionalCapUSDT: &high,
		MaxOrdersPerMinute: &maxCount, MaxUnconfirmedActionsPerHour: &maxCount}
	ctx := context.Background()
	var setup sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range users {
		setup.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; setup.Done() }()
			user := fmt.Sprintf("t%04d", i)
			key := sim.Key{APIKey: fmt.Sprintf("BENCHKEY%010d", i), APISecret: fmt.Sprintf("bench-secret-%024d", i)}
			if _, err := p.Sim().ProvisionKey(key, map[string]decimal.Decimal{"USDT": high}); err != nil {
				b.Error(err)
				return
			}
			for _, cmd := range []messages.Command{
				&messages.CreateUserRequest{User: user},
				&messages.AddCredentialRequest{User: user, Environment: "paper", APIKey: key.APIKey, APISecret: messages.NewSecret(key.APISecret)},
				&messages.SetCeilingRequest{User: user, Settings: ceiling},
			} {
				if _, err := ts.Handle(ctx, cmd, messages.ActorCLIAdmin); err != nil {
					b.Errorf("%s: %T: %v", user, cmd, err)
					return
				}
			}
		}()
	}
	setup.Wait()
	if b.Failed() {
		b.FailNow()
	}
	place := func(user string, n int) (time.Duration, error) {
		a := messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit",
			Qty: decimal.RequireFromString("0.001"), Price: decimal.NewNullDecimal(decimal.RequireFromString("30000")),
			IdempotencyKey: fmt.Sprintf("k-%d", n)}
		start := time.Now()
		res, err := ts.Handle(ctx, &messages.PlaceOrderCommand{User: user, Args: a}, messages.ActorAgent)
		d := time.Since(start)
		if err != nil {
			return d, err
		}
		if ans, ok := res.(*messages.OrderAnswer); !ok || ans.Status != "accepted" || ans.ResultSource == messages.ResultSourceReplay {
			return d, fmt.Errorf("not a new accepted order: %+v", res)
		}
		return d, nil
	}
	seq := 0
	var lat []time.Duration
	var mu sync.Mutex
	var done atomic.Int64
	flushes0, cpu0 := ts.Flushes(), processCPU()
	elapsed := time.Duration(0)
	for b.Loop() {
		// One round: every user places one order, all at once.
		seq++
		var wg sync.WaitGroup
		start := time.Now()
		for i := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := place(fmt.Sprintf("t%04d", i), seq)
				if err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}()
		}
		wg.Wait()
		elapsed += time.Since(start)
		if b.Failed() {
			b.FailNow()
		}
		// One order per user per round, and a round every 150 ms at
		// most: no key goes over the venue's 10 creates per second.
		b.StopTimer()
		if rest := 150*time.Millisecond - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
		b.StartTimer()
	}
	n := done.Load()
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "orders/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(ts.Flushes()-flushes0)/float64(n), "fsyncs/order")
	// The process's CPU time per order (server and simulator together,
	// the untimed pauses included, which are idle): steadier than the
	// wall time on a shared machine.
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(n), "cpu-µs/order")
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
