package state

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func prof(p messages.Profile) *messages.Profile { return &p }
func strs(v ...string) *[]string                { return &v }

// decided is what a decision gave: the record type it would journal (0
// when none), or the refusal's code ("" when none).
type decided struct {
	record messages.RecordType
	code   messages.Code
}

func outcomeOf(ev *Event, err error) decided {
	var d decided
	if ev != nil {
		d.record = ev.Type
	}
	if err != nil {
		d.code = messages.CodeOf(err)
	}
	return d
}

// commandCase is one row of a command's decision table: the state, the
// command, and what deciding it gives.
type commandCase struct {
	name  string
	state *Fixture
	cmd   messages.Command
	want  decided
}

// runCommandTable decides each case and checks what it gave, and that
// deciding did not change the state.
func runCommandTable(t *testing.T, cases []commandCase, decide func(*User, messages.Command) (*Event, error)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.state.Build()
			before := fingerprint(s)
			if got := outcomeOf(decide(s, c.cmd)); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if fingerprint(s) != before {
				t.Fatal("deciding changed the state")
			}
		})
	}
}

// Decide answers every command kind of the user actor with the record it
// would journal, nothing (no change), or the refusal, and never changes
// the state.
func TestDecideTable(t *testing.T) {
	base := func() *Fixture { return NewFixture("ada").Trading("linear:BTCUSDT").WithKey("paper") }
	looser := messages.PolicySettings{MaxLeverage: dec("20")}   // the default is 10
	stricter := messages.PolicySettings{MaxLeverage: dec("5")}  // within every default
	badValue := messages.PolicySettings{MaxLeverage: dec("-1")} // out of range
	runCommandTable(t, []commandCase{
		{"no such user", &Fixture{s: New("ghost")}, &messages.ShowPolicyRequest{}, decided{code: messages.CodeNotFound}},
		{"show policy", base(), &messages.ShowPolicyRequest{}, decided{}},
		{"tighten", base(), &messages.TightenPolicyRequest{Settings: stricter}, decided{record: messages.RecordPolicyTightened}},
		{"tighten to the same values", base().WithOwn(stricter), &messages.TightenPolicyRequest{Settings: stricter}, decided{}},
		{"tighten looser", base(), &messages.TightenPolicyRequest{Settings: looser}, decided{code: messages.CodePermissionDenied}},
		{"tighten out of range", base(), &messages.TightenPolicyRequest{Settings: badValue}, decided{code: messages.CodeInvalidParams}},
		{"tighten when disabled", base().Disabled(), &messages.TightenPolicyRequest{Settings: stricter}, decided{code: messages.CodePermissionDenied}},
		{"set ceiling", base(), &messages.SetCeilingRequest{Settings: looser}, decided{record: messages.RecordPolicyCeilingSet}},
		{"set ceiling unchanged", base().WithCeiling(looser), &messages.SetCeilingRequest{Settings: looser}, decided{}},
		{"set ceiling out of range", base(), &messages.SetCeilingRequest{Settings: badValue}, decided{code: messages.CodeInvalidParams}},
		{"reset overrides", base().WithOwn(stricter), &messages.ResetOverridesRequest{}, decided{record: messages.RecordPolicyOverridesReset}},
		{"reset one override", base().WithOwn(stricter), &messages.ResetOverridesRequest{Fields: []string{"max_leverage"}}, decided{record: messages.RecordPolicyOverridesReset}},
		{"reset a field not set", base().WithOwn(stricter), &messages.ResetOverridesRequest{Fields: []string{"profile"}}, decided{}},
		{"reset nothing set", base(), &messages.ResetOverridesRequest{}, decided{}},
		{"reset an unknown field", base(), &messages.ResetOverridesRequest{Fields: []string{"nope"}}, decided{code: messages.CodeInvalidParams}},
		{"kill switch on", base(), &messages.SetKillSwitchRequest{On: true, Level: messages.KillSwitchUser}, decided{record: messages.RecordKillSwitchOn}},
		{"kill switch on again", base().WithKillSwitch(messages.KillSwitchUser), &messages.SetKillSwitchRequest{On: true, Level: messages.KillSwitchUser}, decided{}},
		{"admin switch over the user's", base().WithKillSwitch(messages.KillSwitchUser), &messages.SetKillSwitchRequest{On: true, Level: messages.KillSwitchAdmin}, decided{record: messages.RecordKillSwitchOn}},
		{"user switch under the admin's", base().WithKillSwitch(messages.KillSwitchAdmin), &messages.SetKillSwitchRequest{On: true, Level: messages.KillSwitchUser}, decided{}},
		{"kill switch off", base().WithKillSwitch(messages.KillSwitchUser), &messages.SetKillSwitchRequest{Level: messages.KillSwitchUser}, decided{record: messages.RecordKillSwitchOff}},
		{"kill switch off when off", base(), &messages.SetKillSwitchRequest{Level: messages.KillSwitchUser}, decided{}},
		{"user turns off the admin's switch", base().WithKillSwitch(messages.KillSwitchAdmin), &messages.SetKillSwitchRequest{Level: messages.KillSwitchUser}, decided{code: messages.CodePermissionDenied}},
		{"admin turns off the admin's switch", base().WithKillSwitch(messages.KillSwitchAdmin), &messages.SetKillSwitchRequest{Level: messages.KillSwitchAdmin}, decided{record: messages.RecordKillSwitchOff}},
		{"kill switch unknown level", base(), &messages.SetKillSwitchRequest{On: true, Level: "nobody"}, decided{code: messages.CodeInvalidParams}},
		{"disable", base(), &messages.DisableUserRequest{}, decided{record: messages.RecordUserDisabled}},
		{"disable again", base().Disabled(), &messages.DisableUserRequest{}, decided{}},
		{"show key", base(), &messages.ShowCredentialRequest{Environment: "paper"}, decided{}},
		{"delete key", base(), &messages.DeleteCredentialRequest{Environment: "paper"}, decided{record: messages.RecordCredentialDeleted}},
		{"delete a key not stored", base(), &messages.DeleteCredentialRequest{Environment: "bybit-demo"}, decided{code: messages.CodeNotFound}},
		{"a command of another actor", base(), &messages.ListTokensRequest{}, decided{code: messages.CodeInternalError}},
	}, func(s *User, cmd messages.Command) (*Event, error) {
		return s.Decide(cmd, messages.VenuePaper, "paper")
	})
}

// DecideToken answers every token command with the record it would
// journal, nothing, or the refusal.
func TestDecideTokenTable(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	issued := Event{messages.RecordTokenIssued, messages.TokenIssuedEvent{ID: "tok_1", User: "ada", SHA256: "00", At: now}}
	revoked := Event{messages.RecordTokenRevoked, messages.TokenRevokedEvent{ID: "tok_1", User: "ada", At: now}}
	issue := &messages.IssueTokenRequest{ID: "tok_2", Token: messages.TokenPrefix + "secret"}
	runCommandTable(t, []commandCase{
		{"no such user", &Fixture{s: New("ghost")}, &messages.ListTokensRequest{}, decided{code: messages.CodeNotFound}},
		{"list", NewFixture("ada"), &messages.ListTokensRequest{}, decided{}},
		{"issue", NewFixture("ada"), issue, decided{record: messages.RecordTokenIssued}},
		{"issue to a disabled user", NewFixture("ada").Disabled(), issue, decided{code: messages.CodePermissionDenied}},
		{"issue without a token made by the server", NewFixture("ada"), &messages.IssueTokenRequest{ID: "tok_2", Token: "plain"}, decided{code: messages.CodeInternalError}},
		{"issue an id in use", NewFixture("ada").With(issued), &messages.IssueTokenRequest{ID: "tok_1", Token: messages.TokenPrefix + "x"}, decided{code: messages.CodeInternalError}},
		{"revoke", NewFixture("ada").With(issued), &messages.RevokeTokenRequest{ID: "tok_1"}, decided{record: messages.RecordTokenRevoked}},
		{"revoke again", NewFixture("ada").With(issued, revoked), &messages.RevokeTokenRequest{ID: "tok_1"}, decided{}},
		{"revoke an unknown token", NewFixture("ada"), &messages.RevokeTokenRequest{ID: "tok_9"}, decided{code: messages.CodeNotFound}},
		{"a command of another kind", NewFixture("ada"), &messages.ShowPolicyRequest{}, decided{code: messages.CodeInternalError}},
	}, func(s *User, cmd messages.Command) (*Event, error) { return s.DecideToken(cmd, now) })
}

// DecideAction is the gate of every action: each check refuses with its
// own code, in order, and a risk-reducing action passes the checks that
// only hold back risk.
func TestDecideActionTable(t *testing.T) {
	trader := func() *Fixture { return NewFixture("ada").Trading("linear:BTCUSDT").WithKey("paper") }
	place := func(risk bool) *messages.DecideActionRequest {
		return &messages.DecideActionRequest{Tool: "place_order", Category: messages.CategoryLinear, Symbol: "BTCUSDT", RiskIncreasing: risk, RiskReducing: !risk}
	}
	other := &messages.DecideActionRequest{Tool: "place_order", Category: messages.CategoryLinear, Symbol: "ETHUSDT", RiskIncreasing: true}
	otherReducing := &messages.DecideActionRequest{Tool: "cancel_order", Category: messages.CategoryLinear, Symbol: "ETHUSDT", RiskReducing: true}
	big := place(true)
	big.NotionalUSDT = decimal.NewFromInt(1001) // the default limit is 1000 on paper
	levered := place(true)
	levered.Leverage = decimal.NewFromInt(11) // the default limit is x10
	changed := Event{messages.RecordCredentialChecked, messages.CredentialCheckedEvent{CredentialID: "cred-ada-paper", Environment: "paper",
		Offending: []string{"Withdraw"}, CheckedAt: time.Now().UTC()}}
	live := messages.VenueLive
	for _, c := range []struct {
		name  string
		state *Fixture
		req   *messages.DecideActionRequest
		venue messages.VenueLevel
		want  messages.Code // "" when the action may go on
	}{
		{"allowed", trader(), place(true), messages.VenuePaper, ""},
		{"no such user", &Fixture{s: New("ghost")}, place(true), messages.VenuePaper, messages.CodeNotFound},
		{"disabled user", trader().Disabled(), place(false), messages.VenuePaper, messages.CodePermissionDenied},
		{"kill switch, risk increasing", trader().WithKillSwitch(messages.KillSwitchUser), place(true), messages.VenuePaper, messages.CodeKillSwitchActive},
		{"kill switch, risk reducing", trader().WithKillSwitch(messages.KillSwitchAdmin), place(false), messages.VenuePaper, ""},
		{"reducing, risk increasing", trader().WithPosture(messages.CauseHuman), place(true), messages.VenuePaper, messages.CodeLimitExceeded},
		{"reducing, risk reducing", trader().WithPosture(messages.CauseDailyLoss), place(false), messages.VenuePaper, ""},
		{"read_only profile", NewFixture("ada").WithKey("paper"), place(true), messages.VenuePaper, messages.CodePermissionDenied},
		{"read_only profile, risk reducing", NewFixture("ada").WithKey("paper"), place(false), messages.VenuePaper, messages.CodePermissionDenied},
		{"read-only key caps the profile", NewFixture("ada").Trading("linear:BTCUSDT").WithReadOnlyKey("paper"), place(true), messages.VenuePaper, messages.CodePermissionDenied},
		{"own settings read_only", trader().WithOwn(messages.PolicySettings{Profile: prof(messages.ProfileReadOnly)}), place(true), messages.VenuePaper, messages.CodePermissionDenied},
		{"a read tool under read_only", NewFixture("ada"), &messages.DecideActionRequest{Tool: "get_positions"}, messages.VenuePaper, ""},
		{"venue above the ceiling", trader(), place(true), live, messages.CodeVenueNotArmed},
		{"venue armed by the ceiling", trader().WithCeiling(messages.PolicySettings{VenueCeiling: &live}), place(true), live, ""},
		{"no key", NewFixture("ada").Trading("linear:BTCUSDT"), place(true), messages.VenuePaper, messages.CodeExchangeCredentialsInvalid},
		{"key for another venue", NewFixture("ada").Trading("linear:BTCUSDT").WithKey("bybit-demo"), place(true), messages.VenuePaper, messages.CodeExchangeCredentialsInvalid},
		{"key permissions changed", trader().With(changed), place(false), messages.VenuePaper, messages.CodeCredentialsPermissionsChanged},
		{"not on the allowlist", trader(), other, messages.VenuePaper, messages.CodePermissionDenied},
		{"not on the allowlist, risk reducing", trader(), otherReducing, messages.VenuePaper, ""},
		{"order value above the limit", trader(), big, messages.VenuePaper, messages.CodeLimitExceeded},
		{"leverage above the limit", trader(), levered, messages.VenuePaper, messages.CodeLimitExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.state.Build()
			before := fingerprint(s)
			var got messages.Code
			if e := s.DecideAction(c.req, c.venue, "paper"); e != nil {
				got = e.Code
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if fingerprint(s) != before {
				t.Fatal("DecideAction changed the state")
			}
		})
	}
}

// A refusal for the profile names what a human changes: the read-only
// key, the user's own setting, or (by default) the ceiling.
func TestProfileRefusalNamesTheFix(t *testing.T) {
	req := &messages.DecideActionRequest{Tool: "place_order", Category: messages.CategoryLinear, Symbol: "BTCUSDT", RiskIncreasing: true}
	for _, c := range []struct {
		name  string
		state *Fixture
		fix   string
	}{
		{"read-only key", NewFixture("ada").Trading("linear:BTCUSDT").WithReadOnlyKey("paper"), "guarded-exchange keys replace --user ada --venue paper"},
		{"own setting", NewFixture("ada").Trading("linear:BTCUSDT").WithKey("paper").WithOwn(messages.PolicySettings{Profile: prof(messages.ProfileReadOnly)}),
			"guarded-exchange admin policy reset-overrides --user ada --field profile"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := c.state.Build().DecideAction(req, messages.VenuePaper, "paper")
			if e == nil || e.Details["fix"] != c.fix {
				t.Fatalf("got %+v, want the fix %q", e, c.fix)
			}
		})
	}
	if e := NewFixture("ada").WithKey("paper").Build().DecideAction(req, messages.VenuePaper, "paper"); e == nil || e.Code != messages.CodePermissionDenied {
		t.Fatalf("default profile: %+v", e)
	}
}
