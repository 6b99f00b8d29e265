package venue

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The public stream (docs/bybit.md "Public streams"): one connection per
// category, subscribed to tickers.{symbol} and priceLimit.{symbol} for the
// symbols a decision asked for (Watch). It keeps only each symbol's latest
// quote (best bid and ask, last and mark price, the price band) and when
// it came: a push overwrites a value under a mutex and queues nothing, so
// a flood of pushes costs CPU, never memory, and never reaches an actor.
// Pushes for a symbol not watched are dropped. While the connection is
// down nothing is held: every quote is forgotten at a disconnect, and a
// new connection starts empty.

// Defaults of a PublicStream.
const (
	// DefaultPublicMaxSymbols bounds the symbols one public stream
	// watches; past it Watch refuses (decisions read REST).
	DefaultPublicMaxSymbols = 64
	// publicSubscribeArgs is how many topics one subscribe carries (spot
	// takes at most 10).
	publicSubscribeArgs = 10
)

// PublicStreamConfig configures a PublicStream. Zero fields mean their
// defaults.
type PublicStreamConfig struct {
	// URL is the category's public stream, e.g.
	// "wss://stream.bybit.com/v5/public/linear", a loopback simulator's
	// ws_public_linear, or the in-process paper venue's WSPublicURL.
	URL string
	// Category is linear or spot; it names the pushes' quotes.
	Category messages.Category
	// Dialer dials the connection (nil: a 10 s handshake timeout).
	Dialer *websocket.Dialer
	// PingInterval is how often {"op":"ping"} is sent (zero: 20 s).
	PingInterval time.Duration
	// ReadTimeout is how long the connection may stay silent before it
	// is replaced (zero: 2 × PingInterval + 5 s).
	ReadTimeout time.Duration
	// Backoff is the wait before reconnect attempt n (nil:
	// DefaultReconnectBackoff).
	Backoff func(attempt int) time.Duration
	// MaxSymbols bounds the watched symbols (zero:
	// DefaultPublicMaxSymbols).
	MaxSymbols int
	// Now is the clock of the quotes' times (nil: time.Now).
	Now func() time.Time
	// Logger receives connection lines, never payloads (nil: discard).
	Logger *slog.Logger
}

// PublicQuote is what the public stream last showed of one symbol.
type PublicQuote struct {
	Symbol string
	// Bid, Ask, Last and Mark are the ticker's best bid and ask, last
	// and mark price (Mark on linear only); HasTicker once a snapshot
	// came on this connection.
	Bid, Ask, Last, Mark decimal.Decimal
	HasTicker            bool
	// TickerAt is when the ticker last changed (a snapshot or a delta
	// was read, local clock); TickerTS is the push's own time (venue
	// clock).
	TickerAt, TickerTS time.Time
	// BuyLimit and SellLimit are the price band (priceLimit); HasBand
	// once one came on this connection.
	BuyLimit, SellLimit decimal.Decimal
	HasBand             bool
	BandAt, BandTS      time.Time
}

// TickerAge is how old the ticker is at now: the older of the time since
// it was read and the time since the venue stamped it (a push stamped in
// the future counts from when it was read). Never negative.
func (q *PublicQuote) TickerAge(now time.Time) time.Duration {
	return pushAge(now, q.TickerAt, q.TickerTS)
}

// BandAge is TickerAge for the band.
func (q *PublicQuote) BandAge(now time.Time) time.Duration { return pushAge(now, q.BandAt, q.BandTS) }

func pushAge(now, read, stamped time.Time) time.Duration {
	age := now.Sub(read)
	if !stamped.IsZero() {
		age = max(age, now.Sub(stamped))
	}
	return max(age, 0)
}

// PublicStream is a client of one category's public WebSocket. It
// connects on the first Watch, never before, and reconnects until Close.
// Safe for concurrent use.
type PublicStream struct {
	// fixed at construction
	url      string
	category messages.Category
	dialer   *websocket.Dialer
	ping     time.Duration
	readTO   time.Duration
	backoff  func(int) time.Duration
	maxSyms  int
	now      func() time.Time
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// wmu makes the subscribes and the pinger one writer.
	wmu sync.Mutex
	// pushes counts the pushes read (any topic), for tests and metrics.
	pushes atomic.Int64

	mu sync.Mutex
	// guarded by mu
	started bool
	closed  bool
	conn    *websocket.Conn // nil while down
	symbols []string        // watched, in order
	quotes  map[string]*PublicQuote
}

// NewPublicStream validates cfg. Nothing is dialled until Watch.
func NewPublicStream(cfg PublicStreamConfig) (*PublicStream, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil {
		return nil, messages.InvalidParams("ws_url", "must be a ws:// or wss:// URL with a host")
	}
	if cfg.Category != messages.CategoryLinear && cfg.Category != messages.CategorySpot {
		return nil, messages.InvalidParams("category", "must be linear or spot")
	}
	p := &PublicStream{url: u.String(), category: cfg.Category, dialer: cfg.Dialer, ping: cfg.PingInterval, readTO: cfg.ReadTimeout,
		backoff: cfg.Backoff, maxSyms: cfg.MaxSymbols, now: cfg.Now, log: cfg.Logger, quotes: map[string]*PublicQuote{}}
	if p.ping <= 0 {
		p.ping = DefaultPingInterval
	}
	if p.readTO <= 0 {
		p.readTO = 2*p.ping + 5*time.Second
	}
	if p.dialer == nil {
		p.dialer = &websocket.Dialer{HandshakeTimeout: DefaultHandshakeTimeout}
	}
	if p.backoff == nil {
		p.backoff = DefaultReconnectBackoff
	}
	if p.maxSyms <= 0 {
		p.maxSyms = DefaultPublicMaxSymbols
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Watch asks the stream for symbol's ticker and band: the first Watch
// starts the connection (in the background); a symbol watched while the
// connection is up is subscribed at once. It answers false for a symbol
// that is not one, past MaxSymbols, or after Close (decisions then read
// REST).
func (p *PublicStream) Watch(symbol string) bool {
	if !messages.SymbolRE.MatchString(symbol) {
		return false
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	for _, s := range p.symbols {
		if s == symbol {
			p.mu.Unlock()
			return true
		}
	}
	if len(p.symbols) >= p.maxSyms {
		p.mu.Unlock()
		return false
	}
	p.symbols = append(p.symbols, symbol)
	conn := p.conn
	if !p.started {
		p.started = true
		p.wg.Add(1)
		go p.run()
	}
	p.mu.Unlock()
	if conn != nil {
		// The connection's own subscribe read the list before this
		// symbol joined it (both under mu), so it is sent here.
		if err := p.subscribe(conn, []string{symbol}); err != nil {
			_ = conn.Close() // the reader sees it and reconnects
		}
	}
	return true
}

// Quote is the symbol's latest quote while the connection is up; false
// when the symbol is not watched, nothing came yet on this connection, or
// the connection is down.
func (p *PublicStream) Quote(symbol string) (PublicQuote, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q, ok := p.quotes[symbol]
	if !ok || p.conn == nil {
		return PublicQuote{}, false
	}
	return *q, true
}

// Connected reports whether the connection is up.
func (p *PublicStream) Connected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn != nil
}

// Pushes is how many pushes the stream has read.
func (p *PublicStream) Pushes() int64 { return p.pushes.Load() }

// Close stops the stream and waits for its goroutines. Safe to call more
// than once.
func (p *PublicStream) Close() {
	p.mu.Lock()
	p.closed = true
	c := p.conn
	p.mu.Unlock()
	p.cancel()
	if c != nil {
		_ = c.Close()
	}
	p.wg.Wait()
}

// run connects, reads until the connection fails, and reconnects with
// backoff until Close.
func (p *PublicStream) run() {
	defer p.wg.Done()
	attempt := 0
	for p.ctx.Err() == nil {
		conn, reason := p.connect()
		if conn == nil {
			p.log.Warn("venue public stream: connect failed", slog.String("category", string(p.category)), slog.String("reason", reason), slog.Int("attempt", attempt))
			if !sleepUnlessDone(p.ctx, p.backoff(attempt)) {
				return
			}
			attempt++
			continue
		}
		attempt = 0
		reason = p.serve(conn)
		if p.ctx.Err() != nil {
			return
		}
		p.log.Warn("venue public stream: disconnected", slog.String("category", string(p.category)), slog.String("reason", reason))
		if !sleepUnlessDone(p.ctx, p.backoff(0)) {
			return
		}
		attempt = 1
	}
}

// connect dials and subscribes every watched symbol. The connection is
// published (conn) under mu together with the list it subscribes, so a
// symbol watched meanwhile is subscribed by Watch.
func (p *PublicStream) connect() (*websocket.Conn, string) {
	conn, resp, err := p.dialer.DialContext(p.ctx, p.url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, "dial_failed"
	}
	conn.SetReadLimit(streamReadLimit)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = conn.Close()
		return nil, "closed"
	}
	p.conn = conn
	clear(p.quotes)
	symbols := append([]string(nil), p.symbols...)
	p.mu.Unlock()
	if err := p.subscribe(conn, symbols); err != nil {
		p.drop(conn)
		return nil, "subscribe_send_failed"
	}
	p.log.Info("venue public stream: connected", slog.String("category", string(p.category)), slog.Int("symbols", len(symbols)))
	return conn, ""
}

// subscribe sends the topics of symbols, publicSubscribeArgs a request.
// The acks are read by the read loop (a refused topic stays without
// quotes, so decisions on it read REST).
func (p *PublicStream) subscribe(conn *websocket.Conn, symbols []string) error {
	topics := make([]string, 0, 2*len(symbols))
	for _, s := range symbols {
		topics = append(topics, "tickers."+s, "priceLimit."+s)
	}
	for len(topics) > 0 {
		n := min(len(topics), publicSubscribeArgs)
		b, _ := json.Marshal(topics[:n])
		if err := writeTextFrame(&p.wmu, conn, []byte(`{"op":"subscribe","args":`+string(b)+`}`)); err != nil {
			return err
		}
		topics = topics[n:]
	}
	return nil
}

// drop forgets conn and every quote, and closes it.
func (p *PublicStream) drop(conn *websocket.Conn) {
	dropStreamConn(&p.mu, &p.conn, conn, func() { clear(p.quotes) })
}

// serve reads conn until it fails, pinging meanwhile.
func (p *PublicStream) serve(conn *websocket.Conn) string {
	ping := func(int) error { return writeTextFrame(&p.wmu, conn, []byte(`{"op":"ping"}`)) }
	return serveStreamConn(conn, p.ping, ping, 0, nil, p.readLoop, p.drop)
}

// wirePublicMsg is any public stream message: an ack, a pong or a push.
type wirePublicMsg struct {
	Op      string          `json:"op"`
	Success bool            `json:"success"`
	Topic   string          `json:"topic"`
	Type    string          `json:"type"`
	TS      flexNum         `json:"ts"`
	Data    json.RawMessage `json:"data"`
}

// wirePublicTicker is a tickers push's data: every field optional (a
// linear delta carries only what changed).
type wirePublicTicker struct {
	Symbol    string  `json:"symbol"`
	Bid1Price flexNum `json:"bid1Price"`
	Ask1Price flexNum `json:"ask1Price"`
	LastPrice flexNum `json:"lastPrice"`
	MarkPrice flexNum `json:"markPrice"`
}

type wirePriceLimit struct {
	Symbol  string  `json:"symbol"`
	BuyLmt  flexNum `json:"buyLmt"`
	SellLmt flexNum `json:"sellLmt"`
}

func (p *PublicStream) readLoop(conn *websocket.Conn) string {
	for {
		_ = conn.SetReadDeadline(time.Now().Add(p.readTO))
		_, data, err := conn.ReadMessage()
		if err != nil {
			if p.ctx.Err() != nil {
				return "closed"
			}
			return readFailure(err)
		}
		var m wirePublicMsg
		if json.Unmarshal(data, &m) != nil {
			continue // a malformed message changes nothing
		}
		if m.Topic == "" {
			if m.Op == "subscribe" && !m.Success {
				p.log.Warn("venue public stream: a subscribe was refused", slog.String("category", string(p.category)))
			}
			continue
		}
		p.pushes.Add(1)
		if err := p.apply(&m); err != nil {
			p.log.Debug("venue public stream: push dropped", slog.String("topic", safeTopic(m.Topic)), slog.String("err", err.Error()))
		}
	}
}

// apply applies one push to its symbol's quote: strictly decoded, for a
// watched symbol only, the symbol in the data the one of the topic. A
// push that fails any of that changes nothing.
func (p *PublicStream) apply(m *wirePublicMsg) error {
	kind, symbol, ok := strings.Cut(m.Topic, ".")
	if !ok {
		return errors.New("topic without a symbol")
	}
	var d fieldDecoder
	ts := d.ms("ts", m.TS)
	if d.err != nil {
		return d.err
	}
	now := p.now()
	switch kind {
	case "tickers":
		var w wirePublicTicker
		if err := json.Unmarshal(m.Data, &w); err != nil {
			return errors.New("tickers: data is not an object")
		}
		if w.Symbol != symbol {
			return errors.New("tickers: another symbol than the topic's")
		}
		bid, ask := d.decNum("bid1Price", w.Bid1Price), d.decNum("ask1Price", w.Ask1Price)
		last, mark := d.decNum("lastPrice", w.LastPrice), d.decNum("markPrice", w.MarkPrice)
		if d.err != nil {
			return d.err
		}
		if bid.IsNegative() || ask.IsNegative() || last.IsNegative() || mark.IsNegative() {
			return errors.New("tickers: a negative price")
		}
		delta := m.Type == "delta"
		p.mu.Lock()
		defer p.mu.Unlock()
		q := p.quoteLocked(symbol)
		if q == nil {
			return errors.New("tickers: a symbol not watched")
		}
		if delta && !q.HasTicker {
			return errors.New("tickers: a delta before any snapshot")
		}
		set := func(dst *decimal.Decimal, v decimal.Decimal, f flexNum) {
			if !delta || f.set {
				*dst = v
			}
		}
		set(&q.Bid, bid, w.Bid1Price)
		set(&q.Ask, ask, w.Ask1Price)
		set(&q.Last, last, w.LastPrice)
		set(&q.Mark, mark, w.MarkPrice)
		q.HasTicker, q.TickerAt, q.TickerTS = true, now, ts
		return nil
	case "priceLimit":
		var rows []wirePriceLimit
		if err := json.Unmarshal(m.Data, &rows); err != nil || len(rows) != 1 {
			return errors.New("priceLimit: data is not one row")
		}
		w := rows[0]
		if w.Symbol != symbol {
			return errors.New("priceLimit: another symbol than the topic's")
		}
		buy, sell := d.decNum("buyLmt", w.BuyLmt), d.decNum("sellLmt", w.SellLmt)
		if d.err != nil {
			return d.err
		}
		if !buy.IsPositive() || !sell.IsPositive() {
			return errors.New("priceLimit: a band that is not positive")
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		q := p.quoteLocked(symbol)
		if q == nil {
			return errors.New("priceLimit: a symbol not watched")
		}
		q.BuyLimit, q.SellLimit, q.HasBand, q.BandAt, q.BandTS = buy, sell, true, now, ts
		return nil
	}
	return errors.New("a topic not asked for")
}

// quoteLocked is symbol's quote, made on its first push; nil for a
// symbol not watched.
func (p *PublicStream) quoteLocked(symbol string) *PublicQuote {
	if q, ok := p.quotes[symbol]; ok {
		return q
	}
	for _, s := range p.symbols {
		if s == symbol {
			q := &PublicQuote{Symbol: symbol}
			p.quotes[symbol] = q
			return q
		}
	}
	return nil
}

// String names the stream without anything secret (it has no secret).
func (p *PublicStream) String() string {
	return "venue.PublicStream{" + p.url + ", " + string(p.category) + ", " + strconv.Itoa(p.maxSyms) + " symbols at most}"
}
