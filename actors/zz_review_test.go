package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// R1: a confirmation parked on paper is approved and executed after the
// server restarted on another venue (same home): the human approved "venue
// paper" and the order goes to bybit-demo.
func TestReviewConfirmCrossVenueCLI(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.001", "30000"))
	if p.ShownToUser.Venue != "paper" {
		t.Fatalf("shown venue %q", p.ShownToUser.Venue)
	}
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo)}}, messages.ActorCLIAdmin)
	ce.stop()
	ce.configure = func(c *Config) {
		c.ConfirmCLI = true
		c.Environment, c.Venue = "bybit-demo", messages.VenueDemo
	}
	ce.testSystem = ce.start(t, ce.dir)
	if _, err := ce.Handle(context.Background(), &messages.AddCredentialRequest{User: ce.user, Environment: "bybit-demo",
		APIKey: ce.ann.APIKey, APISecret: messages.NewSecret(ce.ann.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	st := ce.status(t, p.ConfirmationID)
	t.Logf("after restart on demo: status %s", st.Status)
	res, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	t.Logf("approve: %T %+v %v", res, res, e)
	atts, _ := recordsOf[messages.OrderAttemptEvent](t, ce.dir, messages.RecordOrderAttempt)
	for _, a := range atts {
		t.Logf("attempt env=%s id=%s", a.Environment, a.ClientOrderID)
	}
	if e == nil && len(atts) == 1 && atts[0].Environment == "bybit-demo" {
		t.Errorf("FINDING: paper-approved plan executed on %s", atts[0].Environment)
	}
}

// R2: a client_ui confirmation parked on paper is approved through the
// client's form (agent session) after the server restarted on live: live
// never trusts the client UI, yet the decision is accepted and runs.
func TestReviewConfirmClientUIOnLive(t *testing.T) {
	ce := newConfirmEnv(t, false, "place_order")
	res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: limitArgs("0.001", "30000"), ClientUI: true})
	if e != nil {
		t.Fatal(e)
	}
	p := res.(*messages.ConfirmationPending)
	if p.Channel != messages.ConfirmChannelClientUI {
		t.Fatalf("channel %s", p.Channel)
	}
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueLive)}}, messages.ActorCLIAdmin)
	ce.stop()
	ce.configure = func(c *Config) {
		c.Environment, c.Venue = "bybit-live", messages.VenueLive
	}
	ce.testSystem = ce.start(t, ce.dir)
	if _, err := ce.Handle(context.Background(), &messages.AddCredentialRequest{User: ce.user, Environment: "bybit-live",
		APIKey: ce.ann.APIKey, APISecret: messages.NewSecret(ce.ann.APISecret)}, messages.ActorCLIAdmin); err != nil {
		t.Logf("add live key: %v", err)
	}
	pol, _ := ce.Handle(context.Background(), &messages.ShowPolicyRequest{User: ce.user}, messages.ActorCLIUser)
	if pv, ok := pol.(*messages.PolicyView); ok {
		t.Logf("effective trust_client_ui on live: %v", pv.Effective.TrustClientUI)
	}
	if _, err := ce.outside(t).SetLeverage(context.Background(), messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Leverage: decimal.NewFromInt(1)}); err != nil {
		t.Log(err)
	}
	out, err := ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelClientUI, ArgsSHA256: p.ArgsSHA256}, agentOrigin)
	t.Logf("client_ui approve on live: %T %+v %v", out, out, err)
	dec, _ := recordsOf[messages.ConfirmationDecidedEvent](t, ce.dir, messages.RecordConfirmationDecided)
	atts, _ := recordsOf[messages.OrderAttemptEvent](t, ce.dir, messages.RecordOrderAttempt)
	for _, a := range atts {
		t.Logf("attempt env=%s id=%s", a.Environment, a.ClientOrderID)
	}
	if len(dec) == 1 && dec[0].Decision == messages.DecisionApprove {
		t.Errorf("FINDING: a client_ui approval was accepted while the server runs live (attempts: %d)", len(atts))
	}
}

// R3: the human turned trust_client_ui off after parking; a client_ui
// approval of the confirmation parked before is still accepted.
func TestReviewConfirmTrustRevoked(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: limitArgs("0.001", "30000"), ClientUI: true})
	if e != nil {
		t.Fatal(e)
	}
	p := res.(*messages.ConfirmationPending)
	if p.Channel != messages.ConfirmChannelClientUI {
		t.Fatalf("channel %s", p.Channel)
	}
	no := false
	if _, err := ce.Handle(context.Background(), &messages.TightenPolicyRequest{User: ce.user, Settings: messages.PolicySettings{TrustClientUI: &no}}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	out, err := ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelClientUI, ArgsSHA256: p.ArgsSHA256}, agentOrigin)
	t.Logf("approve after trust revoked: %T %v", out, err)
	if err == nil {
		t.Errorf("FINDING: client_ui approval accepted after trust_client_ui was turned off")
	}
}

// R4: a forged journal record by actor "agent" naming channel client_ui
// approves a confirmation parked for the CLI (where the agent channel was
// never offered); replay accepts it and the start executes it.
func TestReviewReplayForgedClientUIApproval(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.001", "30000"))
	if p.Channel != messages.ConfirmChannelCLI {
		t.Fatal(p.Channel)
	}
	forge(t, ce.log, messages.RecordConfirmationDecided, ce.user, messages.ActorAgent, messages.ConfirmationDecidedEvent{ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelClientUI, Status: messages.ConfirmStatusApproved, At: time.Now().UTC()})
	ce.stop()
	ce.testSystem = ce.start(t, ce.dir)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st := ce.status(t, p.ConfirmationID); st.Status == messages.ConfirmStatusExecuted || st.Status == messages.ConfirmStatusFailed {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := ce.status(t, p.ConfirmationID)
	t.Logf("status %s, orders on venue %d", st.Status, ce.simCount(t, "gx-cf-"))
	if ce.simCount(t, "gx-cf-") > 0 {
		t.Errorf("FINDING: forged agent client_ui approval of a cli confirmation replayed and executed")
	}
}

// R5: the payload's status is trusted apart from its decision: a forged
// "cancel" by the agent (allowed) with status approved.
func TestReviewReplayForgedStatus(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.001", "30000"))
	forge(t, ce.log, messages.RecordConfirmationDecided, ce.user, messages.ActorAgent, messages.ConfirmationDecidedEvent{ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionReject, Channel: messages.ConfirmChannelClientUI, Status: messages.ConfirmStatusApproved, At: time.Now().UTC()})
	ce.stop()
	_, err := reopen(t, ce.dir)
	t.Logf("reopen: %v", err)
	if err == nil {
		t.Errorf("FINDING: a reject record with status approved replays")
	}
}

// R1b: approved on paper, the process stops before the run; restarted on
// another venue within 30 s, the start runs it there with no human.
func TestReviewConfirmApprovedRunsOnOtherVenueAtStart(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	ce.must(t, &messages.SetCeilingRequest{User: ce.user, Settings: messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo)}}, messages.ActorCLIAdmin)
	demo := func(c *Config) { c.ConfirmCLI = true; c.Environment, c.Venue = "bybit-demo", messages.VenueDemo }
	paper := ce.configure
	ce.stop()
	ce.configure = demo
	ce.testSystem = ce.start(t, ce.dir)
	if _, err := ce.Handle(context.Background(), &messages.AddCredentialRequest{User: ce.user, Environment: "bybit-demo",
		APIKey: ce.ann.APIKey, APISecret: messages.NewSecret(ce.ann.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	ce.stop()
	ce.configure = paper
	ce.testSystem = ce.start(t, ce.dir)
	p := ce.park(t, limitArgs("0.001", "30000"))
	uid := int64(1000)
	forge(t, ce.log, messages.RecordConfirmationDecided, ce.user, messages.ActorCLIUser, messages.ConfirmationDecidedEvent{ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI, ApproverUID: &uid, Status: messages.ConfirmStatusApproved, At: time.Now().UTC()})
	ce.stop()
	ce.configure = demo
	ce.testSystem = ce.start(t, ce.dir)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ce.simCount(t, "gx-cf-") == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	atts, _ := recordsOf[messages.OrderAttemptEvent](t, ce.dir, messages.RecordOrderAttempt)
	for _, a := range atts {
		t.Logf("attempt env=%s id=%s", a.Environment, a.ClientOrderID)
	}
	if len(atts) > 0 && atts[0].Environment == "bybit-demo" {
		t.Errorf("FINDING: a paper approval ran on bybit-demo at start, no human involved after the venue change")
	}
}

// R9: park, withdraw, park again: every withdrawn confirmation stays in
// the user's state (and is cloned on each change) for 24 h, unbounded.
func TestReviewConfirmRetentionUnbounded(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	const n = 300
	start := time.Now()
	var first time.Duration
	for i := 0; i < n; i++ {
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
		if i == 99 {
			first = time.Since(start)
		}
	}
	total := time.Since(start)
	res, err := ce.Submit(context.Background(), &messages.ListConfirmationsCommand{User: ce.user, All: true}, cliOrigin)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(res.(*messages.ConfirmationList).Confirmations)
	t.Logf("%d cycles in %v (first 100: %v); %d confirmations kept in memory", n, total, first, kept)
	if kept >= n {
		t.Errorf("FINDING: every withdrawn confirmation is kept (%d), no bound besides 24 h", kept)
	}
}
