package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
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
	rep := actors.NewUserReplay()
	l, _, err := wal.Open(dir, wal.Options{OnRecord: rep.OnRecord})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := actors.Start(actors.Config{Journal: l, Users: rep, Now: fixedNow, Shard: slot, MasterKey: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	return sys, func() { sys.Stop(); _ = l.Close() }
}

// A shard journals each session's open and end with the front that holds
// it (docs/cluster.md "Sessions and the dead-man switch"); its next owner
// counts the sessions still open per front from the journal, restores
// them, and ends those of a front that left, journaled first; a later end
// from that front is not ended twice, and an end from a live front is
// journaled as before. Events without a front journal nothing.
func TestSessionsByFrontSurviveAMove(t *testing.T) {
	ctx := context.Background()
	slot := route.Slot{Index: 0, Count: testShards}
	var u string
	for _, name := range users {
		if route.OfUser(name, testShards) == 0 {
			u = name
			break
		}
	}
	dir := t.TempDir()
	sys, stop := openShard(t, dir, slot)
	if _, err := sys.Submit(ctx, &messages.CreateUserRequest{User: u}, originFor(&messages.CreateUserRequest{})); err != nil {
		t.Fatal(err)
	}
	direct := func(ctx context.Context, _ int, b []byte) ([]byte, error) {
		return Serve(ctx, sys, bytes.Clone(b)), nil
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
	direct = func(ctx context.Context, _ int, b []byte) ([]byte, error) {
		return Serve(ctx, sys, bytes.Clone(b)), nil
	}
	NewClient(testShards, direct).WithFront("member-a").SessionEvent(ctx, u, messages.SessionClosed) // ended already
	NewClient(testShards, direct).WithFront("member-b").SessionEvent(ctx, u, messages.SessionClosed)
	want = append(want, "member-b closed")
	if got := sessionEvents(t, dir, u); !slices.Equal(got, want) {
		t.Fatalf("agent_session records %v, want %v", got, want)
	}
}
