package venue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// MarketFeed serves a decision's public market data from caches
// (docs/decisions.md D148): the instrument rules from an InstrumentCache
// (a TTL, refreshed ahead of it, dropped on a refusal for an instrument
// rule), and the ticker and price band from the public stream, each
// bounded by a REST read of the same values (the anchor).
//
// Why an anchor: the stream is the venue's word as much as REST is, but it
// is the easier one to forge or freeze (a proxy, a stuck connection), and
// a quote decides how much a sell is worth and how far a market order may
// cross. So a quote is the stricter of the stream's (no older than
// StaleAfter) and the anchor's (no older than AnchorMaxAge): the lower
// ask, the higher bid, the narrower band. A forged push can then make a
// decision stricter (a refusal, an IOC that does not fill), never looser
// than the last REST read; a frozen or closed stream is not fresh and
// the decision reads REST as before. One feed per process, shared by all
// users: the data is public.
type MarketFeed struct {
	// fixed at construction
	client      *Client
	instruments *InstrumentCache
	streams     map[messages.Category]*PublicStream
	staleAfter  time.Duration
	anchorAge   time.Duration
	refreshAge  time.Duration
	now         func() time.Time

	reads singleflight.Group

	mu      sync.Mutex
	anchors map[instrumentKey]*quoteAnchor // guarded by mu
	// restReads counts the ticker and band reads by REST (anchors and
	// fallbacks), for tests and benchmarks.
	restReads int64
}

// quoteAnchor is the last REST read of a symbol's ticker and band.
type quoteAnchor struct {
	ticker messages.Ticker
	band   messages.PriceLimit
	at     time.Time
	// refreshing: a background read of it is under way (guarded by
	// MarketFeed.mu).
	refreshing bool
}

// Defaults of a MarketFeed.
const (
	// DefaultStaleAfter is how old a pushed quote may be: three times the
	// slower push interval of the two topics (Bybit: priceLimit 300 ms,
	// tickers 100 ms; the simulator pushes both every second, so a feed
	// over it is built with 3 s).
	DefaultStaleAfter = 900 * time.Millisecond
	// DefaultAnchorMaxAge is how old the REST read that bounds a pushed
	// quote may be; it is read again in the background once it is older
	// than a fifth of that, so a decision rarely waits for it.
	DefaultAnchorMaxAge = 5 * time.Second
	// maxAnchors bounds the symbols with an anchor.
	maxAnchors = 1024
)

// MarketFeedConfig configures a MarketFeed.
type MarketFeedConfig struct {
	// Client reads the public REST endpoints (required).
	Client *Client
	// Instruments caches the rules (nil: a new cache over Client with
	// DefaultInstrumentTTL).
	Instruments *InstrumentCache
	// Linear and Spot are the public streams (nil: none; every quote of
	// that category is read by REST).
	Linear, Spot *PublicStream
	// StaleAfter bounds a pushed quote's age (zero: DefaultStaleAfter);
	// AnchorMaxAge the REST anchor's (zero: DefaultAnchorMaxAge).
	StaleAfter, AnchorMaxAge time.Duration
	// Now is the clock (nil: time.Now); the streams must use the same.
	Now func() time.Time
}

// NewMarketFeed builds a feed. It dials nothing: a stream connects on the
// first decision that asks for one of its symbols.
func NewMarketFeed(cfg MarketFeedConfig) (*MarketFeed, error) {
	if cfg.Client == nil {
		return nil, messages.Internal(fmt.Errorf("venue: a market feed needs a REST client"))
	}
	f := &MarketFeed{client: cfg.Client, instruments: cfg.Instruments, streams: map[messages.Category]*PublicStream{},
		staleAfter: cfg.StaleAfter, anchorAge: cfg.AnchorMaxAge, now: cfg.Now, anchors: map[instrumentKey]*quoteAnchor{}}
	if f.instruments == nil {
		f.instruments = NewInstrumentCache(cfg.Client, 0, cfg.Now)
	}
	f.instruments.RefreshAhead()
	if cfg.Linear != nil {
		f.streams[messages.CategoryLinear] = cfg.Linear
	}
	if cfg.Spot != nil {
		f.streams[messages.CategorySpot] = cfg.Spot
	}
	if f.staleAfter <= 0 {
		f.staleAfter = DefaultStaleAfter
	}
	if f.anchorAge <= 0 {
		f.anchorAge = DefaultAnchorMaxAge
	}
	f.refreshAge = f.anchorAge / 5
	if f.now == nil {
		f.now = time.Now
	}
	return f, nil
}

// StaleAfter is the bound on a pushed quote's age.
func (f *MarketFeed) StaleAfter() time.Duration { return f.staleAfter }

// Instrument is the symbol's rules from the cache.
func (f *MarketFeed) Instrument(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error) {
	return f.instruments.Get(ctx, cat, symbol)
}

// InstrumentRefused drops the symbol's cached rules: the venue refused an
// order for an instrument rule, so the next decision reads them again.
func (f *MarketFeed) InstrumentRefused(cat messages.Category, symbol string) {
	f.instruments.Invalidate(cat, symbol)
}

// RESTReads is how many ticker and band reads went to REST.
func (f *MarketFeed) RESTReads() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restReads
}

// Close stops the streams.
func (f *MarketFeed) Close() {
	for _, s := range f.streams {
		s.Close()
	}
}

// QuoteSource says where a decision's quote came from.
type QuoteSource string

// Quote sources.
const (
	// QuoteStream: the stream's fresh quote, bounded by the anchor.
	QuoteStream QuoteSource = "stream"
	// QuoteREST: a REST read made for this decision (no fresh stream).
	QuoteREST QuoteSource = "rest"
)

// Quote is the ticker and band a decision on symbol uses. The symbol is
// watched on the category's stream (the first call connects it). When
// the stream holds a band no older than StaleAfter and, if needTicker, a
// ticker as fresh, the quote is the stricter of it and the anchor (read
// first by REST if missing or older than AnchorMaxAge; read again in the
// background past a fifth of that). Otherwise the ticker and band are
// read by REST now, as a decision without a feed does. Without
// needTicker the stream's ticker need not be fresh, and the ticker
// answered is the anchor's as read (the caller does not use it).
func (f *MarketFeed) Quote(ctx context.Context, cat messages.Category, symbol string, needTicker bool) (*messages.Ticker, *messages.PriceLimit, QuoteSource, error) {
	if err := checkMarket(cat, symbol); err != nil {
		return nil, nil, "", err
	}
	var pushed PublicQuote
	fresh := false
	if st := f.streams[cat]; st != nil && st.Watch(symbol) {
		q, ok := st.Quote(symbol)
		now := f.now()
		fresh = ok && q.HasBand && q.BandAge(now) <= f.staleAfter &&
			(!needTicker || (q.HasTicker && q.TickerAge(now) <= f.staleAfter))
		pushed = q
	}
	key := instrumentKey{cat, symbol}
	f.mu.Lock()
	a := f.anchors[key]
	f.mu.Unlock()
	now := f.now()
	if !fresh || a == nil || now.Sub(a.at) > f.anchorAge {
		var err error
		if a, err = f.readAnchor(ctx, key); err != nil {
			return nil, nil, "", err
		}
		if !fresh {
			t, b := a.ticker, a.band
			return &t, &b, QuoteREST, nil
		}
	} else if now.Sub(a.at) > f.refreshAge && f.startRefresh(a) {
		go func() {
			c, cancel := context.WithTimeout(context.Background(), DefaultHTTPTimeout)
			defer cancel()
			_, _ = f.readAnchor(c, key)
		}()
	}
	t, b := stricterQuote(a, &pushed, needTicker)
	return t, b, QuoteStream, nil
}

// startRefresh claims a's background read; false when one is under way.
func (f *MarketFeed) startRefresh(a *quoteAnchor) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.refreshing {
		return false
	}
	a.refreshing = true
	return true
}

// stricterQuote is the anchor tightened by a fresh pushed quote: the
// narrower band, the lower ask, the higher bid. Everything else of the
// ticker is the anchor's.
func stricterQuote(a *quoteAnchor, q *PublicQuote, needTicker bool) (*messages.Ticker, *messages.PriceLimit) {
	b := a.band
	if b.BuyLimit.IsPositive() {
		b.BuyLimit = decimal.Min(b.BuyLimit, q.BuyLimit)
	} else {
		b.BuyLimit = q.BuyLimit // no limit by REST: the pushed one is stricter
	}
	b.SellLimit = decimal.Max(b.SellLimit, q.SellLimit)
	t := a.ticker
	if needTicker {
		t.Ask1Price = decimal.Min(t.Ask1Price, q.Ask)
		t.Bid1Price = decimal.Max(t.Bid1Price, q.Bid)
	}
	return &t, &b
}

// readAnchor reads the symbol's ticker and band by REST (at once, one
// round trip of waiting), stores them as its anchor and answers them.
// Concurrent reads of one symbol share one.
func (f *MarketFeed) readAnchor(ctx context.Context, key instrumentKey) (*quoteAnchor, error) {
	ch := f.reads.DoChan(string(key.cat)+"\x00"+key.symbol, func() (v any, err error) {
		defer func() {
			if r := recover(); r != nil {
				v, err = nil, messages.Internal(fmt.Errorf("quote read panicked: %v", r))
			}
		}()
		// The data is as old as the moment the read starts.
		started := f.now()
		rc := context.WithoutCancel(ctx)
		rc, cancel := context.WithTimeout(rc, DefaultHTTPTimeout)
		defer cancel()
		var t *messages.Ticker
		var terr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if r := recover(); r != nil {
					terr = messages.Internal(fmt.Errorf("ticker read panicked: %v", r))
				}
			}()
			t, terr = f.client.Ticker(rc, key.cat, key.symbol)
		}()
		b, berr := f.client.PriceLimit(rc, key.cat, key.symbol)
		<-done
		f.mu.Lock()
		f.restReads += 2
		f.mu.Unlock()
		if terr != nil {
			return nil, terr
		}
		if berr != nil {
			return nil, berr
		}
		a := &quoteAnchor{ticker: *t, band: *b, at: started}
		f.mu.Lock()
		if _, ok := f.anchors[key]; !ok && len(f.anchors) >= maxAnchors {
			clear(f.anchors) // symbols decided on are few; a bound all the same
		}
		f.anchors[key] = a
		f.mu.Unlock()
		return a, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*quoteAnchor), nil
	case <-ctx.Done():
		fl := &failure{rule: ruleByFailure[FailCanceled], reason: string(FailCanceled), cause: ctx.Err()}
		return nil, fl.toError(false, PathTickers, 1, f.now())
	}
}
