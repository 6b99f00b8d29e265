package app

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/mcp"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/keys"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// stack is one process's running server core: the journal, the actor
// system and, for paper, the embedded simulator. It is built under the home
// lock and torn down in reverse order.
type stack struct {
	log   *wal.Log
	sys   *actors.System
	venue venueConfig
	// paper is the embedded simulator, served in-process: no port, no test
	// API. Its DialContext is the only way to it; the REST clients get it
	// through paperHTTP, and a WebSocket client takes it as its
	// NetDialContext with paper.WSPrivateURL().
	paper     *sim.InProcessServer
	paperHTTP *http.Client
	baseURL   string // the venue's REST base (the simulator's for paper)
	// feed serves decisions' market data from the public streams and
	// caches (nil: none); closed after the actors.
	feed *venue.MarketFeed
	// started returns when serve's server_started record is durable or
	// has failed (nil for other commands).
	started func(context.Context) error
	// stateKey seals the requestState of the client's confirmation form:
	// a sub-key of the master key, so a form answered across a restart
	// still opens.
	stateKey []byte
}

// paperStartingUSDT is the paper wallet of each key at start.
const paperStartingUSDT = 10000

// paperWallet is a new paper account's wallet.
func paperWallet() map[string]decimal.Decimal {
	return map[string]decimal.Decimal{"USDT": decimal.NewFromInt(paperStartingUSDT)}
}

// Paper key material: the lengths of a Bybit key and secret, from
// crypto/rand, so no two installations share a paper key.
const (
	paperKeyLen    = 18
	paperSecretLen = 36
	alnum          = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// newPaperKey returns a random paper key pair.
func newPaperKey() (sim.Key, error) {
	key, err := randomAlnum(paperKeyLen)
	if err != nil {
		return sim.Key{}, err
	}
	secret, err := randomAlnum(paperSecretLen)
	if err != nil {
		return sim.Key{}, err
	}
	return sim.Key{APIKey: key, APISecret: secret}, nil
}

// randomAlnum draws n characters of alnum uniformly from crypto/rand
// (rejection sampling: bytes >= 248 would bias the modulo).
func randomAlnum(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, alnum[int(b)%len(alnum)])
			}
		}
	}
	return string(out), nil
}

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

// DefaultDiskMargin is the journal disk's safety margin when
// GX_DISK_RESERVE_BYTES is not set: below it (plus the last reserve) every
// user is REDUCING.
const DefaultDiskMargin = 256 << 20

// diskMargin is GX_DISK_RESERVE_BYTES, default DefaultDiskMargin; a value
// that is not a whole number of bytes refuses start (fail closed).
func diskMargin() (uint64, error) {
	s := os.Getenv("GX_DISK_RESERVE_BYTES")
	if s == "" {
		return DefaultDiskMargin, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("GX_DISK_RESERVE_BYTES must be a whole number of bytes")
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
	return startStackOn(ctx, p, vc, masterKey, logger, version, command, onRecord, nil)
}

// startStackOn is startStack on an actor system prepared while the caller
// did other start-up work (nil: built here).
func startStackOn(ctx context.Context, p paths, vc venueConfig, masterKey []byte, logger *slog.Logger, version, command string, onRecord func(wal.Record) error, prepared *actors.Prepared) (*stack, error) {
	stateKey, err := mcp.RequestStateKey(masterKey)
	if err != nil {
		return nil, err
	}
	st := &stack{venue: vc, stateKey: stateKey}
	replay := actors.NewUserReplay()
	records := 0
	l, rec, err := wal.Open(p.journal(), wal.Options{OnRecord: func(r wal.Record) error {
		if records++; records == startupGCRecords {
			ReleaseStartupGC() // a large replay: collect as usual
		}
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
	var streams actors.StreamFactory
	if vc.PaperOnly {
		// A paper command without a server: the simulator and its stored
		// accounts, and no venue for the actors.
		err := st.startPaper(p, logger)
		if err == nil {
			err = st.provisionStoredPaperKeys(replay, masterKey, p.paperState(), logger)
		}
		if err != nil {
			st.close()
			return nil, err
		}
	}
	if !vc.NoMarket {
		client, err := st.venueClient(vc, p, logger)
		if err != nil {
			st.close()
			return nil, err
		}
		if st.paper != nil {
			if err := st.provisionStoredPaperKeys(replay, masterKey, p.paperState(), logger); err != nil {
				st.close()
				return nil, err
			}
		}
		cache := venue.NewInstrumentCache(client, instrumentTTL, nil)
		market = marketSource{Client: client, cache: cache}
		if st.feed, err = st.marketFeed(vc, client, cache, logger); err != nil {
			st.close()
			return nil, err
		}
		clients = st.clientFactory(logger)
		streams = st.streamFactory(logger)
	}
	margin, err := diskMargin()
	if err != nil {
		st.close()
		return nil, err
	}
	st.sys, err = actors.Start(actors.Config{
		Journal: l, Prepared: prepared, Market: market, Logger: logger, Users: replay, Venue: vc.level(),
		Environment: vc.Name, MasterKey: masterKey, Clients: clients, Streams: streams, Feed: st.feed,
		JournalDir: p.journal(), DiskMarginBytes: margin,
		// Only a server decides confirmations on the CLI, and only when
		// told to (true, 1, yes or on; a value that is not a boolean
		// refused to start in Configure).
		ConfirmCLI: command == "serve" && envBool(os.Getenv, "GX_CONFIRM_CLI_ENABLED"),
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
	// must journal nothing. The record is queued, in its place, and synced
	// at once; serve waits for it beside its first answers (st.started),
	// not before them (D152).
	if command == "serve" {
		st.started, err = st.sys.JournalJSONQueued(messages.RecordServerStarted, map[string]any{
			"pid": os.Getpid(), "version": version, "venue": vc.Name,
		})
		if err != nil {
			st.close()
			return nil, err
		}
	}
	return st, nil
}

// venueClient starts the paper simulator if needed and returns the REST
// client for the venue.
func (st *stack) venueClient(vc venueConfig, p paths, logger *slog.Logger) (*venue.Client, error) {
	cfg := venue.Config{BaseURL: vc.BaseURL, Logger: logger}
	if vc.Paper {
		if err := st.startPaper(p, logger); err != nil {
			return nil, err
		}
		cfg.BaseURL, cfg.HTTPClient = st.paper.BaseURL(), st.paperHTTP
	}
	st.baseURL = cfg.BaseURL
	return venue.NewClient(cfg)
}

// startPaper starts the embedded simulator on the home's paper state
// (docs/simulator.md "Durable state"): accounts come back as their keys
// are provisioned, and the ids it hands out mix in a nonce drawn for this
// run, so no id repeats across restarts or installations.
func (st *stack) startPaper(p paths, logger *slog.Logger) error {
	seed, err := paperSeed()
	if err != nil {
		return err
	}
	nonce, err := newIDNonce()
	if err != nil {
		return fmt.Errorf("paper venue: %w", err)
	}
	srv, err := sim.StartInProcess(sim.Config{Seed: seed, IDNonce: nonce, StatePath: p.paperState(), Logger: logger.With("component", "paper-sim")})
	if err != nil {
		return fmt.Errorf("paper venue: %w; the paper accounts are kept in %s: restore it, or move it aside to start every paper account over", err, p.paperState())
	}
	st.paper = srv
	st.paperHTTP = &http.Client{Transport: srv.Transport(), Timeout: venue.DefaultHTTPTimeout}
	return nil
}

// newIDNonce draws a simulator's id nonce for this run from crypto/rand
// (never zero: zero means ids from the seed alone).
func newIDNonce() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if n := binary.LittleEndian.Uint64(b[:]); n != 0 {
			return n, nil
		}
	}
}

// provisionStoredPaperKeys registers every stored paper key with the
// embedded simulator: a key whose account the paper state keeps gets it
// back, any other a fresh paper wallet, which the log reports at warn
// level: the state file was lost, or the home predates it. The keys are
// opened by the actors' own code.
func (st *stack) provisionStoredPaperKeys(replay *actors.UserReplay, masterKey []byte, statePath string, logger *slog.Logger) error {
	n := 0
	failed, err := replay.OpenStoredKeys(masterKey, "paper", func(user, apiKey string, secret messages.Secret) {
		stored := st.paper.Sim().HoldsStoredAccount(apiKey)
		created, err := st.paper.Sim().ProvisionKey(sim.Key{APIKey: apiKey, APISecret: secret.Reveal()}, paperWallet())
		if err == nil && created && !stored {
			logger.Warn("paper venue: the paper state holds no account for this stored key; it starts with the opening wallet",
				"user", user, "fingerprint", keys.Fingerprint(apiKey), "state", statePath)
		}
		switch {
		case err != nil:
			logger.Warn("paper venue: a stored key cannot be provisioned", "user", user, "fingerprint", keys.Fingerprint(apiKey))
		case !created:
			logger.Warn("paper venue: two users store the same paper key; the first one's secret is kept", "user", user, "fingerprint", keys.Fingerprint(apiKey))
		default:
			n++
		}
	})
	if err != nil {
		return fmt.Errorf("paper venue: %w", err)
	}
	if failed > 0 {
		logger.Warn("paper venue: stored keys that cannot be opened were not provisioned", "count", failed)
	}
	logger.Debug("paper venue: provisioned the stored keys", "count", n)
	return nil
}

// clientFactory builds the users' signed REST clients. On paper, a key the
// simulator does not know yet (one being added) gets a new paper account
// with the starting wallet first; a key it knows keeps its secret, so a
// wrong secret for a stored key is still refused.
func (st *stack) clientFactory(logger *slog.Logger) actors.ClientFactory {
	base, hc, paper := st.baseURL, st.paperHTTP, st.paper
	return func(apiKey, apiSecret string) (*venue.Client, error) {
		if paper != nil && apiKey != "" && apiSecret != "" {
			if created, err := paper.Sim().ProvisionKey(sim.Key{APIKey: apiKey, APISecret: apiSecret}, paperWallet()); err == nil && created {
				logger.Info("paper venue: opened a paper account for a new key", "fingerprint", keys.Fingerprint(apiKey))
			}
		}
		return venue.NewClient(venue.Config{BaseURL: base, HTTPClient: hc, APIKey: apiKey, APISecret: apiSecret, Logger: logger})
	}
}

// streamFactory opens a user's private stream: the embedded paper
// venue's through its in-process dialer, a Bybit venue's at its private
// WebSocket URL (GX_BYBIT_WS_PRIVATE_URL overrides it for loopback tests).
// The venue actor reconciles by REST after every (re)connect and gap.
func (st *stack) streamFactory(logger *slog.Logger) actors.StreamFactory {
	if paper := st.paper; paper != nil {
		return func(apiKey, apiSecret string) (*venue.Stream, error) {
			return venue.NewStream(venue.StreamConfig{URL: paper.WSPrivateURL(), APIKey: apiKey, APISecret: apiSecret, Logger: logger,
				Dialer: &websocket.Dialer{NetDialContext: paper.DialContext, HandshakeTimeout: venue.DefaultHandshakeTimeout}})
		}
	}
	url := st.venue.WSPrivateURL
	if url == "" {
		return nil
	}
	return func(apiKey, apiSecret string) (*venue.Stream, error) {
		return venue.NewStream(venue.StreamConfig{URL: url, APIKey: apiKey, APISecret: apiSecret, Logger: logger,
			Dialer: &websocket.Dialer{HandshakeTimeout: venue.DefaultHandshakeTimeout}})
	}
}

// marketFeed builds the feed that serves decisions' market data from
// caches (decisions D148): the instrument cache and, where the venue's
// public streams are known, one stream per category. It dials nothing:
// a stream connects at the first decision on one of its symbols, never
// on the start-up path. The paper venue pushes every second, so its
// quotes may be 3 s old; Bybit's (tickers 100 ms, priceLimit 300 ms)
// 900 ms. A Bybit venue whose REST URL was overridden (a loopback test)
// gets no public stream: its decisions read REST.
func (st *stack) marketFeed(vc venueConfig, client *venue.Client, cache *venue.InstrumentCache, logger *slog.Logger) (*venue.MarketFeed, error) {
	cfg := venue.MarketFeedConfig{Client: client, Instruments: cache}
	var urls map[messages.Category]string
	var dialer *websocket.Dialer
	switch {
	case st.paper != nil:
		urls = map[messages.Category]string{messages.CategoryLinear: st.paper.WSPublicURL("linear"), messages.CategorySpot: st.paper.WSPublicURL("spot")}
		dialer = &websocket.Dialer{NetDialContext: st.paper.DialContext, HandshakeTimeout: venue.DefaultHandshakeTimeout}
		cfg.StaleAfter = 3 * time.Second
	case venuePublicStreams[vc.Name] != "" && vc.BaseURL == venueHosts[vc.Name]:
		base := venuePublicStreams[vc.Name]
		urls = map[messages.Category]string{messages.CategoryLinear: base + "/linear", messages.CategorySpot: base + "/spot"}
		dialer = &websocket.Dialer{HandshakeTimeout: venue.DefaultHandshakeTimeout}
	}
	for cat, url := range urls {
		ps, err := venue.NewPublicStream(venue.PublicStreamConfig{URL: url, Category: cat, Dialer: dialer, Logger: logger})
		if err != nil {
			return nil, err
		}
		if cat == messages.CategoryLinear {
			cfg.Linear = ps
		} else {
			cfg.Spot = ps
		}
	}
	return venue.NewMarketFeed(cfg)
}

// close stops the actors (draining the journal), closes the WAL and stops
// the simulator.
func (st *stack) close() {
	if st.sys != nil {
		st.sys.Stop()
		st.sys = nil
	}
	if st.feed != nil {
		st.feed.Close()
		st.feed = nil
	}
	if st.log != nil {
		_ = st.log.Close()
		st.log = nil
	}
	if st.paper != nil {
		_ = st.paper.Close()
		st.paper = nil
	}
}
