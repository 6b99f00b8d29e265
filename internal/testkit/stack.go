package testkit

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Options says what Start builds. The zero value is a paper stack: a
// simulator (seed 3, public rate limit lifted) on loopback HTTP, a journal in a
// fresh temporary directory, and an actor system serving the paper venue
// with a random master key, no private stream and no users.
type Options struct {
	// NoVenue starts the journal and the actor system only: no simulator,
	// no market, no venue clients, and a bare config (journal and user
	// replay) that Configure may fill in.
	NoVenue bool
	// Sim is a simulator to reuse (nil: a new one SimOptions describes),
	// e.g. across a restart.
	Sim *Sim
	// SimOptions describe a new simulator; its clock (Now) is also the
	// venue clients' clock.
	SimOptions
	// RESTVia gives the address the venue clients (market and account
	// alike) use in place of the simulator's (nil: the simulator's), e.g.
	// a proxy in front of it.
	RESTVia func(simURL string) string
	// Stream gives each user's venue actor the simulator's private stream.
	Stream bool
	// StreamVia gives the private stream URL the server dials in place of
	// the simulator's (nil: the simulator's); it implies Stream.
	StreamVia func(simWS string) string
	// StreamPing is the stream's ping interval (0: the stream's default).
	StreamPing time.Duration
	// StreamBackoff is the stream's reconnect wait (0: 20 ms).
	StreamBackoff time.Duration
	// Dir is the journal directory (empty: a fresh temporary one).
	// Reusing a directory replays what it holds.
	Dir string
	// WatchDisk sets the config's JournalDir to the journal directory, so
	// the posture watches its disk.
	WatchDisk bool
	// MasterKey seals the venue keys (nil: 32 random bytes).
	MasterKey []byte
	// Users are created, in order, by the CLI admin once the system runs.
	Users []string
	// Configure changes the actor configuration last (nil: none).
	Configure func(*actors.Config)
}

// SimOptions say what simulator StartSim starts.
type SimOptions struct {
	// Seed is its seed (0: 3).
	Seed int64
	// Now is its clock (nil: the real one).
	Now func() time.Time
	// Balances fund its default key (nil: the simulator's default).
	Balances map[string]decimal.Decimal
	// PublicRateLimit keeps its public per-IP rate limit (false: lifted,
	// so a test or benchmark measures the server, not the limit).
	PublicRateLimit bool
	// Wrap wraps its handler (nil: as it is), e.g. to watch the wire.
	Wrap func(http.Handler) http.Handler
}

// Sim is a simulator serving on loopback HTTP.
type Sim struct {
	// Sim is the simulator itself (its default key, its test API).
	*sim.Sim
	// URL is its REST base URL.
	URL string
}

// StartSim starts the simulator o describes on loopback; it stops when
// the test ends.
func StartSim(t testing.TB, o SimOptions) *Sim {
	t.Helper()
	if o.Seed == 0 {
		o.Seed = 3
	}
	s := sim.New(sim.Config{Seed: o.Seed, NoPublicRateLimit: !o.PublicRateLimit, Now: o.Now, StartingBalances: o.Balances})
	var h http.Handler = s.Handler()
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Sim{Sim: s, URL: srv.URL}
}

// PrivateWS is the simulator's private stream URL.
func (s *Sim) PrivateWS() string {
	return "ws" + strings.TrimPrefix(s.URL, "http") + "/v5/private"
}

// Market serves the public endpoints from a venue client, instruments
// through a cache, as serve wires it.
type Market struct {
	*venue.Client
	Cache *venue.InstrumentCache
}

// NewMarket is a Market over a client of base.
func NewMarket(t testing.TB, base string, now func() time.Time) Market {
	t.Helper()
	c, err := venue.NewClient(venue.Config{BaseURL: base, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return Market{Client: c, Cache: venue.NewInstrumentCache(c, time.Minute, nil)}
}

// Instrument answers from the cache.
func (m Market) Instrument(ctx context.Context, cat messages.Category, s string) (*messages.Instrument, error) {
	return m.Cache.Get(ctx, cat, s)
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
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.MasterKey == nil && !o.NoVenue {
		o.MasterKey = make([]byte, 32)
		if _, err := rand.Read(o.MasterKey); err != nil {
			t.Fatal(err)
		}
	}
	if o.Sim == nil && !o.NoVenue {
		o.Sim = StartSim(t, o.SimOptions)
	}
	replay := actors.NewUserReplay()
	l, _, err := wal.Open(o.Dir, wal.Options{OnRecord: replay.OnRecord})
	if err != nil {
		t.Fatal(err)
	}
	cfg := actors.Config{Journal: l, Users: replay}
	if !o.NoVenue {
		configureVenue(t, &cfg, o)
	}
	if o.WatchDisk {
		cfg.JournalDir = o.Dir
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	sys, err := actors.Start(cfg)
	if err != nil {
		_ = l.Close()
		t.Fatal(err)
	}
	s := &Stack{Sys: sys, Log: l, Dir: o.Dir, Sim: o.Sim, MasterKey: o.MasterKey, opts: o}
	t.Cleanup(s.Stop)
	for _, u := range o.Users {
		if _, err := sys.Handle(context.Background(), &messages.CreateUserRequest{User: u}, messages.ActorCLIAdmin); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// configureVenue points the config at the simulator: the market, the
// account clients and, when asked, the private stream.
func configureVenue(t testing.TB, cfg *actors.Config, o Options) {
	t.Helper()
	rest := o.Sim.URL
	if o.RESTVia != nil {
		rest = o.RESTVia(o.Sim.URL)
	}
	now := o.Now
	cfg.Market = NewMarket(t, rest, now)
	cfg.Venue, cfg.Environment, cfg.MasterKey = messages.VenuePaper, "paper", o.MasterKey
	cfg.Clients = func(k, s string) (*venue.Client, error) {
		return venue.NewClient(venue.Config{BaseURL: rest, APIKey: k, APISecret: s, Now: now})
	}
	if !o.Stream && o.StreamVia == nil {
		return
	}
	ws := o.Sim.PrivateWS()
	if o.StreamVia != nil {
		ws = o.StreamVia(ws)
	}
	backoff := o.StreamBackoff
	if backoff == 0 {
		backoff = 20 * time.Millisecond
	}
	cfg.Streams = func(k, s string) (*venue.Stream, error) {
		return venue.NewStream(venue.StreamConfig{URL: ws, APIKey: k, APISecret: s, PingInterval: o.StreamPing,
			Backoff: func(int) time.Duration { return backoff }})
	}
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
	o := s.opts
	o.Users = nil
	return Start(t, o)
}

// Records stops the stack and returns every record of its journal.
func (s *Stack) Records(t testing.TB) []wal.Record {
	t.Helper()
	s.Stop()
	var out []wal.Record
	if err := wal.Scan(s.Dir, func(r wal.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
