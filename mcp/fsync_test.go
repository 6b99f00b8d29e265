package mcp

import (
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A state-changing tool call costs one fsync: its tool_call record goes to
// disk with the call's own record, not in a flush of its own. A call that
// writes nothing else still makes its tool_call durable before it answers,
// with one flush.
func TestStateChangingCallIsOneFsync(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.sys.Handle(ctx, &messages.CreateUserRequest{User: "kim"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("kim", ProfileReadOnly)}, "")
	for i, wantChanged := range []bool{true, false} {
		before := e.sys.Flushes()
		out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{})
		if isErr || out["changed"] != wantChanged {
			t.Fatalf("call %d: %v", i, out)
		}
		if n := e.sys.Flushes() - before; n != 1 {
			t.Fatalf("call %d (changed %v) took %d flushes, want 1", i, wantChanged, n)
		}
	}
	// Both calls' records are in the journal, each tool_call before what
	// its call changed.
	var types []string
	for _, r := range e.records(t) {
		if r.User == "kim" && messages.RecordType(r.Type) != messages.RecordUserCreated {
			types = append(types, messages.RecordType(r.Type).String())
		}
	}
	want := []string{"tool_call", "kill_switch_on", "posture_changed", "tool_call"}
	if len(types) != len(want) {
		t.Fatalf("journal %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("journal %v, want %v", types, want)
		}
	}
}
