package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func postureOf(t *testing.T, ts *testSystem, user string) *messages.PostureView {
	t.Helper()
	res, err := ts.Handle(context.Background(), &messages.ShowPostureRequest{User: user}, messages.ActorCLIUser)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*messages.PostureView)
}

// A human REDUCING and the kill switch's HALTED are journaled, so they
// survive a restart; the replayed state equals the live one.
func TestPostureSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	if _, err := ts.Handle(context.Background(), &messages.SetPostureRequest{User: "alice", Reduce: true}, messages.ActorAgent); err != nil {
		t.Fatal(err)
	}
	ts.must(t, &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser)
	live := postureOf(t, ts, "alice")
	if live.State != messages.PostureHalted || len(live.Why) != 2 || live.Why[1] != messages.CauseAgent {
		t.Fatalf("live posture %+v", live)
	}
	ts.stop()
	ts = startUsers(t, dir)
	if got := postureOf(t, ts, "alice"); got.State != live.State || len(got.Why) != len(live.Why) || got.Why[1] != messages.CauseAgent {
		t.Fatalf("replayed posture %+v, live %+v", got, live)
	}
	ts.must(t, &messages.SetKillSwitchRequest{User: "alice", On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser)
	if got := postureOf(t, ts, "alice"); got.State != messages.PostureReducing {
		t.Fatalf("after the kill switch went off, the agent's REDUCING must hold: %+v", got)
	}
}

// A posture_changed record the server could not have written refuses
// start: the agent lifting a human's REDUCING, or the server dropping a
// human cause.
func TestReplayRefusesForgedPostureRecords(t *testing.T) {
	human := messages.PostureCauses{messages.CauseHuman}
	for _, c := range []struct {
		name  string
		actor string
		ev    messages.PostureChangedEvent
	}{
		{"agent resumes", messages.ActorAgent, messages.PostureChangedEvent{Before: messages.PostureReducing, After: messages.PostureActive, CausesBefore: human, Causes: messages.PostureCauses{}}},
		{"server drops a human cause", messages.ActorSystem, messages.PostureChangedEvent{Before: messages.PostureReducing, After: messages.PostureActive, CausesBefore: human, Causes: messages.PostureCauses{}}},
		{"agent clears an automatic cause", messages.ActorAgent, messages.PostureChangedEvent{Before: messages.PostureReducing, After: messages.PostureActive, CausesBefore: messages.PostureCauses{messages.CauseDiskLow}, Causes: messages.PostureCauses{}}},
		{"agent claims a human cause", messages.ActorAgent, messages.PostureChangedEvent{Before: messages.PostureActive, After: messages.PostureReducing, CausesBefore: messages.PostureCauses{}, Causes: human}},
		{"unknown cause", messages.ActorCLIUser, messages.PostureChangedEvent{Before: messages.PostureActive, After: messages.PostureReducing, CausesBefore: messages.PostureCauses{}, Causes: messages.PostureCauses{"whatever"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startUsers(t, dir)
			ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
			seq := forge(t, ts.log, messages.RecordPostureChanged, "alice", c.actor, c.ev)
			ts.stop()
			_, err := reopen(t, dir)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("seq %d:", seq)) || !strings.Contains(err.Error(), "posture_changed") {
				t.Fatalf("start with a forged posture_changed at seq %d: %v", seq, err)
			}
		})
	}
}
