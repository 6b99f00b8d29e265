package mcp

import (
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// wantRefusal checks a refusal's code and exact texts, and its fix hint.
func wantRefusal(t *testing.T, what string, out map[string]any, isErr bool, code messages.Code, msg, next, fix string) {
	t.Helper()
	d, _ := out["details"].(map[string]any)
	if !isErr || out["code"] != string(code) {
		t.Fatalf("%s: %v", what, out)
	}
	if out["message"] != msg {
		t.Errorf("%s: message\n got %q\nwant %q", what, out["message"], msg)
	}
	if out["next_step"] != next {
		t.Errorf("%s: next_step\n got %q\nwant %q", what, out["next_step"], next)
	}
	if d["fix"] != fix {
		t.Errorf("%s: details.fix\n got %q\nwant %q", what, d["fix"], fix)
	}
}

// After init the agent is read-only: a trading tool called by name is
// refused with the profile named and the command that grants trading;
// the code and the limit details stay those of docs/errors.md.
func TestReadOnlyRefusalNamesTheFix(t *testing.T) {
	e := newEnv(t)
	ro := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, "")
	out, isErr := callJSON(t, ro, "place_order", limitOrder("30000"))
	fix := "guarded-exchange admin policy set-ceiling --user local --profile trade --allow linear:BTCUSDT"
	wantRefusal(t, "read_only, place_order", out, isErr, messages.CodePermissionDenied,
		"trading tools need the trade profile, and this user's profile is read_only (every new user starts read_only)",
		"a human grants trading outside the chat with `"+fix+"` (--allow names the instruments); until then use the tools tools/list shows", fix)
	if d, _ := out["details"].(map[string]any); d["limit"] != "profile" || d["allowed"] != "read_only" {
		t.Fatalf("details %v", d)
	}
	// The user actor's own gate says the same (a session whose profile
	// was read before the policy changed, a CLI order).
	tr := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("bob", ProfileTrade)}, "")
	e.addKey(t, "bob")
	out, isErr = callJSON(t, tr, "place_order", limitOrder("30000"))
	fix = "guarded-exchange admin policy set-ceiling --user bob --profile trade --allow linear:BTCUSDT"
	wantRefusal(t, "the actor's gate", out, isErr, messages.CodePermissionDenied,
		"trading tools need the trade profile, and this user's profile is read_only (every new user starts read_only)",
		"a human grants trading outside the chat with `"+fix+"` (--allow names the instruments); until then use the tools tools/list shows", fix)
	// The user's own read_only setting is removed by the admin.
	paper := messages.VenuePaper
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "bob", Settings: messages.PolicySettings{Profile: profp(messages.ProfileTrade),
		Allow: stringsp("linear:BTCUSDT"), VenueCeiling: &paper}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sys.Handle(context.Background(), &messages.TightenPolicyRequest{User: "bob", Settings: messages.PolicySettings{Profile: profp(messages.ProfileReadOnly)}},
		messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	out, isErr = callJSON(t, tr, "place_order", limitOrder("30000"))
	fix = "guarded-exchange admin policy reset-overrides --user bob --field profile"
	wantRefusal(t, "own read_only", out, isErr, messages.CodePermissionDenied,
		"trading tools need the trade profile, and the user's own settings set the profile to read_only",
		"a human fixes it outside the chat with `"+fix+"`", fix)
}

// Once the agent may trade, every trading tool needs a human by default:
// with no channel the refusal says why each channel is closed and names
// what opens one; code and the confirmation details are unchanged.
func TestNoChannelRefusalNamesTheFix(t *testing.T) {
	e := newEnv(t)
	e.confirmUser(t, "alice", false)
	plain := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	out, isErr := callJSON(t, plain, "place_order", limitOrder("30000"))
	cli := "restart the server with `GX_CONFIRM_CLI_ENABLED=true guarded-exchange serve` and approve with `guarded-exchange confirm approve`"
	wantRefusal(t, "a client without forms", out, isErr, messages.CodeConfirmationChannelUnavailable,
		"the policy (confirm_actions) requires a human to confirm this action, and no confirmation channel is set up: "+
			"this MCP client does not show forms (it declared no form elicitation), and the server runs without GX_CONFIRM_CLI_ENABLED=true; nothing was sent",
		"a human, outside the chat: "+cli+", or use an MCP client that shows forms (form elicitation); or change confirm_actions",
		"GX_CONFIRM_CLI_ENABLED=true guarded-exchange serve")
	if d, _ := out["details"].(map[string]any); d["confirmed_by"] != "confirm_actions" {
		t.Fatalf("details %v", d)
	}
	forms := formClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "2025-11-25", formAnswers[0], &asked{})
	out, isErr = callJSON(t, forms, "place_order", limitOrder("30000.1"))
	trust := "guarded-exchange admin policy set-ceiling --user alice --trust-client-ui true"
	wantRefusal(t, "a form the policy does not trust", out, isErr, messages.CodeConfirmationChannelUnavailable,
		"the policy (confirm_actions) requires a human to confirm this action, and no confirmation channel is set up: "+
			"the policy does not trust the client's form (trust_client_ui is false), and the server runs without GX_CONFIRM_CLI_ENABLED=true; nothing was sent",
		"a human, outside the chat: let the client's form confirm with `"+trust+"`, or "+cli+"; or change confirm_actions", trust)
}
