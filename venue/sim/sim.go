package sim

import (
	"github.com/shopspring/decimal"

	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a simulator. The zero value is usable: seed 0, the real
// clock and no logging.
type Config struct {
	// Seed makes prices, books, candles, generated keys and connection ids
	// deterministic: two simulators with the same Seed and the same Now
	// answer with the same bytes. Zero is a valid seed.
	Seed int64
	// Now is the simulator's clock, read for recv-window checks, rate-limit
	// windows, the price walk and every timestamp it emits. nil means
	// time.Now. It may be called from several goroutines at once.
	Now func() time.Time
	// Logger receives the simulator's diagnostics. nil discards them. The
	// simulator never writes to stdout.
	Logger *slog.Logger
	// NoPublicRateLimit lifts the per-IP limit of the public market
	// endpoints (600 per 5 s), for benchmarks that measure the server, not
	// the venue's limits. Private endpoints keep theirs.
	NoPublicRateLimit bool
	// StartingBalances are the wallet balances of the default key's account
	// at start (coin -> amount), e.g. {"USDT": 10000} for the paper venue.
	// Nil means an empty wallet.
	StartingBalances map[string]decimal.Decimal
	// VisibilityDelay is how long after an accepted create, amend or cancel
	// the change takes effect (and shows in the order, position and
	// execution reads and on the private stream): Bybit processes writes
	// asynchronously. Zero applies each accepted change before the answer.
	// It runs on simulated time (Config.Now plus POST /sim/clock).
	VisibilityDelay time.Duration
	// IDNonce is mixed into every id the simulator hands out to an account
	// (order, execution, orderLinkId it assigns, push and connection ids),
	// so two runs with the same Seed never hand out the same id. Zero keeps
	// ids a function of the Seed alone (tests that compare runs).
	IDNonce uint64
	// StatePath, when not empty, is the file that keeps every account's
	// ledger across runs (store.go, docs/simulator.md "Durable state"):
	// StartInProcess reads it, and every applied change is written there
	// durably before the simulator answers or pushes it. Empty keeps
	// everything in memory.
	StatePath string
}

// Key is an API key pair as Bybit issues it. APISecret signs requests; the
// simulator never logs it.
type Key struct {
	APIKey    string
	APISecret string
}

// Sim is a Bybit V5 compatible exchange simulator: market data, signed
// private REST, public and private WebSocket streams, and test endpoints
// under /sim/. Serve it with Handler (or Start, which also listens).
//
// A Sim is safe for concurrent use by many requests and connections.
type Sim struct {
	// Fixed at construction.
	clock        func() time.Time
	log          *slog.Logger
	model        *model
	catalog      *catalog
	routes       map[string]*route
	noPublicRL   bool // Config.NoPublicRateLimit
	defaultKey   Key
	pushInterval time.Duration // public ticker push period
	closed       chan struct{} // closed by shutdown
	closeOnce    sync.Once
	visDelay     time.Duration // Config.VisibilityDelay
	idNonce      uint64        // Config.IDNonce
	offsetMs     atomic.Int64  // simulated time ahead of clock (POST /sim/clock)
	sweepOnce    sync.Once     // starts the background sweeper on the first order
	pushMu       sync.Mutex    // orders private pushes: taken before mu is released

	mu sync.Mutex
	// Guarded by mu.
	keys     map[string]*apiKey // by API key
	accounts []*account         // in creation order
	keySeq   uint64             // keys generated so far (drives deterministic key material)
	limiter  *limiter
	faults   faultSet
	orders   []orderRecord        // the accepted orders, newest maxOrderRecords at least (GET /sim/orders)
	conns    map[*wsConn]struct{} // open WebSocket connections
	connSeq  uint64
	pushSeq  uint64      // private pushes sent (drives push ids)
	engine   engineState // the order engine's queue and sweep state (engine.go)
	store    *stateStore // the durable state (store.go); nil keeps everything in memory
}

// New builds a simulator with its instruments and one pre-provisioned key
// (DefaultKey). It starts no goroutines; WebSocket connections start their
// own and end them when the connection ends, and the first accepted order
// starts the engine's sweeper (engine.go), which ends at shutdown.
func New(cfg Config) *Sim {
	clock := cfg.Now
	if clock == nil {
		clock = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Sim{
		clock:        clock,
		log:          logger,
		model:        newModel(cfg.Seed),
		catalog:      newCatalog(),
		pushInterval: time.Second,
		closed:       make(chan struct{}),
		noPublicRL:   cfg.NoPublicRateLimit,
		visDelay:     cfg.VisibilityDelay,
		idNonce:      cfg.IDNonce,
		keys:         make(map[string]*apiKey),
		limiter:      newLimiter(),
		conns:        make(map[*wsConn]struct{}),
	}
	s.routes = s.buildRoutes()
	s.mu.Lock()
	k := s.newKeyLocked(false, defaultPermissions(), "default")
	for coin, amount := range cfg.StartingBalances {
		k.acct.ledgerLocked().setBalanceLocked(coin, amount)
	}
	s.mu.Unlock()
	s.defaultKey = Key{APIKey: k.key, APISecret: k.secret}
	return s
}

// DefaultKey returns the pre-provisioned key. It is read-write and carries
// exactly the trading permissions ContractTrade:[Order,Position] and
// Spot:[SpotTrade]. It is derived from Config.Seed, so the same seed gives
// the same key.
func (s *Sim) DefaultKey() Key { return s.defaultKey }

// Handler returns the simulator's HTTP handler: every REST path under /v5/,
// the WebSocket paths /v5/public/linear, /v5/public/spot and /v5/private,
// and the test endpoints under /sim/. Unknown paths answer HTTP 404.
func (s *Sim) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Paths of the WebSocket streams.
const (
	pathWSPrivate      = "/v5/private"
	pathWSPublicLinear = "/v5/public/linear"
	pathWSPublicSpot   = "/v5/public/spot"
)

func (s *Sim) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == pathWSPrivate:
		s.serveWS(w, r, streamPrivate)
	case p == pathWSPublicLinear:
		s.serveWS(w, r, streamPublicLinear)
	case p == pathWSPublicSpot:
		s.serveWS(w, r, streamPublicSpot)
	case strings.HasPrefix(p, "/v5/"):
		s.serveV5(w, r)
	case p == "/sim" || strings.HasPrefix(p, "/sim/"):
		s.serveTestAPI(w, r)
	default:
		http.NotFound(w, r)
	}
}

// now is simulated time: the configured clock plus the offset POST
// /sim/clock added.
func (s *Sim) now() time.Time {
	return s.clock().Add(time.Duration(s.offsetMs.Load()) * time.Millisecond)
}

// shutdown closes every WebSocket connection and releases requests waiting
// in an injected delay. The REST handler keeps answering afterwards.
func (s *Sim) shutdown() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.mu.Lock()
	conns := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}
