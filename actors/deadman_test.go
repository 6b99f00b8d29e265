package actors

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// fired waits up to within for the dead-man switch of the test system to
// fire and journal its trigger (its log line), and reports whether it did.
func fired(ts *testSystem, within time.Duration) bool {
	return logged(ts, "dead-man switch trigger journaled", within)
}

// logged waits up to within for a log line with message msg.
func logged(ts *testSystem, msg string, within time.Duration) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(ts.buf.String(), `"msg":"`+msg+`"`) {
			return true
		}
	}
	return false
}

// silenceTriggers reads the deadman_triggered records (stopping the
// system) and checks each is a silence trigger for heartbeat_s hb.
func silenceTriggers(t *testing.T, ts *testSystem, hb int) int {
	t.Helper()
	n := 0
	for _, r := range ts.records(t) {
		if messages.RecordType(r.Type) != messages.RecordDeadmanTriggered {
			continue
		}
		var ev messages.DeadmanTriggeredEvent
		if err := json.Unmarshal(r.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Reason != messages.DeadmanSilence || ev.HeartbeatS != hb || r.Actor != deadmanOrigin.Actor() {
			t.Fatalf("deadman_triggered: %s by %s", r.Payload, r.Actor)
		}
		n++
	}
	return n
}

func heartbeat(t *testing.T, ts *testSystem, hb int) {
	t.Helper()
	ts.must(t, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{HeartbeatS: &hb}}, messages.ActorCLIUser)
}

// A human turns heartbeat_s on while the agent is connected but silent:
// the timer is armed by the policy change itself, so the switch fires
// without waiting for another message.
func TestHeartbeatTurnedOnWhileTheAgentIsSilentFires(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	ctx := context.Background()
	ts.SessionEvent(ctx, "alice", messages.SessionOpened)
	ts.SessionEvent(ctx, "alice", messages.SessionHeard)
	heartbeat(t, ts, 1)
	if !fired(ts, 5*time.Second) {
		t.Fatal("heartbeat_s=1 turned on while the agent was silent: the switch never fired")
	}
	if n := silenceTriggers(t, ts, 1); n == 0 {
		t.Fatal("no deadman_triggered record")
	}
}

// After a restart a user with heartbeat_s on is started with the server
// and silence counts from then: with no session at all the switch fires
// heartbeat_s later.
func TestHeartbeatArmedAtStartWithoutASession(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	heartbeat(t, ts, 1)
	ts.stop()
	ts = startUsers(t, dir)
	if !fired(ts, 5*time.Second) {
		t.Fatal("heartbeat_s=1 and no session after a restart: the switch never fired")
	}
	if n := silenceTriggers(t, ts, 1); n == 0 {
		t.Fatal("no deadman_triggered record")
	}
}

// A tool call in flight (a long wait_for_update) is a sign of life: the
// switch does not fire while it lasts, and fires heartbeat_s after it
// ends when nothing else is heard.
func TestHeartbeatCallInFlightIsNotSilence(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	heartbeat(t, ts, 1)
	ctx := context.Background()
	ts.SessionEvent(ctx, "alice", messages.SessionOpened)
	ts.SessionEvent(ctx, "alice", messages.SessionCallStarted)
	if logged(ts, "dead-man switch fired", 2500*time.Millisecond) {
		t.Fatal("the switch fired while a call of the agent was in flight")
	}
	ts.SessionEvent(ctx, "alice", messages.SessionCallEnded)
	if !fired(ts, 5*time.Second) {
		t.Fatal("the switch never fired after the call ended and the agent fell silent")
	}
	if n := silenceTriggers(t, ts, 1); n == 0 {
		t.Fatal("no deadman_triggered record")
	}
}
