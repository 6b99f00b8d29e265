package state

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// fingerprint prints every field of s, unexported ones included.
func fingerprint(s *User) string { return fmt.Sprintf("%+v", *s) }

// sampleEvents is one event of every record type DecodeEvent knows, in
// an order the server could journal them for the user "ada".
func sampleEvents() []Event {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	trade, live := messages.ProfileTrade, messages.VenueLive
	ceiling := messages.PolicySettings{Profile: &trade, Allow: strs("linear:BTCUSDT"), VenueCeiling: &live}
	own := messages.PolicySettings{MaxLeverage: dec("5")}
	shown := &messages.ShownToUser{Tool: "place_order", User: "ada", Venue: "paper", RiskIncreasing: true, Summary: "Buy 0.001 BTCUSDT (linear)"}
	return []Event{
		NewUserEvent("ada", messages.PolicySettings{}),
		{messages.RecordPolicyCeilingSet, messages.PolicyChangedEvent{Fields: ceiling.Fields(), After: ceiling}},
		{messages.RecordPolicyTightened, messages.PolicyChangedEvent{Fields: own.Fields(), After: own}},
		{messages.RecordPolicyOverridesReset, messages.PolicyChangedEvent{Fields: own.Fields(), Before: own}},
		{messages.RecordKillSwitchOn, messages.KillSwitchEvent{Before: messages.KillSwitchNone, After: messages.KillSwitchUser}},
		{messages.RecordKillSwitchOff, messages.KillSwitchEvent{Before: messages.KillSwitchUser, After: messages.KillSwitchNone}},
		{messages.RecordCredentialAdded, messages.CredentialAddedEvent{CredentialID: "cred-1", Exchange: "bybit", Environment: "paper", Fingerprint: "fp",
			Permissions: []string{"ContractTrade"}, Sealed: json.RawMessage(`{"v":1}`), CheckedAt: at}},
		{messages.RecordCredentialChecked, messages.CredentialCheckedEvent{CredentialID: "cred-1", Environment: "paper", Fingerprint: "fp",
			Permissions: []string{"ContractTrade"}, Accepted: true, CheckedAt: at.Add(time.Hour)}},
		{messages.RecordTokenIssued, messages.TokenIssuedEvent{ID: "tok_1", User: "ada", SHA256: "ab", At: at}},
		{messages.RecordTokenRevoked, messages.TokenRevokedEvent{ID: "tok_1", User: "ada", At: at}},
		{messages.RecordPostureChanged, messages.PostureChangedEvent{Before: messages.PostureActive, After: messages.PostureReducing, Reason: "human_reduce",
			Actor: messages.ActorCLIUser, CausesBefore: messages.PostureCauses{}, Causes: messages.PostureCauses{messages.CauseHuman}}},
		{messages.RecordDailyPnlNoted, messages.DailyPnlEvent{Day: "2026-06-01", Environment: "paper"}},
		{messages.RecordConfirmationRequested, messages.ConfirmationRequestedEvent{ConfirmationID: "cf_1", Tool: "place_order", Channel: messages.ConfirmChannelCLI,
			Environment: "paper", CreatedAt: at, ExpiresAt: at.Add(time.Minute), ShownToUser: shown, Args: json.RawMessage(`{"symbol":"BTCUSDT"}`), ArgsSHA256: "h1"}},
		{messages.RecordConfirmationDecided, messages.ConfirmationDecidedEvent{ConfirmationID: "cf_1", Decision: messages.DecisionApprove,
			Channel: messages.ConfirmChannelCLI, Status: messages.ConfirmStatusApproved, At: at}},
		{messages.RecordConfirmationExecuted, messages.ConfirmationExecutedEvent{ConfirmationID: "cf_1", Status: messages.ConfirmStatusExecuting,
			ClientOrderID: "gx-cf-1", At: at}},
		{messages.RecordOrderAttempt, messages.OrderAttemptEvent{ActionID: "a1", ClientOrderID: "gx-cf-1", Tool: "place_order", Environment: "paper",
			Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: at, NotionalUSDT: decimal.RequireFromString("60.5"), RiskIncreasing: true,
			IdempotencyKey: "k1", ArgsSHA256: "h1", Confirmed: true}},
		{messages.RecordOrderOutcome, messages.OrderOutcomeEvent{ActionID: "a1", ClientOrderID: "gx-cf-1", At: at, Status: messages.OutcomeAccepted,
			Answer: json.RawMessage(`{"status":"accepted"}`)}},
		{messages.RecordUserDisabled, messages.UserDisabledEvent{User: "ada"}},
		{messages.RecordCredentialDeleted, messages.CredentialDeletedEvent{CredentialID: "cred-1", Environment: "paper"}},
	}
}

// Every event comes back from its journal payload as it was written
// (DecodeEvent), and applying the decoded events builds the same state as
// applying the originals: what replay rebuilds is what the live actor
// held. Every record type DecodeEvent knows is in the table.
func TestEventRoundTrip(t *testing.T) {
	events := sampleEvents()
	covered := map[messages.RecordType]bool{}
	live, replayed := New("ada"), New("ada")
	for _, ev := range events {
		payload, err := json.Marshal(ev.Payload)
		if err != nil {
			t.Fatal(err)
		}
		back, ok, err := DecodeEvent(ev.Type, payload)
		if !ok || err != nil {
			t.Fatalf("%s: decoded %v, %v", ev.Type, ok, err)
		}
		if back.Type != ev.Type || fmt.Sprintf("%T", back.Payload) != fmt.Sprintf("%T", ev.Payload) {
			t.Fatalf("%s: decoded as %s %T", ev.Type, back.Type, back.Payload)
		}
		if again, _ := json.Marshal(back.Payload); string(again) != string(payload) {
			t.Fatalf("%s: round trip\nwrote %s\nread  %s", ev.Type, payload, again)
		}
		live.Apply(ev)
		replayed.Apply(back)
		a, _ := json.Marshal(live)
		b, _ := json.Marshal(replayed)
		if string(a) != string(b) {
			t.Fatalf("after %s:\nlive     %s\nreplayed %s", ev.Type, a, b)
		}
		covered[ev.Type] = true
	}
	for _, info := range messages.RecordTypes {
		if _, decoded, _ := DecodeEvent(info.Type, []byte(`{}`)); decoded && !covered[info.Type] {
			t.Errorf("%s: no sample event in the round trip", info.Name)
		}
	}
	// A payload that does not decode is an error, never a zero event.
	if _, ok, err := DecodeEvent(messages.RecordKillSwitchOn, []byte(`{"before":`)); !ok || err == nil {
		t.Fatalf("a broken payload: ok %v, err %v", ok, err)
	}
	if _, ok, _ := DecodeEvent(messages.RecordToolCall, []byte(`{}`)); ok {
		t.Fatal("an audit record was decoded as user state")
	}
}

// Apply turns each event into the part of the state it changes.
func TestApplyTable(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		state *Fixture
		check func(s *User) bool
	}{
		{"created", NewFixture("ada"), func(s *User) bool {
			return s.Exists && s.Effective(messages.VenuePaper, "paper").Profile == messages.ProfileReadOnly
		}},
		{"ceiling", NewFixture("ada").Trading("linear:BTCUSDT"), func(s *User) bool {
			p := s.Effective(messages.VenuePaper, "paper")
			return p.Profile == messages.ProfileTrade && len(p.Allow) == 1 && p.Allow[0] == "linear:BTCUSDT"
		}},
		{"own settings", NewFixture("ada").WithOwn(messages.PolicySettings{MaxLeverage: dec("3")}), func(s *User) bool {
			return s.Effective(messages.VenuePaper, "paper").MaxLeverage.Equal(decimal.NewFromInt(3))
		}},
		{"kill switch", NewFixture("ada").WithKillSwitch(messages.KillSwitchAdmin), func(s *User) bool {
			return s.KillSwitch == messages.KillSwitchAdmin && s.CurrentPosture() == messages.PostureHalted
		}},
		{"posture", NewFixture("ada").WithPosture(messages.CauseAgent), func(s *User) bool {
			return s.CurrentPosture() == messages.PostureReducing && s.reducingRefusal() != nil
		}},
		{"no posture record", NewFixture("ada"), func(s *User) bool {
			return s.CurrentPosture() == messages.PostureActive && s.reducingRefusal() == nil
		}},
		{"disabled", NewFixture("ada").Disabled(), func(s *User) bool { return s.Disabled }},
		{"read-only key", NewFixture("ada").Trading().WithReadOnlyKey("paper"), func(s *User) bool {
			c, ok := s.CredentialFor("paper")
			return ok && c.ReadOnlyCap && s.Effective(messages.VenuePaper, "paper").Profile == messages.ProfileReadOnly &&
				s.Effective(messages.VenuePaper, "bybit-demo").Profile == messages.ProfileTrade
		}},
		{"key deleted", NewFixture("ada").WithKey("paper").With(Event{messages.RecordCredentialDeleted, messages.CredentialDeletedEvent{Environment: "paper"}}),
			func(s *User) bool { _, ok := s.CredentialFor("paper"); return !ok }},
		{"daily pnl by venue", NewFixture("ada").With(
			Event{messages.RecordDailyPnlNoted, messages.DailyPnlEvent{Day: "d1", Environment: "paper"}},
			Event{messages.RecordDailyPnlNoted, messages.DailyPnlEvent{Day: "d0"}}),
			func(s *User) bool { return s.DailyPnlOn("paper").Day == "d1" && s.DailyPnlOn("bybit-demo").Day == "d0" }},
		{"open attempt", NewFixture("ada").With(Event{messages.RecordOrderAttempt, messages.OrderAttemptEvent{ClientOrderID: "gx-1", At: at,
			NotionalUSDT: decimal.NewFromInt(10), RiskIncreasing: true, IdempotencyKey: "k"}}), func(s *User) bool {
			return len(s.Attempts) == 1 && s.Idempotency["k"].ClientOrderID == "gx-1" && s.OrderOrigin("gx-1") == messages.OriginSystem
		}},
		{"rejected attempt", NewFixture("ada").With(
			Event{messages.RecordOrderAttempt, messages.OrderAttemptEvent{ClientOrderID: "gx-1", Environment: "paper", At: at, NotionalUSDT: decimal.NewFromInt(10), RiskIncreasing: true}},
			Event{messages.RecordOrderOutcome, messages.OrderOutcomeEvent{ClientOrderID: "gx-1", At: at, Status: messages.OutcomeRejected}}),
			func(s *User) bool {
				daily, perMinute, _ := s.Counters.Window(at, "paper")
				return len(s.Attempts) == 0 && daily.IsZero() && perMinute == 1
			}},
		{"an external order", NewFixture("ada"), func(s *User) bool { return s.OrderOrigin("gx-2") == messages.OriginExternal }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := c.state.Build(); !c.check(s) {
				t.Fatalf("state after the events: %+v", *s)
			}
		})
	}
}
