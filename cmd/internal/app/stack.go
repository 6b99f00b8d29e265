package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// stack is one process's running server core: the journal, the actor
// system and, for paper, the embedded simulator. It is built under the home
// lock and torn down in reverse order.
type stack struct {
	log     *wal.Log
	sys     *actors.System
	sim     *sim.Server
	venue   venueConfig
	baseURL string // the venue's REST base (the simulator's for paper)
}

// paperStartingUSDT is the paper account's wallet at start.
const paperStartingUSDT = 10000

// paperKey is the simulator's pre-provisioned key for a seed: the paper
// key init stores (SPEC §3).
func paperKey(seed int64) sim.Key { return sim.New(sim.Config{Seed: seed}).DefaultKey() }

// paperSeed is GX_PAPER_SEED, default 1.
func paperSeed() (int64, error) {
	s := os.Getenv("GX_PAPER_SEED")
	if s == "" {
		return 1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("GX_PAPER_SEED is not an integer")
	}
	return v, nil
}

// instrumentTTL is how long instrument rules are cached.
const instrumentTTL = 10 * time.Minute

// startStack opens the journal (repairing a torn tail, refusing other
// damage), starts the venue and the actors, and journals server_started.
// onRecord, if not nil, sees every record of the journal in order while it
// is opened and verified.
func startStack(ctx context.Context, p paths, vc venueConfig, masterKey []byte, logger *slog.Logger, version, command string, onRecord func(wal.Record) error) (*stack, error) {
	st := &stack{venue: vc}
	replay := actors.NewUserReplay()
	l, rec, err := wal.Open(p.journal(), wal.Options{OnRecord: func(r wal.Record) error {
		if err := replay.OnRecord(r); err != nil {
			return err
		}
		if onRecord != nil {
			return onRecord(r)
		}
		return nil
	}})
	if err != nil {
		return nil, fmt.Errorf("journal: %w; inspect it with `guarded-exchange journal verify --dir %s`", err, p.journal())
	}
	st.log = l

	var market actors.MarketSource
	var clients actors.ClientFactory
	if !vc.NoMarket {
		client, err := st.venueClient(vc, logger)
		if err != nil {
			st.close()
			return nil, err
		}
		market = marketSource{Client: client, cache: venue.NewInstrumentCache(client, instrumentTTL, nil)}
		base := st.baseURL
		clients = func(apiKey, apiSecret string) (*venue.Client, error) {
			return venue.NewClient(venue.Config{BaseURL: base, APIKey: apiKey, APISecret: apiSecret, Logger: logger})
		}
	}
	st.sys, err = actors.Start(actors.Config{
		Journal: l, Market: market, Logger: logger, Users: replay, Venue: vc.level(),
		Environment: vc.Name, MasterKey: masterKey, Clients: clients,
	})
	if err != nil {
		st.close()
		return nil, err
	}
	if rec != nil && rec.TornTail {
		logger.Warn("journal: cut a torn last record", "segment", rec.Segment, "dropped_bytes", rec.DroppedBytes, "last_good_seq", rec.LastGoodSeq)
		if _, err := st.sys.JournalJSON(ctx, messages.RecordRecoveredTornTail, "", messages.ActorSystem, map[string]any{
			"segment": rec.Segment, "dropped_bytes": rec.DroppedBytes, "last_good_seq": rec.LastGoodSeq, "broken_copy": rec.BrokenCopy,
		}); err != nil {
			st.close()
			return nil, err
		}
	}
	// Only a server announces itself: a CLI command that changes nothing
	// must journal nothing.
	if command == "serve" {
		if _, err := st.sys.JournalJSON(ctx, messages.RecordServerStarted, "", messages.ActorSystem, map[string]any{
			"pid": os.Getpid(), "version": version, "venue": vc.Name,
		}); err != nil {
			st.close()
			return nil, err
		}
	}
	return st, nil
}

// venueClient starts the paper simulator if needed and returns the REST
// client for the venue.
func (st *stack) venueClient(vc venueConfig, logger *slog.Logger) (*venue.Client, error) {
	cfg := venue.Config{BaseURL: vc.BaseURL, Logger: logger}
	if vc.Paper {
		seed, err := paperSeed()
		if err != nil {
			return nil, err
		}
		srv, err := sim.Start(sim.Config{
			Seed: seed, Logger: logger.With("component", "paper-sim"),
			StartingBalances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(paperStartingUSDT)},
		}, "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("paper venue: %w", err)
		}
		st.sim = srv
		ann := srv.Announcement()
		cfg.BaseURL = ann.REST
	}
	st.baseURL = cfg.BaseURL
	return venue.NewClient(cfg)
}

// close stops the actors (draining the journal), closes the WAL and stops
// the simulator.
func (st *stack) close() {
	if st.sys != nil {
		st.sys.Stop()
		st.sys = nil
	}
	if st.log != nil {
		_ = st.log.Close()
		st.log = nil
	}
	if st.sim != nil {
		_ = st.sim.Close()
		st.sim = nil
	}
}
