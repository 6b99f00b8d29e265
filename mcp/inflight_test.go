package mcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// With the venue's answer delayed 5 s (a simulator fault on the key
// check), activate_kill_switch and get_my_policy for the same user are
// answered while the delayed action still waits, and the delayed action
// completes afterwards.
func TestToolsAnswerWhileAnActionWaitsOnTheVenue(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.sys.Handle(ctx, &messages.CreateUserRequest{User: "kim"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	e.addKey(t, "kim")
	simDo(t, http.MethodPost, e.simURL+"/sim/faults", map[string]any{"kind": "delay", "path": "/v5/user/query-api", "delay_ms": 5000}, nil)
	done := make(chan error, 1)
	go func() {
		_, err := e.sys.Handle(ctx, &messages.RecheckCredentialRequest{User: "kim", Environment: "paper"}, messages.ActorSystem)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // the re-check is at the venue

	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("kim", ProfileReadOnly)}, "")
	out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{})
	if isErr || out["changed"] != true {
		t.Fatalf("activate_kill_switch: %v", out)
	}
	pol, isErr := callJSON(t, cs, "get_my_policy", map[string]any{})
	if isErr || pol["kill_switch"] != "user" {
		t.Fatalf("get_my_policy: %v", pol)
	}
	select {
	case err := <-done:
		t.Fatalf("the delayed action finished before the tools answered: %v", err)
	default:
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the delayed action failed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the delayed action never completed")
	}
}
