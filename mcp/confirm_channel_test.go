package mcp

import (
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A client that declared form elicitation, on a policy that does not trust
// the client's UI and with no CLI channel: the refusal names
// trust_client_ui as the limit that refused (the form was there, the
// setting kept it from deciding), and still says which setting asked.
func TestChannelUnavailableNamesTrustClientUI(t *testing.T) {
	e := newEnv(t)
	e.confirmUser(t, "alice", false)
	cs := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), Venue: "paper"})
	out, isErr := callJSON(t, cs, "place_order", limitOrder("30000"))
	d, _ := out["details"].(map[string]any)
	if !isErr || out["code"] != string(messages.CodeConfirmationChannelUnavailable) {
		t.Fatalf("want confirmation_channel_unavailable, got %v", out)
	}
	if d["limit"] != "trust_client_ui" || d["allowed"] != "false" || d["confirmed_by"] != messages.ConfirmByActions {
		t.Fatalf("details %v: want limit trust_client_ui, allowed false, confirmed_by confirm_actions", d)
	}
}
