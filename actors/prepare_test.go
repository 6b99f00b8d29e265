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
