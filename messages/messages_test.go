package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// specCodes are the codes of docs/errors.md, copied from the contract; the registry
// must hold exactly these.
var specCodes = []string{
	"invalid_params", "permission_denied", "kill_switch_active", "limit_exceeded",
	"instrument_rule_violation", "confirmation_required", "confirmation_channel_unavailable",
	"pending_limit_reached", "idempotency_conflict", "outcome_unknown", "rate_limited",
	"exchange_rejected", "exchange_unavailable", "exchange_credentials_invalid",
	"credentials_permissions_changed", "unsupported_position_mode", "not_found",
	"venue_not_armed", "internal_error",
}

func TestCodeRegistryMatchesSpec(t *testing.T) {
	seen := map[Code]bool{}
	for _, info := range Codes {
		if seen[info.Code] {
			t.Errorf("duplicate code %q", info.Code)
		}
		seen[info.Code] = true
		if len(info.Description) < 10 {
			t.Errorf("code %q has no real description", info.Code)
		}
	}
	for _, c := range specCodes {
		if !seen[Code(c)] {
			t.Errorf("docs/errors.md code %q missing from the registry", c)
		}
		delete(seen, Code(c))
	}
	for c := range seen {
		t.Errorf("code %q is not in docs/errors.md", c)
	}
}

func TestDocsListEveryCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range Codes {
		if !strings.Contains(string(doc), "`"+string(info.Code)+"`") {
			t.Errorf("docs/errors.md does not document %q", info.Code)
		}
	}
}

func TestRecordTypesUniqueAndNamed(t *testing.T) {
	nums, names := map[RecordType]bool{}, map[string]bool{}
	name := regexp.MustCompile(`^[a-z][a-z_]+$`)
	for _, info := range RecordTypes {
		if info.Type == 0 {
			t.Errorf("%s: type number 0 is reserved", info.Name)
		}
		if nums[info.Type] {
			t.Errorf("duplicate record type number %d", info.Type)
		}
		if names[info.Name] {
			t.Errorf("duplicate record type name %q", info.Name)
		}
		if !name.MatchString(info.Name) {
			t.Errorf("bad record type name %q", info.Name)
		}
		nums[info.Type], names[info.Name] = true, true
		if got, ok := RecordTypeByName(info.Name); !ok || got != info.Type {
			t.Errorf("RecordTypeByName(%q) = %d, %v", info.Name, got, ok)
		}
		if info.Type.String() != info.Name {
			t.Errorf("%d.String() = %q, want %q", info.Type, info.Type.String(), info.Name)
		}
	}
	// docs/journal-format.md names that must exist.
	for _, n := range []string{"tool_call", "order_refused", "order_attempt", "order_outcome", "order_repeat",
		"confirmation_requested", "confirmation_decided", "confirmation_executed", "kill_switch_on",
		"kill_switch_off", "policy_ceiling_set", "policy_tightened", "policy_overrides_reset",
		"credential_added", "credential_deleted", "token_issued", "token_revoked", "user_created",
		"recovered_torn_tail"} {
		if !names[n] {
			t.Errorf("docs/journal-format.md record type %q missing", n)
		}
	}
	if got := RecordType(9999).String(); got != "type_9999" {
		t.Errorf("unknown type name = %q", got)
	}
}

func TestCodeOf(t *testing.T) {
	wrapped := fmt.Errorf("outer: %w", InvalidParams("qty", "must be a JSON string"))
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom"), CodeInternalError},
		{"direct", Errorf(CodeNotFound, "no such order"), CodeNotFound},
		{"wrapped", wrapped, CodeInvalidParams},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CodeOf(c.err); got != c.want {
				t.Errorf("CodeOf = %q, want %q", got, c.want)
			}
		})
	}
	e := AsError(wrapped)
	if e.Details["field"] != "qty" || e.Details["reason"] != "must be a JSON string" {
		t.Errorf("details = %v", e.Details)
	}
	if AsError(nil) != nil {
		t.Error("AsError(nil) must be nil")
	}
	if in := AsError(errors.New("secret-ish cause")); in.Code != CodeInternalError || strings.Contains(in.Message, "secret") {
		t.Errorf("internal message leaks the cause: %q", in.Message)
	}
}

// A list set to the empty list is written as [] even when its slice is
// nil, and a null read back (from a journal written before that) is the
// empty list, set, never "not set" (the default). Unknown fields are
// refused whatever the caller's decoder does.
func TestPolicySettingsEmptyListJSON(t *testing.T) {
	var nilList []string
	b, err := json.Marshal(PolicySettings{ConfirmActions: &nilList, Allow: &nilList})
	if err != nil || string(b) != `{"allow":[],"confirm_actions":[]}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var s PolicySettings
	if err := json.Unmarshal([]byte(`{"confirm_actions":null,"allow":null,"max_pending":3}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.ConfirmActions == nil || len(*s.ConfirmActions) != 0 || s.Allow == nil || len(*s.Allow) != 0 || s.MaxPending == nil || *s.MaxPending != 3 {
		t.Fatalf("unmarshal null lists: %+v", s)
	}
	if p := Effective(VenuePaper, s, PolicySettings{}); len(p.ConfirmActions) != 0 {
		t.Fatalf("a null confirm_actions gives the default again: %v", p.ConfirmActions)
	}
	var absent PolicySettings
	if err := json.Unmarshal([]byte(`{"max_pending":3}`), &absent); err != nil || absent.ConfirmActions != nil {
		t.Fatalf("an absent list must stay unset: %+v %v", absent, err)
	}
	if err := json.Unmarshal([]byte(`{"max_pendingx":3}`), &absent); err == nil {
		t.Fatal("an unknown field was accepted")
	}
	round := PolicySettings{ConfirmActions: &[]string{"place_order"}}
	b, _ = json.Marshal(round)
	var back PolicySettings
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(round) {
		t.Fatalf("round trip: %s %+v %v", b, back, err)
	}
}
