package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// postureOf reads a user's posture as a human would.
func postureOf(t *testing.T, e *env, user string) *messages.PostureView {
	t.Helper()
	res, err := e.sys.Handle(context.Background(), &messages.ShowPostureRequest{User: user}, messages.ActorCLIUser)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*messages.PostureView)
}

// The agent enters REDUCING with reduce_risk_only, but cannot leave it.
func TestAgentEntersReducingButNeverLeaves(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	out, isErr := callJSON(t, cs, "reduce_risk_only", map[string]any{})
	if isErr || out["state"] != "REDUCING" || out["changed"] != true {
		t.Fatalf("reduce_risk_only: %v", out)
	}
	if out, _ := callJSON(t, cs, "reduce_risk_only", map[string]any{}); out["changed"] == true {
		t.Fatalf("repeating reduce_risk_only changed something: %v", out)
	}
	if out, isErr := callJSON(t, cs, "reduce_risk_only", map[string]any{"reduce": false}); !isErr || out["code"] != "invalid_params" {
		t.Fatalf("reduce_risk_only with an argument: %v", out)
	}
	res, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, res, isErr, messages.CauseAgent)
	if _, err := e.sys.Handle(context.Background(), &messages.SetPostureRequest{User: "alice"}, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("the agent resuming through the backend: want permission_denied, got %v", err)
	}
	if v := postureOf(t, e, "alice"); v.State != messages.PostureReducing || len(v.Why) != 1 || v.Why[0] != messages.CauseAgent {
		t.Fatalf("posture after the agent tried to leave: %+v", v)
	}
	if _, err := e.sys.Handle(context.Background(), &messages.SetPostureRequest{User: "alice"}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	if out, isErr := callJSON(t, cs, "place_order", limitBuy("30000")); isErr {
		t.Fatalf("a new order after a human resumed: %v", out)
	}
}

// A hostile agent tries every tool with crafted arguments; no tool or
// argument leaves REDUCING (a human's) or HALTED, and nothing it does is
// journaled as a posture change that removes a cause.
func TestHostileAgentCannotLeaveReducingOrHalted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.tradeUser(t, "alice", messages.PolicySettings{}) // REDUCING by a human
	e.tradeUser(t, "victim", messages.PolicySettings{})
	for _, c := range []struct {
		cmd   messages.Command
		actor string
	}{
		{&messages.SetPostureRequest{User: "alice", Reduce: true}, messages.ActorCLIUser},
		{&messages.SetPostureRequest{User: "victim", Reduce: true}, messages.ActorCLIUser},
		{&messages.SetKillSwitchRequest{User: "victim", On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser}, // HALTED
	} {
		if _, err := e.sys.Handle(ctx, c.cmd, c.actor); err != nil {
			t.Fatal(err)
		}
	}
	for _, user := range []string{"alice", "victim"} {
		for _, cmd := range []messages.Command{
			&messages.SetPostureRequest{User: user},
			&messages.SetKillSwitchRequest{User: user, On: false, Level: messages.KillSwitchUser},
			&messages.SetKillSwitchRequest{User: user, On: false, Level: messages.KillSwitchAdmin},
		} {
			if _, err := e.sys.Handle(ctx, cmd, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
				t.Errorf("%s: the agent sent %T: want permission_denied, got %v", user, cmd, err)
			}
		}
		cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal(user, ProfileTrade)}, "")
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range list.Tools {
			for _, args := range craftedArgs {
				res, err := cs.CallTool(ctx, toolParams(tl.Name, args))
				if err == nil && !res.IsError && !safeToSucceed(tl.Name) && tl.Name != "cancel_all_orders" {
					t.Errorf("%s %s %v succeeded", user, tl.Name, args)
				}
			}
		}
	}
	// The agent may make things stricter (activate_kill_switch), never
	// looser.
	if v := postureOf(t, e, "alice"); v.State == messages.PostureActive || !containsString(v.Why, messages.CauseHuman) {
		t.Fatalf("alice left REDUCING: %+v", v)
	}
	if v := postureOf(t, e, "victim"); v.State != messages.PostureHalted || v.KillSwitch != messages.KillSwitchUser || !containsString(v.Why, messages.CauseHuman) {
		t.Fatalf("victim left HALTED: %+v", v)
	}
	for _, r := range e.records(t) {
		typ := messages.RecordType(r.Type)
		if typ == messages.RecordKillSwitchOff {
			t.Errorf("kill switch turned off by %s", r.Actor)
		}
		if typ == messages.RecordPostureChanged && r.Actor == messages.ActorAgent && !agentPostureRecordOnlyAdds(t, r.Payload) {
			t.Errorf("the agent journaled a posture change that loosens: %s", r.Payload)
		}
		if typ == messages.RecordOrderAttempt && r.Actor == messages.ActorAgent {
			var a messages.OrderAttemptEvent
			if err := jsonUnmarshal(r.Payload, &a); err != nil {
				t.Fatal(err)
			}
			if a.RiskIncreasing {
				t.Errorf("a risk-increasing order was sent under REDUCING: %s", r.Payload)
			}
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
