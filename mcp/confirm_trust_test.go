package mcp

import (
	"bytes"
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The human turns trust_client_ui off while a form waits: a repeat of the
// parked call, or of the form's round without an answer, shows no form
// again (the pending answer), and the answer to
// the form shown before is refused by the user actor (client_ui_untrusted):
// nothing is decided or sent, the confirmation still waits for the CLI.
func TestClientFormTrustRevoked(t *testing.T) {
	e := newEnv(t)
	key := e.confirmUser(t, "alice", true)
	cs := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), Venue: "paper"})
	order := limitOrder("30000")
	_, state := firstRound(t, cs, "place_order", order)
	no := false
	if _, err := e.sys.Handle(context.Background(), &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{TrustClientUI: &no}},
		messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	repeat, err := answerRoundErr(cs, "place_order", order, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if repeat["input_required"] == true || repeat["status"] != "pending" {
		t.Fatalf("the repeat after trust was revoked: %v", repeat)
	}
	// The repeat that carries the state but no answer asks no form
	// again either.
	if again := answerRound(t, cs, "place_order", order, state, nil); again["input_required"] == true || again["status"] != "pending" {
		t.Fatalf("the state without an answer after trust was revoked: %v", again)
	}
	out := answerRound(t, cs, "place_order", order, state, ticked)
	d, _ := out["details"].(map[string]any)
	if out["is_error"] != true || out["code"] != string(messages.CodePermissionDenied) || d["reason"] != "client_ui_untrusted" {
		t.Fatalf("the form's approval after trust was revoked: %v", out)
	}
	if st := e.onlyConfirmation(t, "alice"); st.Status != messages.ConfirmStatusPending || len(e.ordersOf(t, key)) != 0 {
		t.Fatalf("status %s, %d orders", st.Status, len(e.ordersOf(t, key)))
	}
}

// A form made by a server on one venue is refused by a server on another
// venue (same state key: a restart with another --venue), and a repeat of
// the call there shows no form: the confirmation belongs to the venue it
// was parked on.
func TestClientFormBoundToVenue(t *testing.T) {
	e := newEnv(t)
	key := e.confirmUser(t, "alice", true)
	stateKey := bytes.Repeat([]byte{4}, 32)
	paper := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), Venue: "paper", StateKey: stateKey})
	demo := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), Venue: "bybit-demo", StateKey: stateKey})
	order := limitOrder("30000")
	_, state := firstRound(t, paper, "place_order", order)
	out := answerRound(t, demo, "place_order", order, state, ticked)
	wantStateRefused(t, "on another venue", out)
	if d, _ := out["details"].(map[string]any); d["reason"] != stateReasonVenue {
		t.Fatalf("reason %v", d["reason"])
	}
	repeat := answerRound(t, demo, "place_order", order, "", nil)
	if repeat["input_required"] == true || repeat["status"] != "pending" {
		t.Fatalf("a repeat on another venue: %v", repeat)
	}
	if st := e.onlyConfirmation(t, "alice"); st.Status != messages.ConfirmStatusPending || len(e.ordersOf(t, key)) != 0 {
		t.Fatalf("status %s, %d orders", st.Status, len(e.ordersOf(t, key)))
	}
	// On its own venue the same state still decides.
	if out := answerRound(t, paper, "place_order", order, state, ticked); out["is_error"] == true || len(e.ordersOf(t, key)) != 1 {
		t.Fatalf("on its own venue: %v, %d orders", out, len(e.ordersOf(t, key)))
	}
}
