package venue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Defaults applied by NewStream for zero StreamConfig fields.
const (
	DefaultPingInterval     = 20 * time.Second
	DefaultStreamBuffer     = 1024
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultReconnectMax caps DefaultReconnectBackoff.
	DefaultReconnectMax = 30 * time.Second
	// streamReadLimit bounds one incoming message.
	streamReadLimit = 4 << 20
	// streamWriteTimeout bounds one outgoing frame.
	streamWriteTimeout = 5 * time.Second
	// authExpiry is how far in the future the auth "expires" lies.
	authExpiry = 10 * time.Second
	// gapRetry is how often an owed gap event is retried.
	gapRetry = 100 * time.Millisecond
	// recentOrders is how many client order ids the stream remembers for
	// WaitOrder.
	recentOrders = 4096
)

// PrivateTopics are the topics a Stream subscribes to (docs/bybit.md "Private stream").
var PrivateTopics = []string{"order", "execution", "position", "wallet"}

// StreamConfig configures a Stream. Zero fields mean their defaults.
type StreamConfig struct {
	// URL is the private stream, e.g. "wss://stream-demo.bybit.com/v5/private",
	// a loopback simulator's ws_private, or the in-process paper venue's
	// WSPrivateURL (with Dialer.NetDialContext set to its DialContext).
	URL string
	// APIKey and APISecret sign the auth message. The secret is never
	// logged nor put into an error or event.
	APIKey    string
	APISecret string
	// Dialer dials the connection. Nil means a dialer with a 10 s handshake
	// timeout and no proxy. The embedded paper venue passes a dialer whose
	// NetDialContext is its DialContext.
	Dialer *websocket.Dialer
	// PingInterval is how often {"op":"ping"} is sent. Zero means 20 s.
	PingInterval time.Duration
	// ReadTimeout is how long the connection may stay silent (no push, no
	// pong) before it is declared dead and replaced. Zero means
	// 2 × PingInterval + 5 s; it must exceed PingInterval.
	ReadTimeout time.Duration
	// Backoff returns the wait before reconnect attempt n (0 for the first
	// after a loss). Nil means DefaultReconnectBackoff.
	Backoff func(attempt int) time.Duration
	// Buffer is the capacity of the events channel. Zero means 1024. When
	// it is full the stream drops events and delivers a StreamGap as soon
	// as there is room, so the consumer reconciles; it never blocks.
	Buffer int
	// Now is the clock for the auth expiry. Nil means time.Now.
	Now func() time.Time
	// Logger receives connection lines (never secrets nor payloads). Nil
	// means discard.
	Logger *slog.Logger
}

// String redacts the secret.
func (c StreamConfig) String() string {
	return "venue.StreamConfig{URL: " + strconv.Quote(c.URL) + ", APIKey: " + redactKey(c.APIKey) + ", APISecret: [redacted]}"
}

// GoString redacts the secret for %#v.
func (c StreamConfig) GoString() string { return c.String() }

// DefaultReconnectBackoff is 500 ms << attempt, capped at 30 s, with
// jitter: the wait is uniformly drawn from [d/2, d].
func DefaultReconnectBackoff(attempt int) time.Duration {
	d := DefaultReconnectMax
	if attempt >= 0 && attempt < 6 {
		d = min(500*time.Millisecond<<attempt, DefaultReconnectMax)
	}
	half := d / 2
	return half + rand.N(half+1)
}

// Stream is a client of Bybit's private WebSocket for one key. It keeps
// one connection up (auth, subscribe, ping, reconnect with backoff) and
// delivers typed events on Events. Its goroutines end with Close.
type Stream struct {
	// fixed at construction
	url     string
	apiKey  string
	secret  string
	dialer  *websocket.Dialer
	ping    time.Duration
	readTO  time.Duration
	backoff func(int) time.Duration
	now     func() time.Time
	log     *slog.Logger
	events  chan messages.StreamEvent
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// dmu serialises delivery (the reader and the pinger's gap retry).
	dmu sync.Mutex
	// guarded by dmu
	gapPending bool
	gapReason  string
	dropped    int

	// wmu makes the auth/subscribe writes and the pinger one writer.
	wmu sync.Mutex

	// lastRead is when the last message (push or pong) was read, in unix
	// nanoseconds; 0 before the first.
	lastRead atomic.Int64
	// lastPush is when the last push (a data message of a subscribed
	// topic, not a pong or an ack) was read, in unix nanoseconds; 0
	// before the first.
	lastPush atomic.Int64

	mu sync.Mutex
	// guarded by mu
	conn    *websocket.Conn
	recent  map[string]messages.Order
	order   []string // recent's keys, oldest first
	waiters map[string][]chan messages.Order
	closed  bool
}

// NewStream validates cfg and starts the stream: it connects in the
// background and reconnects until Close.
func NewStream(cfg StreamConfig) (*Stream, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil {
		return nil, messages.InvalidParams("ws_url", "must be a ws:// or wss:// URL with a host")
	}
	if cfg.APIKey == "" || cfg.APISecret == "" {
		return nil, messages.InvalidParams("api_key", "the private stream needs an API key and secret")
	}
	s := &Stream{
		url:     u.String(),
		apiKey:  cfg.APIKey,
		secret:  cfg.APISecret,
		dialer:  cfg.Dialer,
		ping:    cfg.PingInterval,
		readTO:  cfg.ReadTimeout,
		backoff: cfg.Backoff,
		now:     cfg.Now,
		log:     cfg.Logger,
		recent:  map[string]messages.Order{},
		waiters: map[string][]chan messages.Order{},
	}
	if s.ping <= 0 {
		s.ping = DefaultPingInterval
	}
	if s.readTO == 0 {
		s.readTO = 2*s.ping + 5*time.Second
	}
	if s.readTO <= s.ping {
		return nil, messages.InvalidParams("read_timeout", "must be longer than the ping interval")
	}
	if s.dialer == nil {
		s.dialer = &websocket.Dialer{HandshakeTimeout: DefaultHandshakeTimeout}
	}
	if s.backoff == nil {
		s.backoff = DefaultReconnectBackoff
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	buf := cfg.Buffer
	if buf <= 0 {
		buf = DefaultStreamBuffer
	}
	s.events = make(chan messages.StreamEvent, buf)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.run()
	return s, nil
}

// String hides the secret.
func (s *Stream) String() string {
	return "venue.Stream{" + s.url + ", key " + redactKey(s.apiKey) + "}"
}

// LastRead is when the stream last read a message (a push or a pong);
// zero before the first. It proves the connection only: a proxy may pass
// pongs and drop every push. Safe for concurrent use.
func (s *Stream) LastRead() time.Time { return unixNanoTime(s.lastRead.Load()) }

// LastPush is when the stream last read a push (a data message of a
// subscribed topic; pongs and acks do not count); zero before the first.
// Safe for concurrent use.
func (s *Stream) LastPush() time.Time { return unixNanoTime(s.lastPush.Load()) }

// unixNanoTime is the time of n unix nanoseconds; zero for 0.
func unixNanoTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Events delivers connection events and pushes, in order. It is closed
// after Close.
func (s *Stream) Events() <-chan messages.StreamEvent { return s.events }

// Close stops the stream: it closes the connection (with a close frame),
// stops reconnecting, waits for its goroutines and closes Events. It is
// safe to call more than once.
func (s *Stream) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	c := s.conn
	s.mu.Unlock()
	s.cancel()
	if c != nil {
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"),
			time.Now().Add(200*time.Millisecond))
		_ = c.Close()
	}
	s.wg.Wait()
	if !already {
		close(s.events)
	}
	return nil
}

// WaitOrder waits up to wait for an order push with orderLinkID and
// returns the latest one. An id already pushed (among the last 4096) is
// returned at once. It does not consume Events.
func (s *Stream) WaitOrder(ctx context.Context, orderLinkID string, wait time.Duration) (messages.Order, bool) {
	o, ok, _ := s.waitOrder(ctx, orderLinkID, wait, nil)
	return o, ok
}

// maxRejectedPushes bounds the mismatches one wait reports.
const maxRejectedPushes = 8

// WaitMatchingOrder waits up to wait for an order push with the
// expectation's client order id that matches it, and returns it. Pushes
// of the id that do not match are passed over (the wait goes on) and
// named in the answer by the first field that disagreed (at most 8). The
// latest push of the id already seen is tried at once. It does not
// consume Events.
func (s *Stream) WaitMatchingOrder(ctx context.Context, expect *messages.OrderExpectation, wait time.Duration) (messages.Order, bool, []string) {
	return s.waitOrder(ctx, expect.ClientOrderID, wait, expect.Mismatch)
}

// waitOrder waits for a push of orderLinkID for which mismatch (nil:
// any) names no field.
func (s *Stream) waitOrder(ctx context.Context, orderLinkID string, wait time.Duration, mismatch func(*messages.Order) string) (messages.Order, bool, []string) {
	var rejected []string
	accept := func(o messages.Order) bool {
		if mismatch == nil {
			return true
		}
		f := mismatch(&o)
		if f != "" && len(rejected) < maxRejectedPushes {
			rejected = append(rejected, f)
		}
		return f == ""
	}
	ch := make(chan messages.Order, maxRejectedPushes)
	s.mu.Lock()
	if o, ok := s.recent[orderLinkID]; ok && accept(o) {
		s.mu.Unlock()
		return o, true, rejected
	}
	s.waiters[orderLinkID] = append(s.waiters[orderLinkID], ch)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		list := s.waiters[orderLinkID]
		for i, w := range list {
			if w == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.waiters, orderLinkID)
		} else {
			s.waiters[orderLinkID] = list
		}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case o := <-ch:
			if accept(o) {
				return o, true, rejected
			}
			continue
		case <-t.C:
		case <-ctx.Done():
		case <-s.ctx.Done():
		}
		return messages.Order{}, false, rejected
	}
}

// noteOrders records order pushes for WaitOrder.
func (s *Stream) noteOrders(list []messages.Order) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range list {
		if o.OrderLinkID == "" {
			continue
		}
		if _, ok := s.recent[o.OrderLinkID]; !ok {
			s.order = append(s.order, o.OrderLinkID)
			if len(s.order) > recentOrders {
				delete(s.recent, s.order[0])
				s.order = s.order[1:]
			}
		}
		s.recent[o.OrderLinkID] = o
		for _, w := range s.waiters[o.OrderLinkID] {
			select {
			case w <- o:
			default:
			}
		}
	}
}

// run connects, reads until the connection fails, and reconnects with
// backoff until Close.
func (s *Stream) run() {
	defer s.wg.Done()
	attempt := 0
	connectedOnce := false
	for s.ctx.Err() == nil {
		conn, reason, untrusted := s.connect()
		if conn == nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Warn("venue stream: connect failed", slog.String("reason", reason), slog.Int("attempt", attempt))
			s.deliver(messages.StreamEvent{Kind: messages.StreamDisconnected, At: time.Now().UTC(), Reason: reason, UntrustedText: untrusted})
			if !sleepUnlessDone(s.ctx, s.backoff(attempt)) {
				return
			}
			attempt++
			continue
		}
		attempt = 0
		kind := messages.StreamConnected
		if connectedOnce {
			kind = messages.StreamReconnected
		}
		connectedOnce = true
		s.log.Info("venue stream: connected", slog.String("event", string(kind)))
		s.deliver(messages.StreamEvent{Kind: kind, At: time.Now().UTC()})
		reason = s.serve(conn)
		if s.ctx.Err() != nil {
			return
		}
		s.log.Warn("venue stream: disconnected", slog.String("reason", reason))
		s.deliver(messages.StreamEvent{Kind: messages.StreamDisconnected, At: time.Now().UTC(), Reason: reason})
		if !sleepUnlessDone(s.ctx, s.backoff(0)) {
			return
		}
		attempt = 1
	}
}

// sleepUnlessDone waits d or until ctx is done (a stream's Close); false
// means done. Both streams wait between their connections with it.
func sleepUnlessDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connect dials, authenticates and subscribes. On failure it returns a
// nil conn, our reason and the exchange's text (untrusted).
func (s *Stream) connect() (*websocket.Conn, string, string) {
	conn, resp, err := s.dialer.DialContext(s.ctx, s.url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, "dial_refused_http_" + strconv.Itoa(resp.StatusCode), ""
		}
		return nil, "dial_failed", ""
	}
	conn.SetReadLimit(streamReadLimit)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = conn.Close()
		return nil, "closed", ""
	}
	s.conn = conn
	s.mu.Unlock()
	fail := func(reason, text string) (*websocket.Conn, string, string) {
		s.dropConn(conn)
		return nil, reason, sanitizeRetMsg(text, s.apiKey, s.secret)
	}
	expires := s.now().Add(authExpiry).UnixMilli()
	sig := Sign(s.secret, "GET/realtime"+strconv.FormatInt(expires, 10))
	auth := fmt.Sprintf(`{"req_id":"auth","op":"auth","args":[%s,%d,%s]}`, mustQuote(s.apiKey), expires, mustQuote(sig))
	if err := s.writeText(conn, []byte(auth)); err != nil {
		return fail("auth_send_failed", "")
	}
	if ok, text, reason := s.awaitAck(conn, "auth"); !ok {
		if reason == "" {
			reason = "auth_refused"
		}
		return fail(reason, text)
	}
	topics, _ := json.Marshal(PrivateTopics)
	if err := s.writeText(conn, []byte(`{"req_id":"sub","op":"subscribe","args":`+string(topics)+`}`)); err != nil {
		return fail("subscribe_send_failed", "")
	}
	if ok, text, reason := s.awaitAck(conn, "subscribe"); !ok {
		if reason == "" {
			reason = "subscribe_refused"
		}
		return fail(reason, text)
	}
	return conn, "", ""
}

func mustQuote(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// awaitAck reads until the ack of op arrives (within the read timeout).
// It returns success, the exchange's ret_msg and, when no ack came, our
// reason.
func (s *Stream) awaitAck(conn *websocket.Conn, op string) (bool, string, string) {
	deadline := time.Now().Add(s.readTO)
	for {
		_ = conn.SetReadDeadline(deadline)
		_, data, err := conn.ReadMessage()
		if err != nil {
			return false, "", readFailure(err) + "_before_" + op + "_ack"
		}
		var m wireStreamMsg
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.Op == op {
			return m.Success, m.RetMsg, ""
		}
	}
}

// writeText sends one text frame. Only one goroutine writes at a time.
func (s *Stream) writeText(conn *websocket.Conn, b []byte) error {
	return writeTextFrame(&s.wmu, conn, b)
}

// writeTextFrame sends one text frame on conn under mu, the stream's
// write lock (gorilla/websocket allows one writer at a time), within
// streamWriteTimeout. Both streams write with it.
func writeTextFrame(mu *sync.Mutex, conn *websocket.Conn, b []byte) error {
	mu.Lock()
	defer mu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return conn.WriteMessage(websocket.TextMessage, b)
}

// dropConn closes conn and forgets it.
func (s *Stream) dropConn(conn *websocket.Conn) {
	dropStreamConn(&s.mu, &s.conn, conn, nil)
}

// dropStreamConn closes conn and, under mu, forgets it when it is still
// the stream's current connection (*cur), calling forget (nil: none)
// then, under mu too. Both streams drop a connection with it.
func dropStreamConn(mu *sync.Mutex, cur **websocket.Conn, conn *websocket.Conn, forget func()) {
	mu.Lock()
	if *cur == conn {
		*cur = nil
		if forget != nil {
			forget()
		}
	}
	mu.Unlock()
	_ = conn.Close()
}

// serve reads conn until it fails, pinging meanwhile, and returns why it
// ended.
func (s *Stream) serve(conn *websocket.Conn) string {
	ping := func(n int) error {
		return s.writeText(conn, []byte(`{"req_id":"p`+strconv.Itoa(n)+`","op":"ping"}`))
	}
	// A gap owed to a consumer that has since made room goes out without
	// waiting for the next message.
	flushGap := func() {
		s.dmu.Lock()
		s.flushGapLocked()
		s.dmu.Unlock()
	}
	return serveStreamConn(conn, s.ping, ping, gapRetry, flushGap, s.readLoop, s.dropConn)
}

// serveStreamConn reads conn with read until a read fails, while a
// goroutine sends ping(n) (n = 1, 2, ...) every pingEvery and calls tick
// (nil: none) every tickEvery. A ping that cannot be sent closes conn, so
// read ends and the stream reconnects. Then it stops the goroutine, drops
// conn with drop and returns read's reason. Both streams serve a
// connection with it.
func serveStreamConn(conn *websocket.Conn, pingEvery time.Duration, ping func(n int) error, tickEvery time.Duration, tick func(),
	read func(*websocket.Conn) string, drop func(*websocket.Conn)) string {
	stop := make(chan struct{})
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		var ticks <-chan time.Time
		if tick != nil {
			g := time.NewTicker(tickEvery)
			defer g.Stop()
			ticks = g.C
		}
		n := 0
		for {
			select {
			case <-stop:
				return
			case <-ticks:
				tick()
			case <-t.C:
				n++
				if err := ping(n); err != nil {
					_ = conn.Close() // the reader sees it and reconnects
					return
				}
			}
		}
	}()
	reason := read(conn)
	close(stop)
	drop(conn)
	<-pingDone
	return reason
}

// readLoop delivers pushes until a read fails. Every message (push or
// pong) moves the read deadline; a silent connection times out.
func (s *Stream) readLoop(conn *websocket.Conn) string {
	for {
		_ = conn.SetReadDeadline(time.Now().Add(s.readTO))
		_, data, err := conn.ReadMessage()
		if err != nil {
			if s.ctx.Err() != nil {
				return "closed"
			}
			return readFailure(err)
		}
		s.lastRead.Store(time.Now().UnixNano())
		var m wireStreamMsg
		if err := json.Unmarshal(data, &m); err != nil {
			s.markGap("malformed_push")
			s.log.Warn("venue stream: undecodable message dropped")
			continue
		}
		if m.Topic == "" {
			continue // pong or late ack
		}
		ev, err := decodePush(&m)
		if err != nil {
			s.markGap("malformed_push")
			s.log.Warn("venue stream: push dropped", slog.String("topic", safeTopic(m.Topic)), slog.String("err", err.Error()))
			continue
		}
		if ev == nil {
			continue // a topic we did not ask for
		}
		s.lastPush.Store(time.Now().UnixNano())
		if ev.Kind == messages.StreamOrders {
			s.noteOrders(ev.Orders)
		}
		s.deliver(*ev)
	}
}

// readFailure names why a read failed.
func readFailure(err error) string {
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "read_timeout"
	case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway):
		return "closed_by_venue"
	default:
		return "connection_lost"
	}
}

// deliver hands ev to the consumer without blocking. When the buffer is
// full the event is dropped and a gap is owed; the gap goes out before
// any later event, as soon as there is room.
func (s *Stream) deliver(ev messages.StreamEvent) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.flushGapLocked()
	if s.gapPending {
		s.dropped++
		return
	}
	select {
	case s.events <- ev:
	default:
		s.gapPending, s.gapReason = true, "buffer_full"
		s.dropped++
		s.log.Warn("venue stream: consumer too slow, events dropped")
	}
}

// markGap owes the consumer a gap event (an update was lost).
func (s *Stream) markGap(reason string) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if !s.gapPending {
		s.gapReason = reason
	}
	s.gapPending = true
	s.dropped++
	s.flushGapLocked()
}

// flushGapLocked sends an owed gap event if there is room.
func (s *Stream) flushGapLocked() {
	if !s.gapPending {
		return
	}
	select {
	case s.events <- messages.StreamEvent{Kind: messages.StreamGap, At: time.Now().UTC(), Reason: s.gapReason, Dropped: s.dropped}:
		s.gapPending = false
		s.dropped = 0
	default:
	}
}

// safeTopic keeps a topic name printable and short for a log line.
func safeTopic(t string) string {
	if len(t) > 40 {
		t = t[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, t)
}

// wireStreamMsg is any private stream message: an ack, a pong or a push.
type wireStreamMsg struct {
	Op           string          `json:"op"`
	Success      bool            `json:"success"`
	RetMsg       string          `json:"ret_msg"`
	Topic        string          `json:"topic"`
	CreationTime flexNum         `json:"creationTime"`
	Data         json.RawMessage `json:"data"`
}

// wireStreamOrder is an order push row: the REST order plus category.
type wireStreamOrder struct {
	wireOrder
	Category string `json:"category"`
}

type wireStreamExecution struct {
	wireExecution
	Category string `json:"category"`
}

// wireStreamPosition is a position push row: entryPrice, not avgPrice.
type wireStreamPosition struct {
	wirePosition
	EntryPrice flexNum `json:"entryPrice"`
	Category   string  `json:"category"`
}

// streamCategory maps a row's category. The all-category topics also push
// inverse and option rows, which this server does not trade: they are
// skipped (ok false). Anything else is an error.
func streamCategory(s string) (cat messages.Category, ok bool, err error) {
	switch c := messages.Category(s); {
	case c.Valid():
		return c, true, nil
	case s == "inverse" || s == "option":
		return "", false, nil
	default:
		return "", false, errors.New("field category: not spot, linear, inverse or option")
	}
}

// decodePush decodes a push strictly: every row must parse, or the whole
// push is refused (and a gap is reported). A topic outside the four, and
// a push holding only inverse or option rows, is ignored (nil, nil).
func decodePush(m *wireStreamMsg) (*messages.StreamEvent, error) {
	base, _, _ := strings.Cut(m.Topic, ".")
	var d fieldDecoder
	at := d.ms("creationTime", m.CreationTime)
	if d.err != nil {
		return nil, d.err
	}
	ev := &messages.StreamEvent{At: at}
	switch base {
	case "order":
		var rows []wireStreamOrder
		if err := json.Unmarshal(m.Data, &rows); err != nil {
			return nil, errors.New("order: data is not a list of orders")
		}
		ev.Kind = messages.StreamOrders
		for i := range rows {
			cat, ok, err := streamCategory(rows[i].Category)
			if err != nil {
				return nil, fmt.Errorf("order %d: %w", i, err)
			}
			if !ok {
				continue
			}
			o, err := parseOrder(cat, &rows[i].wireOrder)
			if err != nil {
				return nil, fmt.Errorf("order %d: %w", i, err)
			}
			ev.Orders = append(ev.Orders, o)
		}
	case "execution":
		if m.Topic == "execution.fast" || strings.HasPrefix(m.Topic, "execution.fast.") {
			return nil, nil
		}
		var rows []wireStreamExecution
		if err := json.Unmarshal(m.Data, &rows); err != nil {
			return nil, errors.New("execution: data is not a list of executions")
		}
		ev.Kind = messages.StreamExecutions
		for i := range rows {
			cat, ok, err := streamCategory(rows[i].Category)
			if err != nil {
				return nil, fmt.Errorf("execution %d: %w", i, err)
			}
			if !ok {
				continue
			}
			e, err := parseExecution(cat, &rows[i].wireExecution)
			if err != nil {
				return nil, fmt.Errorf("execution %d: %w", i, err)
			}
			ev.Executions = append(ev.Executions, e)
		}
	case "position":
		var rows []wireStreamPosition
		if err := json.Unmarshal(m.Data, &rows); err != nil {
			return nil, errors.New("position: data is not a list of positions")
		}
		ev.Kind = messages.StreamPositions
		for i := range rows {
			cat, ok, err := streamCategory(rows[i].Category)
			if err != nil {
				return nil, fmt.Errorf("position %d: %w", i, err)
			}
			if !ok {
				continue
			}
			rows[i].AvgPrice = rows[i].EntryPrice
			p, err := parsePosition(cat, &rows[i].wirePosition)
			if err != nil {
				return nil, fmt.Errorf("position %d: %w", i, err)
			}
			ev.Positions = append(ev.Positions, p)
		}
	case "wallet":
		var rows []wireWalletAccount
		if err := json.Unmarshal(m.Data, &rows); err != nil {
			return nil, errors.New("wallet: data is not a list of accounts")
		}
		ev.Kind = messages.StreamWalletEvent
		for i := range rows {
			if rows[i].AccountType != "UNIFIED" {
				continue
			}
			wb, err := parseWallet(&rows[i])
			if err != nil {
				return nil, fmt.Errorf("wallet %d: %w", i, err)
			}
			ev.Wallet = wb
		}
		if ev.Wallet == nil {
			return nil, errors.New("wallet: no UNIFIED account")
		}
	default:
		return nil, nil
	}
	if len(ev.Orders)+len(ev.Executions)+len(ev.Positions) == 0 && ev.Wallet == nil {
		return nil, nil // only rows of categories this server does not trade
	}
	return ev, nil
}
