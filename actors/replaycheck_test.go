package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// forge appends a record to the journal the way an editor would, past the
// user actor, and returns its seq.
func forge(t *testing.T, l *wal.Log, typ messages.RecordType, user, actorName string, v any) uint64 {
	t.Helper()
	p, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Append([]wal.Entry{{Time: time.Now().UTC(), Type: uint16(typ), User: user, Actor: actorName, Payload: p}})
	if err != nil {
		t.Fatal(err)
	}
	return recs[len(recs)-1].Seq
}

// reopen replays dir as the server does at start and returns the replay,
// or the error that refused start.
func reopen(t *testing.T, dir string) (*UserReplay, error) {
	t.Helper()
	r := NewUserReplay()
	l, _, err := wal.Open(dir, wal.Options{OnRecord: r.OnRecord})
	if err != nil {
		return nil, err
	}
	_ = l.Close()
	return r, nil
}

// wantRefused checks that start is refused, naming the record's seq and
// type.
func wantRefused(t *testing.T, dir string, seq uint64, typ string) {
	t.Helper()
	_, err := reopen(t, dir)
	if err == nil {
		t.Fatalf("start was not refused (forged %s at seq %d)", typ, seq)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("seq %d ", seq)) || !strings.Contains(err.Error(), typ) {
		t.Fatalf("refusal does not name seq %d (%s): %v", seq, typ, err)
	}
}

// A kill switch record that does not follow from the switch before it
// refuses start, whatever its actor; the records the server writes replay.
func TestReplayRefusesKillSwitchRecordsThatDoNotFollow(t *testing.T) {
	ev := func(before, after messages.KillSwitch) messages.KillSwitchEvent {
		return messages.KillSwitchEvent{Before: before, After: after}
	}
	none, user, admin := messages.KillSwitchNone, messages.KillSwitchUser, messages.KillSwitchAdmin
	cases := []struct {
		name  string
		typ   messages.RecordType
		actor string
		ev    messages.KillSwitchEvent
	}{
		{"agent on that turns the switch off", messages.RecordKillSwitchOn, messages.ActorAgent, ev(admin, none)},
		{"on that lowers admin to user", messages.RecordKillSwitchOn, messages.ActorCLIAdmin, ev(admin, user)},
		{"on whose before is not the switch", messages.RecordKillSwitchOn, messages.ActorAgent, ev(none, user)},
		{"user off claiming a user switch", messages.RecordKillSwitchOff, messages.ActorCLIUser, ev(user, none)},
		{"admin off that leaves a switch on", messages.RecordKillSwitchOff, messages.ActorCLIAdmin, ev(admin, user)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startUsers(t, dir)
			ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
			ts.must(t, &messages.SetKillSwitchRequest{User: "rae", On: true, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
			seq := forge(t, ts.log, c.typ, "rae", c.actor, c.ev)
			ts.stop()
			wantRefused(t, dir, seq, c.typ.String())
		})
	}
	// What the server journals itself replays: user on, admin on, admin
	// off, user on, user off.
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetKillSwitchRequest{User: "rae", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	ts.must(t, &messages.SetKillSwitchRequest{User: "rae", On: true, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetKillSwitchRequest{User: "rae", On: false, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetKillSwitchRequest{User: "rae", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	ts.stop()
	ts = startUsers(t, dir)
	if v := ts.must(t, &messages.ShowPolicyRequest{User: "rae"}, messages.ActorCLIUser); v.KillSwitch != messages.KillSwitchUser {
		t.Fatalf("replayed kill switch %q, want user", v.KillSwitch)
	}
}

// A posture_changed record whose causes_before are not the causes of the
// posture record before it refuses start: a record by the agent that
// names no causes before and after would otherwise lift a human's
// REDUCING. The records the server writes itself (a human REDUCING, the
// agent's, a kill switch over them, a human resume) replay.
func TestReplayRefusesPostureRecordsThatDoNotFollow(t *testing.T) {
	human := messages.PostureCauses{messages.CauseHuman}
	cases := []struct {
		name  string
		actor string
		ev    messages.PostureChangedEvent
	}{
		{"agent record with no causes before or after", messages.ActorAgent, messages.PostureChangedEvent{
			Before: messages.PostureActive, After: messages.PostureActive, CausesBefore: messages.PostureCauses{}, Causes: messages.PostureCauses{}}},
		{"human resume from causes that never held", messages.ActorCLIUser, messages.PostureChangedEvent{
			Before: messages.PostureReducing, After: messages.PostureActive, CausesBefore: messages.PostureCauses{messages.CauseAgent}, Causes: messages.PostureCauses{}}},
		{"server record that drops the human cause", messages.ActorSystem, messages.PostureChangedEvent{
			Before: messages.PostureReducing, After: messages.PostureReducing, CausesBefore: messages.PostureCauses{messages.CauseDiskLow}, Causes: messages.PostureCauses{messages.CauseDiskLow}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startUsers(t, dir)
			ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
			if _, err := ts.Handle(context.Background(), &messages.SetPostureRequest{User: "alice", Reduce: true}, messages.ActorCLIUser); err != nil {
				t.Fatal(err)
			}
			if got := postureOf(t, ts, "alice"); got.State != messages.PostureReducing || !sameCauses(got.Why, human) {
				t.Fatalf("setup: %+v", got)
			}
			seq := forge(t, ts.log, messages.RecordPostureChanged, "alice", c.actor, c.ev)
			ts.stop()
			wantRefused(t, dir, seq, "posture_changed")
		})
	}
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	for _, step := range []struct {
		reduce bool
		actor  string
	}{{true, messages.ActorCLIUser}, {true, messages.ActorAgent}, {false, messages.ActorCLIUser}, {true, messages.ActorCLIUser}} {
		if _, err := ts.Handle(context.Background(), &messages.SetPostureRequest{User: "alice", Reduce: step.reduce}, step.actor); err != nil {
			t.Fatal(err)
		}
	}
	ts.must(t, &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	ts.must(t, &messages.SetKillSwitchRequest{User: "alice", On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser)
	ts.stop()
	ts = startUsers(t, dir)
	if got := postureOf(t, ts, "alice"); got.State != messages.PostureReducing || !sameCauses(got.Why, human) {
		t.Fatalf("replayed posture %s %v, want REDUCING %v", got.State, got.Why, human)
	}
}

// A policy_tightened record that loosens the own settings refuses start; a
// stricter one replays.
func TestReplayRefusesALooseningTighten(t *testing.T) {
	for _, after := range []messages.PolicySettings{{}, {MaxPending: intp(5)}, {MaxLeverage: dec("2")}} {
		dir := t.TempDir()
		ts := startUsers(t, dir)
		ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
		ts.must(t, &messages.TightenPolicyRequest{User: "rae", Settings: messages.PolicySettings{MaxPending: intp(2)}}, messages.ActorCLIUser)
		seq := forge(t, ts.log, messages.RecordPolicyTightened, "rae", messages.ActorCLIUser, messages.PolicyChangedEvent{After: after})
		ts.stop()
		wantRefused(t, dir, seq, "policy_tightened")
	}
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.TightenPolicyRequest{User: "rae", Settings: messages.PolicySettings{MaxPending: intp(2)}}, messages.ActorCLIUser)
	forge(t, ts.log, messages.RecordPolicyTightened, "rae", messages.ActorCLIUser,
		messages.PolicyChangedEvent{After: messages.PolicySettings{MaxPending: intp(1), MaxLeverage: dec("2")}})
	ts.stop()
	ts = startUsers(t, dir)
	v := ts.must(t, &messages.ShowPolicyRequest{User: "rae"}, messages.ActorCLIUser)
	if v.Own.MaxPending == nil || *v.Own.MaxPending != 1 || v.Own.MaxLeverage == nil || !v.Own.MaxLeverage.Equal(decimal.NewFromInt(2)) {
		t.Fatalf("a stricter tighten was not replayed: %+v", v.Own)
	}
}

// Payload times after the record's own time refuse start: a future order
// attempt would wipe the rolling windows and the idempotency table, a
// future checked_at would stop the hourly key re-check.
func TestReplayRefusesFuturePayloadTimes(t *testing.T) {
	setup := func(t *testing.T) (string, *testSystem, time.Time) {
		dir := t.TempDir()
		ts := startUsers(t, dir)
		ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
		now := time.Now().UTC()
		forge(t, ts.log, messages.RecordOrderAttempt, "rae", messages.ActorAgent, messages.OrderAttemptEvent{
			ClientOrderID: "a1", At: now, NotionalUSDT: decimal.NewFromInt(900), RiskIncreasing: true, IdempotencyKey: "k1",
			Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
		forge(t, ts.log, messages.RecordOrderOutcome, "rae", messages.ActorAgent, messages.OrderOutcomeEvent{ClientOrderID: "a1", At: now, Status: messages.OutcomeAccepted})
		return dir, ts, now
	}
	t.Run("records at their own time replay", func(t *testing.T) {
		dir, ts, _ := setup(t)
		ts.stop()
		r, err := reopen(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.states(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		daily, perMinute, _ := st["rae"].Counters.Window(time.Now(), "paper")
		if !daily.Equal(decimal.NewFromInt(900)) || perMinute != 1 || st["rae"].Idempotency["k1"].Status != messages.OutcomeAccepted {
			t.Fatalf("daily %s, per minute %d, idempotency %+v", daily, perMinute, st["rae"].Idempotency)
		}
	})
	t.Run("attempt", func(t *testing.T) {
		dir, ts, now := setup(t)
		seq := forge(t, ts.log, messages.RecordOrderAttempt, "rae", messages.ActorAgent, messages.OrderAttemptEvent{
			ClientOrderID: "a2", At: now.Add(48 * time.Hour), Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
		ts.stop()
		wantRefused(t, dir, seq, "order_attempt")
	})
	t.Run("outcome", func(t *testing.T) {
		dir, ts, now := setup(t)
		forge(t, ts.log, messages.RecordOrderAttempt, "rae", messages.ActorAgent, messages.OrderAttemptEvent{
			ClientOrderID: "a2", At: now, Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
		seq := forge(t, ts.log, messages.RecordOrderOutcome, "rae", messages.ActorAgent, messages.OrderOutcomeEvent{
			ClientOrderID: "a2", At: now.Add(48 * time.Hour), Status: messages.OutcomeRejected})
		ts.stop()
		wantRefused(t, dir, seq, "order_outcome")
	})
	t.Run("credential_checked", func(t *testing.T) {
		dir, ts, now := setup(t)
		seq := forge(t, ts.log, messages.RecordCredentialChecked, "rae", messages.ActorSystem, messages.CredentialCheckedEvent{
			CredentialID: "c1", Environment: "paper", Accepted: true, CheckedAt: now.Add(24 * time.Hour)})
		ts.stop()
		wantRefused(t, dir, seq, "credential_checked")
	})
}

// A user record for a name the server could never create, a payload that
// names another user, or a type that is not in the record table refuses
// start.
func TestReplayRefusesBadUsersAndUnknownTypes(t *testing.T) {
	for _, name := range []string{"", "a/b", "Upper", "root/users/x"} {
		dir := t.TempDir()
		ts := startUsers(t, dir)
		ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
		seq := forge(t, ts.log, messages.RecordUserCreated, name, messages.ActorCLIAdmin, state.NewUserEvent(name, messages.PolicySettings{}).Payload)
		ts.stop()
		wantRefused(t, dir, seq, "user_created")
	}
	for _, c := range []struct {
		typ messages.RecordType
		v   any
	}{
		{messages.RecordUserCreated, state.NewUserEvent("other", messages.PolicySettings{}).Payload},
		{messages.RecordUserDisabled, messages.UserDisabledEvent{User: "other"}},
	} {
		dir := t.TempDir()
		ts := startUsers(t, dir)
		ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
		seq := forge(t, ts.log, c.typ, "rae", messages.ActorCLIAdmin, c.v)
		ts.stop()
		r, err := reopen(t, dir)
		if err == nil {
			_, err = r.states(time.Now())
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("seq %d ", seq)) || !strings.Contains(err.Error(), "payload's user") {
			t.Fatalf("%s naming another user: %v", c.typ, err)
		}
	}
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
	seq := forge(t, ts.log, 999, "rae", messages.ActorAgent, map[string]any{"x": 1})
	ts.stop()
	wantRefused(t, dir, seq, "type_999")
}

// A command held during the recovery phase whose caller gave up (its
// deadline passed, and it was told the command failed) is never applied
// once recovery ends.
func TestHeldCommandWhoseCallerGaveUpIsNotApplied(t *testing.T) {
	// The open attempt is concluded not_found about 6 s after start
	// (D199): the held command waits that long.
	ts := startStack(t, stack{SimOptions: funded, Users: []string{"rae"}, Configure: func(c *Config) { c.RecoveryWait = 15 * time.Second }})
	srv := ts.sim
	ts.addDefaultKey(t, "rae")
	// An open attempt: the next start reconciles it, holding writes.
	forge(t, ts.log, messages.RecordOrderAttempt, "rae", messages.ActorAgent, messages.OrderAttemptEvent{
		ClientOrderID: "gx-1", At: time.Now().UTC(), Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	ts.stop()
	body, _ := json.Marshal(map[string]any{"kind": "delay", "path": "/v5/order/*", "delay_ms": 1500})
	resp, err := http.Post(srv.URL+"/sim/faults", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("sim fault: %s", resp.Status)
	}

	ts = ts.restart(t)
	// Turning the switch on is not held.
	ts.must(t, &messages.SetKillSwitchRequest{User: "rae", On: true, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = ts.Handle(short, &messages.SetKillSwitchRequest{User: "rae", On: false, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
	cancel()
	if err == nil {
		t.Fatal("the held kill switch off answered before recovery ended")
	}
	// A held command sent after it runs after it: once it is answered,
	// the cancelled one has come out of the queue.
	if _, err := ts.do(t, &messages.TightenPolicyRequest{User: "rae", Settings: messages.PolicySettings{MaxPending: intp(2)}}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	if v := ts.must(t, &messages.ShowPolicyRequest{User: "rae"}, messages.ActorCLIUser); v.KillSwitch != messages.KillSwitchAdmin {
		t.Fatalf("kill switch %q after the caller was told the off failed, want admin", v.KillSwitch)
	}
	for _, r := range ts.records(t) {
		if messages.RecordType(r.Type) == messages.RecordKillSwitchOff {
			t.Fatalf("kill_switch_off journaled at seq %d after its caller was told it failed", r.Seq)
		}
	}
}
