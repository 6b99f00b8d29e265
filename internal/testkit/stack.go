package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Options says what Start builds (rig.Options, whose fields say each
// part). The zero value is a paper stack: a simulator (seed 3, public rate
// limit lifted) on loopback HTTP, a journal in a fresh temporary
// directory, and an actor system serving the paper venue with a random
// master key, no private stream and no users. With NoVenue the actor
// configuration is bare (journal and user replay), for Configure to fill
// in.
type Options = rig.Options[actors.Config]

// SimOptions say what simulator StartSim starts.
type SimOptions = rig.SimOptions

// Sim is a simulator serving on loopback HTTP.
type Sim = rig.Sim

// Market serves the public endpoints from a venue client, as serve wires
// it.
type Market = rig.Market

// StartSim starts the simulator o describes on loopback; it stops when
// the test ends.
func StartSim(t testing.TB, o SimOptions) *Sim {
	t.Helper()
	return rig.StartSim(t, o)
}

// NewMarket is a Market over a client of base.
func NewMarket(t testing.TB, base string, now func() time.Time) Market {
	t.Helper()
	return rig.NewMarket(t, base, now)
}

// Stack is a running journal and actor system, over a simulator unless
// NoVenue.
type Stack struct {
	// Sys is the actor system.
	Sys *actors.System
	// Log is the open journal.
	Log *wal.Log
	// Dir is the journal directory.
	Dir string
	// Sim is the simulator (nil with NoVenue).
	Sim *Sim
	// MasterKey is the key the venue keys are sealed with.
	MasterKey []byte

	opts    Options
	stopped bool
}

// Start builds the stack o describes and stops it when the test ends.
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	replay := actors.NewUserReplay()
	r := rig.Open(t, &o, replay.OnRecord)
	cfg := actors.Config{Journal: r.Log, Users: replay, JournalDir: r.JournalDir}
	if r.Sim != nil {
		cfg.Venue, cfg.Environment, cfg.MasterKey = messages.VenuePaper, "paper", r.MasterKey
		cfg.Market, cfg.Clients, cfg.Streams = r.Market, r.Clients, r.Streams
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	sys, err := actors.Start(cfg)
	if err != nil {
		_ = r.Log.Close()
		t.Fatal(err)
	}
	s := &Stack{Sys: sys, Log: r.Log, Dir: o.Dir, Sim: o.Sim, MasterKey: o.MasterKey, opts: o}
	t.Cleanup(s.Stop)
	for _, u := range o.Users {
		if _, err := sys.Handle(context.Background(), &messages.CreateUserRequest{User: u}, messages.ActorCLIAdmin); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Stop stops the actor system and closes the journal; it may be called
// more than once.
func (s *Stack) Stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.Sys.Stop()
	_ = s.Log.Close()
}

// Restart stops the stack and starts it again on the same journal
// directory, simulator and master key, replaying the journal; the users
// already exist and are not created again.
func (s *Stack) Restart(t testing.TB) *Stack {
	t.Helper()
	s.Stop()
	return Start(t, s.opts.Again())
}

// Records stops the stack and returns every record of its journal.
func (s *Stack) Records(t testing.TB) []wal.Record {
	t.Helper()
	s.Stop()
	return rig.Records(t, s.Dir)
}
