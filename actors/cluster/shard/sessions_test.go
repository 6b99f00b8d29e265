package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// sessionEvents lists the agent_session records of user in dir as
// "front event".
func sessionEvents(t *testing.T, dir, user string) []string {
	t.Helper()
	var out []string
	for _, r := range recordsIn(t, dir) {
		if r.Type != uint16(messages.RecordAgentSession) || r.User != user {
			continue
		}
		var p struct{ Front, Event string }
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Front+" "+p.Event)
	}
	return out
}

// openShard starts a shard system on dir, replaying what is there.
func openShard(t *testing.T, dir string, slot route.Slot) (*actors.System, func()) {
	t.Helper()
	return openShardLogging(t, dir, slot, nil)
}

// openShardLogging is openShard with the system's logs to logger (nil:
// the default).
func openShardLogging(t *testing.T, dir string, slot route.Slot, logger *slog.Logger) (*actors.System, func()) {
	t.Helper()
	rep := actors.NewUserReplay()
	l, _, err := wal.Open(dir, wal.Options{OnRecord: rep.OnRecord})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := actors.Start(actors.Config{Journal: l, Users: rep, Now: fixedNow, Shard: slot, MasterKey: bytes.Repeat([]byte{7}, 32), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return sys, func() { sys.Stop(); _ = l.Close() }
}

// shardZeroUser returns a test user of shard 0.
func shardZeroUser(t *testing.T) string {
	t.Helper()
	for _, name := range users {
		if route.OfUser(name, testShards) == 0 {
			return name
		}
	}
	t.Fatal("no test user on shard 0")
	return ""
}

// openShardWithUser starts a shard system on dir and creates user on it.
func openShardWithUser(t *testing.T, dir string, slot route.Slot, user string) (*actors.System, func()) {
	t.Helper()
	sys, stop := openShard(t, dir, slot)
	if _, err := sys.Submit(context.Background(), &messages.CreateUserRequest{User: user}, originFor(&messages.CreateUserRequest{})); err != nil {
		stop()
		t.Fatal(err)
	}
	return sys, stop
}

// A shard journals each session's open and end with the front that holds
// it (docs/cluster.md "Sessions and the dead-man switch"); its next owner
// counts the sessions still open per front from the journal, restores
// them, and ends those of a front that left, journaled first; a later end
// from that front is not ended twice, and an end from a live front is
// journaled as before. Events without a front journal nothing.
func TestSessionsByFrontSurviveAMove(t *testing.T) {
	ctx := context.Background()
	slot, u, dir := route.Slot{Index: 0, Count: testShards}, shardZeroUser(t), t.TempDir()
	sys, stop := openShardWithUser(t, dir, slot, u)
	var target atomic.Pointer[actors.System]
	target.Store(sys)
	direct := func(ctx context.Context, _ int, b []byte) ([]byte, error) {
		return Serve(ctx, target.Load(), bytes.Clone(b)), nil
	}
	plain := NewClient(testShards, direct)
	a, b := plain.WithFront("member-a"), plain.WithFront("member-b")
	plain.SessionEvent(ctx, u, messages.SessionOpened) // no front: not journaled
	plain.SessionEvent(ctx, u, messages.SessionClosed)
	a.SessionEvent(ctx, u, messages.SessionOpened)
	a.SessionEvent(ctx, u, messages.SessionOpened)
	a.SessionEvent(ctx, u, messages.SessionHeard) // a sign of life: not journaled
	b.SessionEvent(ctx, u, messages.SessionOpened)
	a.SessionEvent(ctx, u, messages.SessionClosed)
	b.SessionEvent(ctx, "nobody", messages.SessionOpened) // no such user
	want := []string{"member-a opened", "member-a opened", "member-b opened", "member-a closed"}
	if got := sessionEvents(t, dir, u); !slices.Equal(got, want) {
		t.Fatalf("agent_session records %v, want %v", got, want)
	}
	stop()

	// The next owner: one session open on each front.
	sys, stop = openShard(t, dir, slot)
	defer stop()
	if n := sys.RestoreSessions(); n != 2 {
		t.Fatalf("restored %d sessions, want 2", n)
	}
	if n := sys.EndSessionsOf(ctx, func(front string) bool { return front == "member-b" }); n != 1 {
		t.Fatalf("ended %d sessions of the gone front, want 1", n)
	}
	want = append(want, "member-a ended")
	for deadline := time.Now().Add(10 * time.Second); !slices.Equal(sessionEvents(t, dir, u), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("agent_session records %v, want %v", sessionEvents(t, dir, u), want)
		}
	}
	if n := sys.EndSessionsOf(ctx, func(front string) bool { return front == "member-b" }); n != 0 {
		t.Fatalf("ended %d sessions a second time", n)
	}
	target.Store(sys)
	a.SessionEvent(ctx, u, messages.SessionClosed) // ended already: journaled, moves no count
	b.SessionEvent(ctx, u, messages.SessionClosed)
	want = append(want, "member-a closed", "member-b closed")
	if got := sessionEvents(t, dir, u); !slices.Equal(got, want) {
		t.Fatalf("agent_session records %v, want %v", got, want)
	}
}

// A front's report of a user's sessions is sent again until the shard
// takes it, and taken once: an open whose answer was lost is not counted
// twice, and a close sent while the shard moves (its owner stopped, no
// shard answering) reaches the next owner, which journals it and counts
// the session ended, so that its dead-man switch runs (docs/cluster.md
// "Sessions and the dead-man switch").
func TestSessionReportSentAgainUntilTaken(t *testing.T) {
	ctx := context.Background()
	slot, u, dir := route.Slot{Index: 0, Count: testShards}, shardZeroUser(t), t.TempDir()
	sys, stop := openShardWithUser(t, dir, slot, u)
	var (
		target    atomic.Pointer[actors.System]
		loseNext  atomic.Int32 // serve the call, then lose its answer
		calls     atomic.Int32
		unserved  atomic.Int32
		errNoPeer = errors.New("no member answered")
	)
	target.Store(sys)
	tr := func(ctx context.Context, _ int, b []byte) ([]byte, error) {
		calls.Add(1)
		t := target.Load()
		if t == nil {
			unserved.Add(1)
			return nil, errNoPeer
		}
		out := Serve(ctx, t, bytes.Clone(b))
		if loseNext.Add(-1) >= 0 {
			return nil, errNoPeer
		}
		return out, nil
	}
	a := NewClient(testShards, tr).WithFront("member-a")

	loseNext.Store(1)
	a.SessionEvent(ctx, u, messages.SessionOpened) // served, its answer lost: sent again
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the open's report was not sent again after its answer was lost")
		}
	}
	want := []string{"member-a opened"}
	if got := sessionEvents(t, dir, u); !slices.Equal(got, want) {
		t.Fatalf("agent_session records %v, want %v (a report sent twice is taken once)", got, want)
	}

	// The shard moves: its owner stops, and nothing answers for a while.
	target.Store(nil)
	stop()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		a.SessionEvent(ctx, u, messages.SessionClosed)
	}()
	for deadline := time.Now().Add(10 * time.Second); unserved.Load() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the close was never sent")
		}
	}
	sys, stop = openShard(t, dir, slot)
	defer stop()
	if n := sys.RestoreSessions(); n != 1 {
		t.Fatalf("the next owner restored %d sessions, want 1", n)
	}
	target.Store(sys)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the close's report was not sent again to the next owner")
	}
	want = append(want, "member-a closed")
	if got := sessionEvents(t, dir, u); !slices.Equal(got, want) {
		t.Fatalf("agent_session records %v, want %v", got, want)
	}
	if n := sys.EndSessionsOf(ctx, func(string) bool { return false }); n != 0 {
		t.Fatalf("%d sessions still counted open after the close was taken", n)
	}
}

// The counts the shard keeps from the fronts' reports are each front's
// newest report (none after the front's end), and the ones its replay
// rebuilds, whatever came in between: old reports sent again, ends of
// gone fronts, and reports taken while an end is being journaled.
func TestFrontSessionCountsReplayAsTaken(t *testing.T) {
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { frontSessionHistory(t, seed) })
	}
}

// frontSessionHistory runs TestFrontSessionCountsReplayAsTaken's random
// history from seed.
func frontSessionHistory(t *testing.T, seed uint64) {
	ctx := context.Background()
	slot, u, dir := route.Slot{Index: 0, Count: testShards}, shardZeroUser(t), t.TempDir()
	sys, stop := openShardWithUser(t, dir, slot, u)
	rng := rand.New(rand.NewPCG(seed, 11))
	fronts := []string{"f1", "f2", "f3"}
	seq := map[string]uint64{}
	var sent []*messages.FrontSessions
	ends := 0
	type frontModel struct {
		open int
		seq  uint64
	}
	model := map[string]frontModel{} // what the shard must count
	modelCounts := func() []string {
		var out []string
		for _, f := range fronts {
			if model[f].open > 0 {
				out = append(out, fmt.Sprintf("%s %s %d", u, f, model[f].open))
			}
		}
		return out
	}
	report := func(f string, open int) {
		seq[f]++
		ev := messages.SessionOpened
		if rng.IntN(2) == 0 {
			ev = messages.SessionClosed
		}
		r := &messages.FrontSessions{User: u, Front: f, Event: ev, Open: open, Seq: seq[f]}
		sent = append(sent, r)
		if err := sys.FrontSessionsChanged(ctx, r); err != nil {
			t.Fatal(err)
		}
		model[f] = frontModel{open: r.Open, seq: r.Seq}
	}
	for step := range 200 {
		f := fronts[rng.IntN(len(fronts))]
		switch rng.IntN(10) {
		case 0: // an old report sent again
			if len(sent) > 0 {
				r := sent[rng.IntN(len(sent))]
				if err := sys.FrontSessionsChanged(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		case 1: // the front is gone; then, at times, reports again at once
			if sys.EndSessionsOf(ctx, func(front string) bool { return front != f }) > 0 {
				ends++
			}
			model[f] = frontModel{seq: model[f].seq}
			if rng.IntN(2) == 0 {
				report(f, rng.IntN(4))
			}
		default:
			report(f, rng.IntN(4))
		}
		if got, want := openCounts(sys), modelCounts(); !slices.Equal(got, want) {
			t.Fatalf("step %d: counts %v, want the newest report's (none after an end) %v", step, got, want)
		}
	}
	report(fronts[0], 2) // some sessions stay open
	// EndSessionsOf journals on its own goroutines: wait for its records.
	for deadline := time.Now().Add(20 * time.Second); countEvent(sessionEvents(t, dir, u), " ended") < ends; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d ended records, want %d", countEvent(sessionEvents(t, dir, u), " ended"), ends)
		}
	}
	live, want := openCounts(sys), modelCounts()
	if !slices.Equal(live, want) {
		t.Fatalf("counts %v, want the newest report's (none after an end) %v", live, want)
	}
	if ends == 0 {
		t.Fatal("a history without an end tests little: change its seed")
	}
	stop()
	again, stopAgain := openShard(t, dir, slot)
	defer stopAgain()
	if got := openCounts(again); !slices.Equal(got, live) {
		t.Fatalf("replayed counts %v, live counts %v", got, live)
	}
}

// countEvent counts the entries of events that end with suffix.
func countEvent(events []string, suffix string) int {
	n := 0
	for _, e := range events {
		if strings.HasSuffix(e, suffix) {
			n++
		}
	}
	return n
}

// openCounts is sys's open sessions per front, as a sorted list.
func openCounts(sys *actors.System) []string {
	return sys.FrontSessionCounts()
}

// The user's actor hears what the reports count: with cancel_on_disconnect
// on, the close of the user's last session fires the dead-man switch, a
// close while another session is open does not, and a close whose open
// the shard never took, while it counts none of the user's sessions,
// fires it all the same.
func TestFrontSessionReportsReachTheDeadmanSwitch(t *testing.T) {
	ctx := context.Background()
	slot, u, dir := route.Slot{Index: 0, Count: testShards}, shardZeroUser(t), t.TempDir()
	logs := &lockedBuffer{}
	sys, stop := openShardLogging(t, dir, slot, slog.New(slog.NewJSONHandler(logs, nil)))
	defer stop()
	for _, cmd := range []messages.Command{&messages.CreateUserRequest{User: u},
		&messages.TightenPolicyRequest{User: u, Settings: messages.PolicySettings{CancelOnDisconnect: ptr(true)}}} {
		if _, err := sys.Submit(ctx, cmd, originFor(cmd)); err != nil {
			t.Fatal(err)
		}
	}
	var dropSessions atomic.Bool
	tr := func(ctx context.Context, _ int, b []byte) ([]byte, error) {
		if dropSessions.Load() && bytes.Contains(b, []byte(`"sessions"`)) {
			return nil, errors.New("no member answered")
		}
		return Serve(ctx, sys, bytes.Clone(b)), nil
	}
	a := NewClient(testShards, tr).WithFront("member-a")
	b := NewClient(testShards, tr).WithFront("member-b")
	fired := func() int { return strings.Count(logs.String(), `"msg":"dead-man switch fired"`) }

	a.SessionEvent(ctx, u, messages.SessionOpened)
	b.SessionEvent(ctx, u, messages.SessionOpened)
	a.SessionEvent(ctx, u, messages.SessionClosed) // b's is open
	if n := fired(); n != 0 {
		t.Fatalf("the switch fired %d times while a session was open", n)
	}
	b.SessionEvent(ctx, u, messages.SessionClosed) // the last one: waits for the switch
	if n := fired(); n != 1 {
		t.Fatalf("the switch fired %d times at the last close, want 1", n)
	}

	// An open the shard never takes (its report lost, then replaced by
	// the close), then the close: the user's last session ended.
	dropSessions.Store(true)
	a.SessionEvent(ctx, u, messages.SessionOpened)
	dropSessions.Store(false)
	a.SessionEvent(ctx, u, messages.SessionClosed)
	if got := sessionEvents(t, dir, u); got[len(got)-1] != "member-a closed" {
		t.Fatalf("agent_session records %v: the close was not taken", got)
	}
	if n := fired(); n != 2 {
		t.Fatalf("the switch fired %d times in all, want 2 (the close of a session never counted)", n)
	}
	if got := sys.FrontSessionCounts(); len(got) != 0 {
		t.Fatalf("sessions still counted open: %v", got)
	}
}

func ptr[T any](v T) *T { return &v }
