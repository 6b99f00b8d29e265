package mcp

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// fakeStartup counts Begin and answers HoldTrading with err.
type fakeStartup struct {
	begun, held atomic.Int32
	user        atomic.Value
	err         error
}

func (f *fakeStartup) Begin() { f.begun.Add(1) }

func (f *fakeStartup) HoldTrading(_ context.Context, user string) error {
	f.held.Add(1)
	f.user.Store(user)
	return f.err
}

// Every tools/call begins the start-up work; only a trading call waits
// on it, and its refusal is the answer, the handler never run.
func TestStartupHoldsOnlyTradingCalls(t *testing.T) {
	e := newEnv(t)
	var ran atomic.Int32
	trade := &tool{name: "test_trade", title: "trade", description: "trade", kind: KindTrade, schema: objectSchema(nil, map[string]any{}),
		handle: func(context.Context, *call) (any, error) { ran.Add(1); return map[string]any{}, nil }}
	hold := &fakeStartup{err: &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "held", Details: map[string]any{"reason": "checking_key"}}}
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), extraTools: []*tool{trade}, Startup: hold}, "")

	if out, isErr := callJSON(t, cs, "get_my_policy", map[string]any{}); isErr {
		t.Fatalf("get_my_policy: %v", out)
	}
	if hold.begun.Load() != 1 || hold.held.Load() != 0 {
		t.Fatalf("a read: begun %d, held %d; want 1, 0", hold.begun.Load(), hold.held.Load())
	}
	out, isErr := callJSON(t, cs, "test_trade", map[string]any{})
	if d, _ := out["details"].(map[string]any); !isErr || out["code"] != "exchange_unavailable" || d["reason"] != "checking_key" {
		t.Fatalf("a held trading call: %v", out)
	}
	if hold.held.Load() != 1 || hold.user.Load() != "alice" || ran.Load() != 0 {
		t.Fatalf("held %d for %v, handler ran %d times", hold.held.Load(), hold.user.Load(), ran.Load())
	}
	hold.err = nil
	if out, isErr := callJSON(t, cs, "test_trade", map[string]any{}); isErr || ran.Load() != 1 {
		t.Fatalf("a released trading call: %v (ran %d)", out, ran.Load())
	}
}
