package control_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkApprovalToWire is channel 2 of docs/tools.md "Confirmation" end to end, with real
// components: an order parked for confirmation, then `confirm approve`
// as the CLI sends it (cli.ControlClient over the real control socket) →
// the control server → the user actor (confirmation_decided journaled,
// fsync) → the execution message (confirmation_executed, order_attempt,
// each fsynced) → the venue actor → the order arriving at the loopback
// simulator. It reports the p50 of approval → order on the wire
// (ms-to-wire-p50) and of the whole approval round trip, the answer
// coming back once the outcome is durable (ms-roundtrip-p50). Only the
// approvals are timed; the simulator's order rate limit (10/s per key) is
// kept by pausing, untimed, between them.
func BenchmarkApprovalToWire(b *testing.B) {
	var arrived atomic.Int64
	dir := b.TempDir()
	stack := testkit.Start(b, testkit.Options{
		SimOptions: testkit.SimOptions{Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10_000_000)},
			Wrap: func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/v5/order/create" {
						arrived.Store(time.Now().UnixNano())
					}
					h.ServeHTTP(w, r)
				})
			}},
		Dir: filepath.Join(dir, "journal"),
		Configure: func(c *actors.Config) {
			c.Market = nil // the approval path reads no market here
			c.Logger, c.ConfirmCLI = slog.New(slog.DiscardHandler), true
		},
	})
	s, sys := stack.Sim, stack.Sys
	ctx := context.Background()
	admin := messages.OriginOfActor(messages.ActorCLIAdmin)
	must := func(cmd messages.Command, o messages.Origin) any {
		res, err := sys.Submit(ctx, cmd, o)
		if err != nil {
			b.Fatalf("%s: %v", cmd.CommandName(), err)
		}
		return res
	}
	must(&messages.CreateUserRequest{User: "bench"}, admin)
	key := s.DefaultKey()
	must(&messages.AddCredentialRequest{User: "bench", Environment: "paper", APIKey: key.APIKey, APISecret: messages.NewSecret(key.APISecret)},
		messages.OriginOfActor(messages.ActorCLIUser))
	trade, paper := messages.ProfileTrade, messages.VenuePaper
	allow, confirm := []string{"linear:BTCUSDT"}, []string{"place_order"}
	big, many, pending := decimal.NewFromInt(1_000_000_000), 100_000, 1000
	must(&messages.SetCeilingRequest{User: "bench", Settings: messages.PolicySettings{Profile: &trade, Allow: &allow, ConfirmActions: &confirm,
		VenueCeiling: &paper, DailyNotionalCapUSDT: &big, MaxOrdersPerMinute: &many, MaxPending: &pending}}, admin)

	self := uint32(os.Getuid())
	sockDir := filepath.Join(dir, "run")
	srvCtl, err := control.Listen(control.Layout{Path: filepath.Join(sockDir, control.SocketName), Dir: sockDir, Explicit: true, Self: self}, sys, nil, control.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer srvCtl.Close()
	client, err := cli.DialControl(ctx, srvCtl.Path(), self)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	agent := messages.OriginOfActor(messages.ActorAgent)
	var toWire, round []time.Duration
	last := time.Time{}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		price := decimal.NewFromInt(20000).Add(decimal.NewFromInt(int64(i % 5000)).Div(decimal.NewFromInt(10)))
		res := must(&messages.PlaceOrderCommand{User: "bench", Args: messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
			Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.NewNullDecimal(price)}}, agent)
		p, ok := res.(*messages.ConfirmationPending)
		if !ok {
			b.Fatalf("not parked: %T", res)
		}
		if wait := 110*time.Millisecond - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		arrived.Store(0)
		b.StartTimer()
		t0 := time.Now()
		if _, err := client.Send(ctx, &messages.DecideConfirmationCommand{User: "bench", ConfirmationID: p.ConfirmationID,
			Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}); err != nil {
			b.Fatal(err)
		}
		round = append(round, time.Since(t0))
		last = time.Now()
		if a := arrived.Load(); a > 0 {
			toWire = append(toWire, time.Duration(a-t0.UnixNano()))
		}
	}
	b.StopTimer()
	if len(toWire) != len(round) {
		b.Fatalf("%d approvals, %d orders seen on the wire", len(round), len(toWire))
	}
	b.ReportMetric(p50(toWire).Seconds()*1000, "ms-to-wire-p50")
	b.ReportMetric(p50(round).Seconds()*1000, "ms-roundtrip-p50")
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
