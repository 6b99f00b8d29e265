package messages

import (
	"slices"
	"testing"
)

// Every command table entry is complete and consistent with the command
// types, and every record a user actor writes is caused by some command.
func TestCommandTableIsComplete(t *testing.T) {
	names := map[string]bool{}
	caused := map[RecordType]bool{}
	for _, c := range Commands {
		if c.Name == "" || names[c.Name] {
			t.Fatalf("empty or duplicate command name %q", c.Name)
		}
		names[c.Name] = true
		if c.New == nil || c.Result == nil || len(c.Roles) == 0 {
			t.Fatalf("%s: New, Result and Roles are required", c.Name)
		}
		if got := c.New().CommandName(); got != c.Name {
			t.Fatalf("%s: New() makes a %s", c.Name, got)
		}
		if c.Result() == nil {
			t.Fatalf("%s: Result() is nil", c.Name)
		}
		if _, isUser := c.New().(UserCommand); !isUser && !c.Users {
			t.Fatalf("%s: neither a user command nor one for the users supervisor", c.Name)
		}
		for _, r := range c.Records {
			info, ok := RecordInfo(r)
			if !ok || info.Writer != WriterUser {
				t.Fatalf("%s: record %s is not a user actor's record", c.Name, r)
			}
			caused[r] = true
		}
		if cmd, ok := NewCommand(c.Name); !ok || cmd.CommandName() != c.Name {
			t.Fatalf("NewCommand(%s)", c.Name)
		}
	}
	// The action path writes the order records (order_refused from the
	// gate; order_attempt and order_outcome from the trading path's
	// actions, and today from the recovery phase), not a command here;
	// the posture clock writes daily_pnl_noted; the private stream's
	// ingestion stream_dropped; a venue answer or push that matches
	// nothing venue_anomaly.
	actionPath := []RecordType{RecordOrderRefused, RecordOrderAttempt, RecordOrderOutcome, RecordVenueUpdate, RecordOrderRepeat, RecordDeadmanTriggered, RecordDailyPnlNoted, RecordStreamDropped, RecordVenueAnomaly}
	for _, info := range RecordTypes {
		if info.Writer == WriterUser && !caused[info.Type] && !slices.Contains(actionPath, info.Type) {
			t.Fatalf("%s is written by a user actor but no command lists it", info.Name)
		}
	}
}

// Every record type has a writer and a replay kind; only server records
// are system-written.
func TestRecordTableIsComplete(t *testing.T) {
	for _, info := range RecordTypes {
		if info.Writer == 0 || info.Replay == 0 {
			t.Fatalf("%s: writer and replay kind are required", info.Name)
		}
		if info.Writer == WriterSystem && info.Replay != ReplayNone {
			t.Fatalf("%s: a system record must not change user state", info.Name)
		}
		if got, ok := RecordInfo(info.Type); !ok || got.Name != info.Name {
			t.Fatalf("RecordInfo(%d)", info.Type)
		}
	}
}

// Permit: who may do what, tried for every role against every command.
func TestPermitMatrix(t *testing.T) {
	cmds := map[string]Command{
		"show":            &ShowPolicyRequest{User: "u"},
		"tighten":         &TightenPolicyRequest{User: "u"},
		"ceiling":         &SetCeilingRequest{User: "u"},
		"reset":           &ResetOverridesRequest{User: "u"},
		"kill_on":         &SetKillSwitchRequest{User: "u", On: true, Level: KillSwitchUser},
		"kill_off":        &SetKillSwitchRequest{User: "u", On: false, Level: KillSwitchUser},
		"kill_admin_on":   &SetKillSwitchRequest{User: "u", On: true, Level: KillSwitchAdmin},
		"kill_admin_off":  &SetKillSwitchRequest{User: "u", On: false, Level: KillSwitchAdmin},
		"create":          &CreateUserRequest{User: "u"},
		"list":            &ListUsersRequest{},
		"disable":         &DisableUserRequest{User: "u"},
		"keys_add":        &AddCredentialRequest{User: "u"},
		"keys_add_attest": &AddCredentialRequest{User: "u", AdminAttest: true},
		"keys_show":       &ShowCredentialRequest{User: "u"},
		"keys_delete":     &DeleteCredentialRequest{User: "u"},
		"keys_recheck":    &RecheckCredentialRequest{User: "u"},
		"token_issue":     &IssueTokenRequest{User: "u"},
		"token_revoke":    &RevokeTokenRequest{ID: "tok_1"},
		"token_list":      &ListTokensRequest{User: "u"},
		"paper_status":    &PaperStatusRequest{User: "u"},
		"paper_reset":     &PaperResetRequest{User: "u"},
	}
	allowed := map[Role][]string{
		RoleAgent:    {"show", "kill_on"},
		RoleApprover: {"show", "kill_on", "list"},
		RoleUser: {"show", "tighten", "kill_on", "kill_off", "keys_add", "keys_show", "keys_delete", "keys_recheck",
			"paper_status", "paper_reset"},
		RoleAdmin: {"show", "tighten", "ceiling", "reset", "kill_on", "kill_off", "kill_admin_on", "kill_admin_off", "create", "list",
			"disable", "keys_add", "keys_add_attest", "keys_show", "keys_delete", "keys_recheck", "token_issue", "token_revoke", "token_list",
			"paper_status", "paper_reset"},
		RoleSystem: {"show", "kill_on", "list", "keys_show", "keys_recheck", "paper_status"},
	}
	for role, ok := range allowed {
		for name, cmd := range cmds {
			err := Permit(Origin{Role: role}, cmd)
			want := slices.Contains(ok, name)
			if (err == nil) != want {
				t.Errorf("%s %s: permitted %v, want %v (%v)", role, name, err == nil, want, err)
			}
			if err != nil && err.Code != CodePermissionDenied {
				t.Errorf("%s %s: code %s", role, name, err.Code)
			}
		}
	}
}

// The journal actor and channel text of each origin.
func TestOriginJournalFields(t *testing.T) {
	cases := []struct {
		o            Origin
		actor, chanl string
	}{
		{CLIOrigin(&SetCeilingRequest{}, ChannelSocket, 1000, 42, false), ActorCLIAdmin, "socket uid=1000 pid=42"},
		{CLIOrigin(&TightenPolicyRequest{}, ChannelSocket, 1000, 42, false), ActorCLIUser, "socket uid=1000 pid=42"},
		{CLIOrigin(&SetKillSwitchRequest{On: true}, ChannelSocket, 1001, 7, true), ActorCLIUser, "socket uid=1001 pid=7 approver"},
		{CLIOrigin(&ShowPolicyRequest{}, ChannelInProcess, 1000, 9, false), ActorCLIUser, "in-process uid=1000 pid=9"},
		{OriginOfActor(ActorAgent), ActorAgent, ""},
		{OriginOfActor(ActorSystem), ActorSystem, ""},
	}
	for _, c := range cases {
		if c.o.Actor() != c.actor || c.o.ChannelText() != c.chanl {
			t.Errorf("%+v: %s %q, want %s %q", c.o, c.o.Actor(), c.o.ChannelText(), c.actor, c.chanl)
		}
	}
}
