package mcp

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkClientFormApproval measures the human's answer in the client's
// form (2026-07-28, MRTR, in-memory transport) to the tool's answer: the
// repeated call opens the sealed state, the user actor journals the
// decision, re-checks and sends the order to the simulator on loopback,
// and journals its outcome. The first round (the action parked) is not
// timed. p50-µs is the median; journal-µs one durable journal write alone
// on the same journal, for scale.
func BenchmarkClientFormApproval(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	// The simulator allows 10 order creates a second per key (Bybit's
	// default): the iterations rotate over users with a key each, paced
	// outside the timer.
	const users = 20
	many, big, ttl, yes, paper := 100_000, decimal.NewFromInt(1_000_000_000), formTTL, true, messages.VenuePaper
	clients := make([]*sdk.ClientSession, users)
	for u := range clients {
		name := fmt.Sprintf("kim%d", u)
		e.confirmUser(b, name, true)
		if _, err := e.sys.Handle(ctx, &messages.SetCeilingRequest{User: name, Settings: messages.PolicySettings{
			Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp("place_order"),
			ConfirmationTTLS: &ttl, TrustClientUI: &yes, VenueCeiling: &paper,
			MaxOrdersPerMinute: &many, MaxUnconfirmedActionsPerHour: &many, DailyNotionalCapUSDT: &big,
		}}, messages.ActorCLIAdmin); err != nil {
			b.Fatal(err)
		}
		clients[u] = manualClient(b, Options{Backend: e.sys, Principal: fixedPrincipal(name, ProfileTrade), CallsPerSecond: 1e9, CallBurst: 1e9})
	}
	pace := newPacer(users, 10, time.Second)
	var ds, js []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		u := i % users
		cs := clients[u]
		order := limitOrder(fmt.Sprint(20000 + i%5000))
		order["idempotency_key"] = fmt.Sprintf("bench-%d", i)
		_, state := firstRound(b, cs, "place_order", order)
		p := &sdk.CallToolParams{Name: "place_order", Arguments: order, RequestState: state, InputResponses: sdk.InputResponseMap{formKey: ticked}}
		pace(u)
		b.StartTimer()
		start := time.Now()
		res, err := cs.CallTool(ctx, p)
		ds = append(ds, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
		b.StopTimer()
		start = time.Now()
		if _, err := e.sys.JournalJSON(ctx, messages.RecordServerStarted, "", messages.ActorSystem, map[string]any{"bench": true}); err != nil {
			b.Fatal(err)
		}
		js = append(js, time.Since(start))
		b.StartTimer()
	}
	b.ReportMetric(float64(medianOf(ds).Microseconds()), "p50-µs")
	b.ReportMetric(float64(medianOf(js).Microseconds()), "journal-µs")
}
