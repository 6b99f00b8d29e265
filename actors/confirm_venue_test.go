package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Confirmations bound to their venue, the client's form re-checked at the
// decision, and how many finished confirmations are remembered.

// waitStatus waits (5 s at most) until the confirmation leaves the
// statuses in from, and returns it.
func (ce *confirmEnv) waitStatus(t *testing.T, id string, from ...string) *messages.ConfirmationStatus {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := ce.status(t, id)
		still := false
		for _, s := range from {
			still = still || st.Status == s
		}
		if !still || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restartOn stops the system and starts it again on the same home with
// another venue (and the CLI channel as cli says), then adds the
// simulator key for env.
func (ce *confirmEnv) restartOn(t *testing.T, env string, venue messages.VenueLevel, cli bool) {
	t.Helper()
	ce.stop()
	ce.configure = func(c *Config) { c.ConfirmCLI = cli; c.Environment, c.Venue = env, venue }
	ce.testSystem = ce.start(t, ce.dir)
	if _, err := ce.Handle(context.Background(), &messages.AddCredentialRequest{User: ce.user, Environment: env,
		APIKey: ce.ann.APIKey, APISecret: messages.NewSecret(ce.ann.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
}

// wantVenueChanged: the confirmation was cancelled for the venue change,
// journaled by the server, and nothing reached the venue.
func (ce *confirmEnv) wantVenueChanged(t *testing.T, id string) {
	t.Helper()
	st := ce.waitStatus(t, id, messages.ConfirmStatusPending, messages.ConfirmStatusApproved)
	if st.Status != messages.ConfirmStatusCancelled || st.Error == nil || st.Error.Details["reason"] != messages.ReasonVenueChanged {
		t.Fatalf("status %s, error %+v", st.Status, st.Error)
	}
	dec, who := recordsOf[messages.ConfirmationDecidedEvent](t, ce.dir, messages.RecordConfirmationDecided)
	found := false
	for i, d := range dec {
		if d.ConfirmationID == id && d.Decision == messages.DecisionCancel {
			found = d.Reason == messages.ReasonVenueChanged && who[i] == messages.ActorSystem && d.Status == messages.ConfirmStatusCancelled
		}
	}
	if !found {
		t.Fatalf("no venue_changed cancel journaled by the system: %+v %v", dec, who)
	}
	if n := countRecords(t, ce.dir, messages.RecordOrderAttempt); n != 0 || ce.simCount(t, "gx-cf-") != 0 {
		t.Fatalf("%d attempts, %d orders on the venue", n, ce.simCount(t, "gx-cf-"))
	}
}

// A confirmation parked on paper, the server restarted on the same home
// with --venue bybit-demo: the start cancels it (venue_changed), a human's
// approval finds it no longer pending, and nothing is sent to demo.
func TestConfirmVenueChangedCancelsPending(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.001", "30000"))
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo)}}, messages.ActorCLIAdmin)
	ce.restartOn(t, "bybit-demo", messages.VenueDemo, true)
	ce.wantVenueChanged(t, p.ConfirmationID)
	if _, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil || e.Details["status"] != messages.ConfirmStatusCancelled {
		t.Fatalf("approve after the venue changed: %v", e)
	}
	ce.wantVenueChanged(t, p.ConfirmationID)
	// The cancel replays.
	ce.stop()
	if _, err := reopen(t, ce.dir); err != nil {
		t.Fatal(err)
	}
}

// A repeat of a call parked on another venue is not answered with that
// confirmation: it is a new call on this venue.
func TestConfirmRepeatOnOtherVenueParksAgain(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	a := limitArgs("0.001", "30000")
	a.IdempotencyKey = "k-venue"
	p := ce.park(t, a)
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo)}}, messages.ActorCLIAdmin)
	ce.restartOn(t, "bybit-demo", messages.VenueDemo, true)
	again := ce.park(t, a)
	if again.ConfirmationID == p.ConfirmationID || again.Venue != "bybit-demo" || again.ShownToUser.Venue != "bybit-demo" {
		t.Fatalf("repeat on demo answered %+v", again)
	}
}

// An approval journaled on paper whose run had not started when the
// process stopped is not run by a start on bybit-demo (within the 30 s it
// would otherwise run in): it is cancelled, venue_changed.
func TestConfirmApprovedNotRunOnOtherVenueAtStart(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo)}}, messages.ActorCLIAdmin)
	p := ce.park(t, limitArgs("0.001", "30000"))
	uid := int64(1000)
	forge(t, ce.log, messages.RecordConfirmationDecided, ce.user, messages.ActorCLIUser, messages.ConfirmationDecidedEvent{ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI, ApproverUID: &uid, Status: messages.ConfirmStatusApproved, At: time.Now().UTC()})
	ce.restartOn(t, "bybit-demo", messages.VenueDemo, true)
	ce.wantVenueChanged(t, p.ConfirmationID)
}

// parkClientUI parks a place_order for the client's form.
func (ce *confirmEnv) parkClientUI(t *testing.T) *messages.ConfirmationPending {
	t.Helper()
	res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: limitArgs("0.001", "30000"), ClientUI: true})
	if e != nil {
		t.Fatal(e)
	}
	p, ok := res.(*messages.ConfirmationPending)
	if !ok || p.Channel != messages.ConfirmChannelClientUI {
		t.Fatalf("answer %+v", res)
	}
	return p
}

// formDecide is the MCP layer's relay of the client's form.
func (ce *confirmEnv) formDecide(p *messages.ConfirmationPending, decision string) (any, error) {
	return ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID,
		Decision: decision, Channel: messages.ConfirmChannelClientUI, ArgsSHA256: p.ArgsSHA256}, agentOrigin)
}

// wantUntrusted: the form's decision was refused for trust, nothing
// decided.
func wantUntrusted(t *testing.T, what string, err error) {
	t.Helper()
	e := messages.AsError(err)
	if err == nil || e.Code != messages.CodePermissionDenied || e.Details["reason"] != "client_ui_untrusted" {
		t.Fatalf("%s: %v", what, err)
	}
}

// The human turns trust_client_ui off while a form waits: neither an
// approval nor a rejection through the form is accepted any more; the
// confirmation still waits, and the CLI decides it.
func TestConfirmClientUITrustRevoked(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.parkClientUI(t)
	no := false
	if _, err := ce.Handle(context.Background(), &messages.TightenPolicyRequest{User: ce.user, Settings: messages.PolicySettings{TrustClientUI: &no}},
		messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{messages.DecisionApprove, messages.DecisionReject} {
		_, err := ce.formDecide(p, d)
		wantUntrusted(t, d+" after trust was revoked", err)
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusPending || countRecords(t, ce.dir, messages.RecordConfirmationDecided) != 0 {
		t.Fatalf("status %s after refused form decisions", st.Status)
	}
	if res, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e != nil {
		t.Fatalf("the CLI approval: %v", e)
	} else if _, ok := res.(*messages.OrderAnswer); !ok || ce.simCount(t, "gx-cf-") != 1 {
		t.Fatalf("the CLI approval answered %T, %d orders", res, ce.simCount(t, "gx-cf-"))
	}
}

// A client_ui confirmation parked on paper, the server restarted on live:
// live never trusts the client's form, so its approval is refused, and
// nothing is sent (the confirmation is cancelled: venue_changed).
func TestConfirmClientUIRefusedOnLive(t *testing.T) {
	ce := newConfirmEnv(t, false, "place_order")
	p := ce.parkClientUI(t)
	yes := true
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueLive),
		TrustClientUI: &yes}}, messages.ActorCLIAdmin)
	ce.stop()
	ce.configure = func(c *Config) { c.Environment, c.Venue = "bybit-live", messages.VenueLive }
	ce.testSystem = ce.start(t, ce.dir)
	if _, err := ce.outside(t).SetLeverage(context.Background(), messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Leverage: decimal.NewFromInt(1)}); err != nil {
		t.Log(err)
	}
	_, err := ce.formDecide(p, messages.DecisionApprove)
	wantUntrusted(t, "approve on live", err)
	dec, _ := recordsOf[messages.ConfirmationDecidedEvent](t, ce.dir, messages.RecordConfirmationDecided)
	for _, d := range dec {
		if d.Decision == messages.DecisionApprove {
			t.Fatalf("an approval was journaled on live: %+v", d)
		}
	}
	if n := countRecords(t, ce.dir, messages.RecordOrderAttempt); n != 0 {
		t.Fatalf("%d attempts on live", n)
	}
}

// Replay refuses the confirmation decisions the live actor could not have
// journaled: a client_ui decision on a confirmation parked for the CLI
// (the agent may relay only the form's answers), a status that does not
// follow from the decision, a client_ui confirmation on a live
// environment, a decision after the key was replaced, a venue_changed
// cancel not made by the server; the server's own venue_changed cancel
// replays.
func TestReplayRefusesForgedConfirmationChannel(t *testing.T) {
	const id = "cf_0123456789abcdef01234567"
	now := time.Now().UTC()
	uid := int64(1000)
	requested := func(channel, env string) messages.ConfirmationRequestedEvent {
		return messages.ConfirmationRequestedEvent{ConfirmationID: id, Tool: "place_order", Channel: channel, Environment: env,
			CreatedAt: now, ExpiresAt: now.Add(time.Minute), ShownToUser: &messages.ShownToUser{Tool: "place_order"}, Args: json.RawMessage(`{}`)}
	}
	decided := func(decision, channel, status string) messages.ConfirmationDecidedEvent {
		return messages.ConfirmationDecidedEvent{ConfirmationID: id, Decision: decision, Channel: channel, Status: status, At: now}
	}
	cliApprove := decided(messages.DecisionApprove, messages.ConfirmChannelCLI, messages.ConfirmStatusApproved)
	cliApprove.ApproverUID = &uid
	venueChanged := decided(messages.DecisionCancel, "system", messages.ConfirmStatusCancelled)
	venueChanged.Reason = messages.ReasonVenueChanged
	type rec struct {
		typ   messages.RecordType
		actor string
		v     any
	}
	req := func(channel, env string) rec {
		return rec{messages.RecordConfirmationRequested, messages.ActorAgent, requested(channel, env)}
	}
	dec := func(actor string, v messages.ConfirmationDecidedEvent) rec {
		return rec{messages.RecordConfirmationDecided, actor, v}
	}
	keyDeleted := rec{messages.RecordCredentialDeleted, messages.ActorCLIUser, messages.CredentialDeletedEvent{CredentialID: "cr_1", Environment: "paper"}}
	cases := []struct {
		name    string
		recs    []rec
		refused bool
	}{
		{"client_ui approval of a cli confirmation", []rec{req(messages.ConfirmChannelCLI, "paper"),
			dec(messages.ActorAgent, decided(messages.DecisionApprove, messages.ConfirmChannelClientUI, messages.ConfirmStatusApproved))}, true},
		{"client_ui rejection of a cli confirmation", []rec{req(messages.ConfirmChannelCLI, "paper"),
			dec(messages.ActorAgent, decided(messages.DecisionReject, messages.ConfirmChannelClientUI, messages.ConfirmStatusRejected))}, true},
		{"reject with status approved", []rec{req(messages.ConfirmChannelClientUI, "paper"),
			dec(messages.ActorAgent, decided(messages.DecisionReject, messages.ConfirmChannelClientUI, messages.ConfirmStatusApproved))}, true},
		{"cancel with status approved", []rec{req(messages.ConfirmChannelCLI, "paper"),
			dec(messages.ActorAgent, decided(messages.DecisionCancel, "agent", messages.ConfirmStatusApproved))}, true},
		{"client_ui confirmation on live", []rec{req(messages.ConfirmChannelClientUI, "bybit-live")}, true},
		{"approval after the key was deleted", []rec{req(messages.ConfirmChannelCLI, "paper"), keyDeleted, dec(messages.ActorCLIUser, cliApprove)}, true},
		{"venue_changed by the agent", []rec{req(messages.ConfirmChannelCLI, "paper"), dec(messages.ActorAgent, venueChanged)}, true},
		{"client_ui approval of a client_ui confirmation", []rec{req(messages.ConfirmChannelClientUI, "paper"),
			dec(messages.ActorAgent, decided(messages.DecisionApprove, messages.ConfirmChannelClientUI, messages.ConfirmStatusApproved))}, false},
		{"venue_changed after an approval", []rec{req(messages.ConfirmChannelCLI, "paper"), dec(messages.ActorCLIUser, cliApprove),
			dec(messages.ActorSystem, venueChanged)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startUsers(t, dir)
			ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
			var last uint64
			for _, r := range c.recs {
				last = forge(t, ts.log, r.typ, "rae", r.actor, r.v)
			}
			ts.stop()
			if c.refused {
				_, err := reopen(t, dir)
				if err == nil || !containsSeq(err, last) {
					t.Fatalf("start: %v, want a refusal of seq %d", err, last)
				}
				t.Logf("refused: %v", err)
				return
			}
			r, err := reopen(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.states(time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got, want := st["rae"].Confirmations[id].Status, c.recs[len(c.recs)-1].v.(messages.ConfirmationDecidedEvent).Status; got != want {
				t.Fatalf("rebuilt status %s, want %s", got, want)
			}
		})
	}
}

func containsSeq(err error, seq uint64) bool {
	return err != nil && (strings.Contains(err.Error(), fmt.Sprintf("seq %d ", seq)) || strings.Contains(err.Error(), fmt.Sprintf("seq %d:", seq)))
}

// At most confirmationKeepMax finished confirmations are remembered: the
// oldest are forgotten first, live ones are always kept, and the same
// records give the same state (replay applies them the same way).
func TestConfirmRetentionCapped(t *testing.T) {
	build := func() *state.User {
		s := state.New("rae")
		t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		live := fmt.Sprintf("cf_%024x", 0)
		s.Apply(state.Event{Type: messages.RecordConfirmationRequested, Payload: messages.ConfirmationRequestedEvent{ConfirmationID: live, Tool: "place_order",
			Channel: messages.ConfirmChannelCLI, Environment: "paper", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}})
		for i := 1; i <= state.ConfirmationKeepMax+50; i++ {
			id := fmt.Sprintf("cf_%024x", i)
			at := t0.Add(time.Duration(i) * time.Second)
			s.Apply(state.Event{Type: messages.RecordConfirmationRequested, Payload: messages.ConfirmationRequestedEvent{ConfirmationID: id, Tool: "place_order",
				Channel: messages.ConfirmChannelCLI, Environment: "paper", CreatedAt: at, ExpiresAt: at.Add(time.Minute)}})
			s.Apply(state.Event{Type: messages.RecordConfirmationDecided, Payload: messages.ConfirmationDecidedEvent{ConfirmationID: id, Decision: messages.DecisionCancel,
				Channel: "agent", Status: messages.ConfirmStatusCancelled, At: at}})
		}
		return s
	}
	s := build()
	if n := len(s.Confirmations); n != state.ConfirmationKeepMax+1 {
		t.Fatalf("%d confirmations kept, want %d finished and the live one", n, state.ConfirmationKeepMax)
	}
	if _, ok := s.Confirmations[fmt.Sprintf("cf_%024x", 0)]; !ok {
		t.Fatal("the live confirmation was forgotten")
	}
	for i := 1; i <= state.ConfirmationKeepMax+50; i++ {
		_, ok := s.Confirmations[fmt.Sprintf("cf_%024x", i)]
		if want := i > 50; ok != want {
			t.Fatalf("confirmation %d kept %v, want %v", i, ok, want)
		}
	}
	again := build()
	for id := range s.Confirmations {
		if _, ok := again.Confirmations[id]; !ok {
			t.Fatalf("%s differs between two applies of the same records", id)
		}
	}
}

// A loop of park and withdraw through the user actor keeps at most
// confirmationKeepMax finished confirmations.
func TestConfirmRetentionCappedLive(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	var first, last string
	for i := 0; i < state.ConfirmationKeepMax+5; i++ {
		res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: limitArgs("0.001", "30000")})
		if e != nil && e.Code == messages.CodeRateLimited {
			time.Sleep(100 * time.Millisecond)
			i--
			continue
		}
		if e != nil {
			t.Fatal(e)
		}
		p := res.(*messages.ConfirmationPending)
		if _, err := ce.Submit(context.Background(), &messages.CancelConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID}, agentOrigin); err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = p.ConfirmationID
		}
		last = p.ConfirmationID
	}
	res, err := ce.Submit(context.Background(), &messages.ListConfirmationsCommand{User: ce.user, All: true}, cliOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l := res.(*messages.ConfirmationList).Confirmations
	if len(l) != state.ConfirmationKeepMax || l[len(l)-1].ConfirmationID != last || l[0].ConfirmationID == first {
		t.Fatalf("%d kept (first %s, last %s)", len(l), l[0].ConfirmationID, l[len(l)-1].ConfirmationID)
	}
}
