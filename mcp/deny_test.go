package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// --deny-tool place_order: no profile lists it and a call is refused with
// permission_denied, whatever the profile; the other tools still work.
func TestDenyToolHidesAndRefuses(t *testing.T) {
	e := newEnv(t)
	for _, profile := range []string{ProfileReadOnly, ProfileTrade} {
		cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", profile), DenyTools: []string{"place_order", "get_ticker"}}, "")
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if slices.Contains(names, "place_order") || slices.Contains(names, "get_ticker") || !slices.Contains(names, "get_my_policy") {
			t.Fatalf("%s: tools/list %v", profile, names)
		}
		for _, name := range []string{"place_order", "get_ticker"} {
			out, isErr := callJSON(t, cs, name, map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.001"})
			if !isErr || out["code"] != "permission_denied" || !strings.Contains(out["message"].(string), "operator") {
				t.Fatalf("%s: %s: %v", profile, name, out)
			}
		}
		if _, isErr := callJSON(t, cs, "get_my_policy", map[string]any{}); isErr {
			t.Fatalf("%s: get_my_policy refused", profile)
		}
	}
	// Every refused call is journaled, not admitted.
	denied := 0
	for _, r := range e.records(t) {
		if messages.RecordType(r.Type) == messages.RecordToolCall && strings.Contains(string(r.Payload), `"tool":"place_order"`) {
			if !strings.Contains(string(r.Payload), `"admitted":false`) {
				t.Fatalf("a withheld call was admitted: %s", r.Payload)
			}
			denied++
		}
	}
	if denied != 2 {
		t.Fatalf("%d place_order calls journaled, want 2", denied)
	}
}

// An unknown name refuses to build the server, with an error that names
// the entry, not its text.
func TestDenyToolUnknownName(t *testing.T) {
	e := newEnv(t)
	_, err := NewServer(Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), DenyTools: []string{"get_ticker", "place-order!"}})
	if err == nil || !strings.Contains(err.Error(), "entry 2") || strings.Contains(err.Error(), "place-order!") {
		t.Fatalf("NewServer: %v", err)
	}
	if err := CheckDenyTools([]string{"wait_for_update", "place_order"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckDenyTools([]string{"nope"}); err == nil {
		t.Fatal("CheckDenyTools accepted an unknown name")
	}
}

// An agent that pipelines calls gets rate_limited with retry_after_s
// beyond its session's budget; the refused calls journal no tool_call,
// only one calls_rate_limited count per interval (and the rest when the
// session ends). Another session has its own budget.
func TestCallRateLimitPerSession(t *testing.T) {
	e := newEnv(t)
	pr := NewPresence()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now } // frozen: the bucket never refills
	o := Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly), CallsPerSecond: 1, CallBurst: 5, Presence: pr, now: clock}
	cs := connect(t, o, "")
	refused := 0
	for i := 0; i < 25; i++ {
		out, isErr := callJSON(t, cs, "get_my_policy", map[string]any{})
		if !isErr {
			continue
		}
		if out["code"] != "rate_limited" || out["retry_after_s"] == nil || out["next_step"] == nil {
			t.Fatalf("call %d: %v", i, out)
		}
		refused++
	}
	if refused != 20 {
		t.Fatalf("%d calls refused, want 20 (burst 5 of 25)", refused)
	}
	other := connect(t, o, "")
	if _, isErr := callJSON(t, other, "get_my_policy", map[string]any{}); isErr {
		t.Fatal("another session shares the budget")
	}
	_ = cs.Close()
	_ = other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var toolCalls, limitRecords, counted int
	for _, r := range e.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordToolCall:
			toolCalls++
		case messages.RecordCallsRateLimited:
			limitRecords++
			var ev messages.CallsRateLimitedEvent
			if err := json.Unmarshal(r.Payload, &ev); err != nil || ev.User != "alice" {
				t.Fatalf("calls_rate_limited %s", r.Payload)
			}
			counted += ev.Count
		}
	}
	// 5 admitted calls in the first session, 1 in the other.
	if toolCalls != 6 {
		t.Fatalf("%d tool_call records, want 6", toolCalls)
	}
	// The first refusal is journaled at once (1), the other 19 within the
	// same interval at the session's end: two records for 20 refusals.
	if limitRecords != 2 || counted != 20 {
		t.Fatalf("%d calls_rate_limited records counting %d, want 2 counting 20", limitRecords, counted)
	}
}
