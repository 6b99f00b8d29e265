package rig

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Options says what stack to build. The zero value is a paper stack: a
// simulator (seed 3, public rate limit lifted) on loopback HTTP, a journal
// in a fresh temporary directory, and venue clients for a system serving
// the paper venue with a random master key, no private stream and no
// users. C is the actor configuration (actors.Config): Open builds the
// parts under it; the layer that starts the system applies WatchDisk,
// Users and Configure.
type Options[C any] struct {
	// NoVenue builds the journal only: no simulator, no market, no venue
	// clients, no master key.
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
	// Client changes each user's REST client configuration last (nil:
	// none), e.g. no retry backoff, or another transport.
	Client func(*venue.Config)
	// Stream gives each user's venue actor the simulator's private stream.
	Stream bool
	// StreamVia gives the private stream URL the server dials in place of
	// the simulator's (nil: the simulator's); it implies Stream.
	StreamVia func(simWS string) string
	// StreamPing is the stream's ping interval (0: the stream's default).
	StreamPing time.Duration
	// StreamBackoff is the stream's reconnect wait (0: 20 ms).
	StreamBackoff time.Duration
	// StreamConfig changes each private stream's configuration last (nil:
	// none), e.g. its dialer.
	StreamConfig func(*venue.StreamConfig)
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
	Configure func(*C)
}

// Again is o for a restart once Open has filled in its defaults: the same
// journal, simulator and key, and no users to create (they exist).
func (o Options[C]) Again() Options[C] {
	o.Users = nil
	return o
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

// NewKey is 32 random bytes, a master key.
func NewKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// Rig is what Open built: the parts an actor configuration takes.
type Rig struct {
	// Log is the open journal; the layer above closes it after its
	// system stops.
	Log *wal.Log
	// JournalDir is the journal directory when WatchDisk (empty: the
	// disk is not watched).
	JournalDir string
	// Sim is the simulator (nil with NoVenue); the fields below are set
	// only with it.
	Sim *Sim
	// MasterKey seals the venue keys.
	MasterKey []byte
	// Market serves the public reads.
	Market Market
	// Clients builds a user's REST client.
	Clients func(apiKey, apiSecret string) (*venue.Client, error)
	// Streams opens a user's private stream (nil without Stream).
	Streams func(apiKey, apiSecret string) (*venue.Stream, error)
}

// Open builds the parts o describes and opens the journal with onRecord
// (nil: none) seeing every record it holds. It fills in o's defaults (Dir,
// MasterKey, Sim), so the same o builds them again on the same journal,
// simulator and key, as a restart does.
func Open[C any](t testing.TB, o *Options[C], onRecord func(wal.Record) error) *Rig {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	r := &Rig{}
	if !o.NoVenue {
		if o.MasterKey == nil {
			o.MasterKey = NewKey(t)
		}
		if o.Sim == nil {
			o.Sim = StartSim(t, o.SimOptions)
		}
		venueParts(t, r, o)
	}
	if o.WatchDisk {
		r.JournalDir = o.Dir
	}
	l, _, err := wal.Open(o.Dir, wal.Options{OnRecord: onRecord})
	if err != nil {
		t.Fatal(err)
	}
	r.Log = l
	return r
}

// venueParts points r at the simulator: the market, the account clients
// and, when asked, the private stream.
func venueParts[C any](t testing.TB, r *Rig, o *Options[C]) {
	t.Helper()
	r.Sim, r.MasterKey = o.Sim, o.MasterKey
	rest := o.Sim.URL
	if o.RESTVia != nil {
		rest = o.RESTVia(o.Sim.URL)
	}
	now, client := o.Now, o.Client
	r.Market = NewMarket(t, rest, now)
	r.Clients = func(k, s string) (*venue.Client, error) {
		c := venue.Config{BaseURL: rest, APIKey: k, APISecret: s, Now: now}
		if client != nil {
			client(&c)
		}
		return venue.NewClient(c)
	}
	if !o.Stream && o.StreamVia == nil {
		return
	}
	ws := o.Sim.PrivateWS()
	if o.StreamVia != nil {
		ws = o.StreamVia(ws)
	}
	backoff, ping, stream := o.StreamBackoff, o.StreamPing, o.StreamConfig
	if backoff == 0 {
		backoff = 20 * time.Millisecond
	}
	r.Streams = func(k, s string) (*venue.Stream, error) {
		c := venue.StreamConfig{URL: ws, APIKey: k, APISecret: s, PingInterval: ping,
			Backoff: func(int) time.Duration { return backoff }}
		if stream != nil {
			stream(&c)
		}
		return venue.NewStream(c)
	}
}

// Records reads every record of the journal in dir (closed, or at least
// not being written).
func Records(t testing.TB, dir string) []wal.Record {
	t.Helper()
	var out []wal.Record
	if err := wal.Scan(dir, func(r wal.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
