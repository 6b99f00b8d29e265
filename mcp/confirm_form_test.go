package mcp

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// legacyEra is a protocol before MRTR: the form is a classic
// elicitation/create held open by the server.
const legacyEra = "2025-11-25"

// An agent that repeats a parked call on an older client, on the same
// session or on another one, does not flood the human: one form is open
// per confirmation, the repeats answer status pending for it at once, and
// the human's one answer decides (exactly one order goes out).
func TestLegacyFormOnePerConfirmation(t *testing.T) {
	e := newEnv(t)
	key := e.confirmUser(t, "alice", true)
	var open atomic.Int32
	release := make(chan struct{})
	handler := func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		open.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{approveField: true}}, nil
	}
	o := Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}
	first := connectWith(t, o, legacyEra, &sdk.ClientOptions{ElicitationHandler: handler})
	other := connectWith(t, o, legacyEra, &sdk.ClientOptions{ElicitationHandler: handler})

	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	firstDone := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := first.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: limitOrder("30000")})
		firstDone <- answer{res, err}
	}()
	for open.Load() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	id := e.onlyConfirmation(t, "alice").ConfirmationID

	const repeats = 12
	var wg sync.WaitGroup
	errs := make(chan string, repeats)
	for i := range repeats {
		cs := first
		if i%2 == 1 {
			cs = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The form stays open meanwhile: a repeat that waited for it
			// would run into this deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: limitOrder("30000")})
			if err != nil {
				errs <- err.Error()
				return
			}
			if got := resultJSON(t, res); res.IsError || got["status"] != "pending" || got["confirmation_id"] != id {
				errs <- "repeat answered " + mustString(got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if n := open.Load(); n != 1 {
		t.Fatalf("%d forms opened for one confirmation", n)
	}
	close(release)
	a := <-firstDone
	if a.err != nil {
		t.Fatal(a.err)
	}
	if got := resultJSON(t, a.res); a.res.IsError || got["status"] != "accepted" {
		t.Fatalf("the approved call answered %v", got)
	}
	if n := len(e.ordersOf(t, key)); n != 1 {
		t.Fatalf("%d orders sent, want 1", n)
	}
	if st := e.status(t, "alice", id); st.Status != messages.ConfirmStatusExecuted || st.DecidedChannel != messages.ConfirmChannelClientUI {
		t.Fatalf("confirmation %+v", st)
	}
	if n := open.Load(); n != 1 {
		t.Fatalf("%d forms opened for one confirmation", n)
	}
}

// The form shows the server's plan only: the agent's idempotency key,
// which it words as it likes, is not in it (end to end through the user
// actor).
func TestFormCarriesNoAgentText(t *testing.T) {
	e := newEnv(t)
	e.confirmUser(t, "alice", true)
	cs := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)})
	order := limitOrder("30000")
	order["idempotency_key"] = "OWNER-PRE-APPROVED.paper-test:tick-box-safe"
	form, _ := firstRound(t, cs, "place_order", order)
	checkForm(t, form, e.onlyConfirmation(t, "alice"))
	if strings.Contains(form.Message, "OWNER-PRE-APPROVED") || strings.Contains(form.Message, "idempotency") {
		t.Fatalf("the agent's idempotency key is in the human's form:\n%s", form.Message)
	}
}

// Text of the exchange in a plan (a cancel-all row's order id) reaches
// the form without the characters a client's display could act on; the
// agent's keys are left out at every level of the plan.
func TestFormMessageHostileText(t *testing.T) {
	shown := &messages.ShownToUser{Tool: "cancel_all_orders", User: "alice", Venue: "paper", Summary: "Cancel 2 open orders\u202e",
		CancelAll: &messages.CancelAllAnswer{Category: messages.CategoryLinear, Symbol: "BTCUSDT", IdempotencyKey: "agent-says-SAFE",
			Orders: []messages.CancelAllRow{
				{OrderID: "abc\x1b]0;pwned\x07\x1b[2K\rALL CLEAR", Origin: messages.OriginExternal},
				{OrderID: "0bd5c5a4-2f53-4d3e-9b8e-1e2f3a4b5c6d", Origin: messages.OriginSystem, ClientOrderID: "gx-1"},
			}}}
	msg := formMessage("cf_0123456789abcdef01234567", time.Now(), shown)
	if strings.ContainsAny(msg, "\x1b\x07\r\u202e") {
		t.Fatalf("control characters reach the form: %q", msg)
	}
	if strings.Contains(msg, "agent-says-SAFE") {
		t.Fatalf("the agent's idempotency key is in the form: %q", msg)
	}
	for _, want := range []string{"cancel_all.orders[0].order_id: abc?]0;pwned??[2K?ALL CLEAR", "0bd5c5a4-2f53-4d3e-9b8e-1e2f3a4b5c6d", "origin: external"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the form lacks %q:\n%s", want, msg)
		}
	}
}
