package actors

import (
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// A system started on a prepared actor system runs on that one, and
// journals through it; a prepared system no Start took is shut down by
// Close.
func TestStartOnPreparedSystem(t *testing.T) {
	l, _, err := wal.Open(t.TempDir(), wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := Prepare(nil)
	sys, err := Start(Config{Journal: l, Prepared: p, Users: NewUserReplay(), Venue: messages.VenuePaper})
	if err != nil {
		t.Fatal(err)
	}
	if p.take() != nil {
		t.Fatal("the prepared system is still there to take after Start took it")
	}
	ctx := context.Background()
	if _, err := sys.Handle(ctx, &messages.CreateUserRequest{User: "kim"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.CallerProfile("kim"); err != nil {
		t.Fatal(err)
	}
	sys.Stop()
	p.Close() // taken: nothing to shut down

	unused := Prepare(nil)
	unused.Close()
	if unused.take() != nil {
		t.Fatal("Close left the prepared system")
	}
}

// A queued system record takes its place at once and is durable when its
// wait returns; only the server's own records may be queued.
func TestJournalJSONQueued(t *testing.T) {
	dir := t.TempDir()
	l, _, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := Start(Config{Journal: l, Users: NewUserReplay(), Venue: messages.VenuePaper})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.JournalJSONQueued(messages.RecordToolCall, map[string]any{}); err == nil {
		t.Fatal("a tool_call was queued as a system record")
	}
	wait, err := sys.JournalJSONQueued(messages.RecordServerStarted, map[string]any{"pid": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := sys.Flushes()
	if before == 0 {
		t.Fatal("durable without a flush")
	}
	sys.Stop()
	l.Close()
	var types []uint16
	l2, _, err := wal.Open(dir, wal.Options{OnRecord: func(r wal.Record) error { types = append(types, r.Type); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if len(types) != 1 || types[0] != uint16(messages.RecordServerStarted) {
		t.Fatalf("journal holds %v", types)
	}
}
