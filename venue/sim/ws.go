package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// WebSocket streams (docs/bybit.md "Private stream", "Public streams").
//
// Public /v5/public/linear and /v5/public/spot: subscribe/unsubscribe to
// tickers.{symbol}, orderbook.{depth}.{symbol}, publicTrade.{symbol} and
// priceLimit.{symbol}
// (ws_public.go); what each topic has is pushed right after the ack and
// then every pushInterval (1 s); ping answers the public pong shape of the
// category. A subscribe judges each topic on its own: the good ones are
// subscribed even when others are refused, and the ack names only the
// refused ones.
//
// Private /v5/private: auth with ["apiKey", expires, hex HMAC of
// "GET/realtime"+expires], expires a ms timestamp in the future;
// subscribe/unsubscribe to order, execution, position, wallet (and their
// categorised variants, greeks, execution.fast, dcp.*) after auth; ping
// answers the private pong. The connection is cut when the client sends
// nothing for max_active_time (query parameter, 30s..600s, default 10 m).
//
// Every connection has one reader (the handler goroutine, read limit
// wsReadLimit) and one writer goroutine fed by a channel, so gorilla's
// one-writer rule holds; public connections add one pusher goroutine. All
// end when the connection ends. Outgoing messages pass the ws_delay and
// ws_disconnect faults.

type streamKind int

const (
	streamPublicLinear streamKind = iota + 1
	streamPublicSpot
	streamPrivate
)

func (k streamKind) path() string {
	switch k {
	case streamPublicLinear:
		return pathWSPublicLinear
	case streamPublicSpot:
		return pathWSPublicSpot
	default:
		return pathWSPrivate
	}
}

func (k streamKind) category() string {
	if k == streamPublicSpot {
		return catSpot
	}
	return catLinear
}

const (
	wsReadLimit     = 64 << 10
	wsSendBuffer    = 256
	wsWriteTimeout  = 10 * time.Second
	wsDefaultIdle   = 10 * time.Minute
	wsMinIdle       = 30 * time.Second
	wsMaxIdle       = 10 * time.Minute
	spotMaxArgs     = 10
	wsOpSubscribe   = "subscribe"
	wsOpUnsubscribe = "unsubscribe"
)

var upgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}

// A wsConn is one WebSocket connection.
type wsConn struct {
	// Fixed at construction.
	s    *Sim
	kind streamKind
	id   string
	conn *websocket.Conn
	idle time.Duration // private: cut after this long without a client message
	send chan []byte
	done chan struct{}
	once sync.Once

	mu sync.Mutex
	// Guarded by mu.
	subs []string // subscribed topics, in subscription order
	key  *apiKey  // private: set by a successful auth
	pub  publicState
}

func (s *Sim) serveWS(w http.ResponseWriter, r *http.Request, kind streamKind) {
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "400 Bad Request: WebSocket upgrade required", http.StatusBadRequest)
		return
	}
	idle := wsDefaultIdle
	if kind == streamPrivate {
		if v := r.URL.Query().Get("max_active_time"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < wsMinIdle || d > wsMaxIdle {
				http.Error(w, "400 Bad Request: max_active_time must be 30s..600s", http.StatusBadRequest)
				return
			}
			idle = d
		}
	}
	select {
	case <-s.closed:
		http.Error(w, "503 Service Unavailable", http.StatusServiceUnavailable)
		return
	default:
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	c := &wsConn{s: s, kind: kind, conn: conn, idle: idle, send: make(chan []byte, wsSendBuffer), done: make(chan struct{})}
	c.id = s.connID(kind, s.nextConnSeq())
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	select {
	case <-s.closed: // shutdown ran while we upgraded and did not see c
		c.kill()
	default:
	}
	s.log.Debug("sim: ws connected", "path", kind.path(), "conn_id", c.id)

	go c.writeLoop()
	if kind != streamPrivate {
		go c.pushLoop()
	}
	c.readLoop()
	c.kill()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.log.Debug("sim: ws closed", "conn_id", c.id)
}

func (s *Sim) nextConnSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.connSeq
	s.connSeq++
	return n
}

// connID makes a connection id in the style of the stream: private ids look
// like "cejreaspqfh3sjdnldmg-p", public ones like UUIDs.
func (s *Sim) connID(kind streamKind, n uint64) string {
	const lower = "abcdefghijklmnopqrstuvwxyz0123456789"
	if kind == streamPrivate {
		return s.randString(20, lower, s.idWords(tagConn, n)...) + "-" + strconv.FormatUint(n, 36)
	}
	const hexd = "0123456789abcdef"
	h := s.randString(32, hexd, s.idWords(tagConn, n)...)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// kill ends the connection abruptly (no close frame) and stops its
// goroutines. Safe to call many times from anywhere.
func (c *wsConn) kill() {
	c.once.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

// enqueue hands a message to the writer. A client too slow to drain
// wsSendBuffer messages is disconnected.
func (c *wsConn) enqueue(msg []byte) {
	select {
	case <-c.done:
		return
	default:
	}
	select {
	case c.send <- msg:
	case <-c.done:
	default:
		c.s.log.Warn("sim: ws client too slow, disconnecting", "conn_id", c.id)
		c.kill()
	}
}

func (c *wsConn) enqueueJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.Error("sim: ws encode", "err", err)
		return
	}
	c.enqueue(b)
}

// writeLoop is the connection's only writer.
func (c *wsConn) writeLoop() {
	for {
		select {
		case <-c.done:
			return
		case msg := <-c.send:
			c.s.mu.Lock()
			plan := c.s.faults.planLocked(c.kind.path(), true)
			c.s.mu.Unlock()
			if plan.wsDisconnect {
				c.s.log.Debug("sim: fault ws_disconnect", "conn_id", c.id)
				c.kill()
				return
			}
			if plan.delay > 0 {
				t := time.NewTimer(plan.delay)
				select {
				case <-t.C:
				case <-c.done:
					t.Stop()
					return
				}
			}
			_ = c.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				c.kill()
				return
			}
		}
	}
}

// readLoop reads until the connection fails; control frames are answered
// inside ReadMessage.
func (c *wsConn) readLoop() {
	c.conn.SetReadLimit(wsReadLimit)
	for {
		if c.kind == streamPrivate {
			_ = c.conn.SetReadDeadline(time.Now().Add(c.idle))
		}
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		c.handle(data)
	}
}

// wsRequest is a client operation.
type wsRequest struct {
	ReqID json.RawMessage   `json:"req_id"`
	Op    string            `json:"op"`
	Args  []json.RawMessage `json:"args"`
}

// reqID returns the request id as text and whether one was sent.
func (r *wsRequest) reqID() (string, bool) {
	if len(r.ReqID) == 0 || string(r.ReqID) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(r.ReqID, &s) == nil {
		return s, true
	}
	return string(r.ReqID), true
}

// stringArgs returns the args as strings, or false if one is not a string.
func (r *wsRequest) stringArgs() ([]string, bool) {
	out := make([]string, 0, len(r.Args))
	for _, a := range r.Args {
		var s string
		if json.Unmarshal(a, &s) != nil {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// publicReply is the public ack/pong shape; req_id is always present on
// linear and only when sent on spot.
type publicReply struct {
	Success bool    `json:"success"`
	RetMsg  string  `json:"ret_msg"`
	ConnID  string  `json:"conn_id"`
	ReqID   *string `json:"req_id,omitempty"`
	Op      string  `json:"op"`
}

// privateReply is the private ack shape.
type privateReply struct {
	Success bool    `json:"success"`
	RetMsg  string  `json:"ret_msg"`
	Op      string  `json:"op"`
	ConnID  string  `json:"conn_id"`
	ReqID   *string `json:"req_id,omitempty"`
}

// privatePong is the private pong shape.
type privatePong struct {
	ReqID  *string  `json:"req_id,omitempty"`
	Op     string   `json:"op"`
	Args   []string `json:"args"`
	ConnID string   `json:"conn_id"`
}

// reply sends an ack in the connection's shape.
func (c *wsConn) reply(req *wsRequest, op string, success bool, msg string) {
	id, sent := req.reqID()
	var idp *string
	if sent || c.kind == streamPublicLinear {
		idp = &id
	}
	if c.kind == streamPrivate {
		c.enqueueJSON(privateReply{Success: success, RetMsg: msg, Op: op, ConnID: c.id, ReqID: idp})
		return
	}
	c.enqueueJSON(publicReply{Success: success, RetMsg: msg, ConnID: c.id, ReqID: idp, Op: op})
}

func (c *wsConn) handle(data []byte) {
	var req wsRequest
	if err := json.Unmarshal(data, &req); err != nil {
		c.reply(&wsRequest{}, "", false, "error:request must be a JSON object")
		return
	}
	switch req.Op {
	case "ping":
		if c.kind == streamPrivate {
			id, sent := req.reqID()
			var idp *string
			if sent {
				idp = &id
			}
			c.enqueueJSON(privatePong{ReqID: idp, Op: "pong", Args: []string{itoa(c.s.now().UnixMilli())}, ConnID: c.id})
			return
		}
		c.reply(&req, "ping", true, "pong")
	case wsOpSubscribe, wsOpUnsubscribe:
		c.subscribe(&req)
	case "auth":
		if c.kind != streamPrivate {
			c.reply(&req, "auth", false, "error:auth is for the private stream")
			return
		}
		c.auth(&req)
	default:
		c.reply(&req, req.Op, false, "error:unknown op "+strconv.Quote(req.Op))
	}
}

// auth handles op "auth" on the private stream. The ret_msg of a refusal is
// not contractual (docs/bybit.md "Open questions"): clients must treat success:false as
// failure.
func (c *wsConn) auth(req *wsRequest) {
	c.mu.Lock()
	already := c.key != nil
	c.mu.Unlock()
	if already {
		c.reply(req, "auth", false, "Repeat auth")
		return
	}
	if len(req.Args) != 3 {
		c.reply(req, "auth", false, "Params Error")
		return
	}
	var apiKeyV, sig string
	if json.Unmarshal(req.Args[0], &apiKeyV) != nil || json.Unmarshal(req.Args[2], &sig) != nil {
		c.reply(req, "auth", false, "Params Error")
		return
	}
	expires, okExp := parseExpires(req.Args[1])
	if !okExp {
		c.reply(req, "auth", false, "Params Error")
		return
	}
	key := c.s.lookupKey(apiKeyV)
	if key == nil {
		c.reply(req, "auth", false, "API key is invalid.")
		return
	}
	// The client's clock does not follow POST /sim/clock; either clock
	// accepts an expiry still ahead of it.
	if now := c.s.now().UnixMilli(); expires <= now && expires <= c.s.clock().UnixMilli() {
		c.reply(req, "auth", false, "Params Error: expires "+itoa(expires)+" is not in the future (server time "+itoa(now)+")")
		return
	}
	want := sign(key.secret, wsAuthPayload(itoa(expires)))
	if sig != want {
		c.reply(req, "auth", false, "Signature verification failed")
		return
	}
	c.mu.Lock()
	c.key = key
	c.mu.Unlock()
	c.s.log.Debug("sim: ws auth", "conn_id", c.id, "key_id", key.id)
	c.reply(req, "auth", true, "")
}

// parseExpires reads expires as a JSON integer or a string of digits.
func parseExpires(raw json.RawMessage) (int64, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// privateTopics are the private topics accepted (docs/bybit.md "Private stream").
var privateTopics = map[string]bool{
	"order": true, "order.spot": true, "order.linear": true, "order.inverse": true, "order.option": true,
	"execution": true, "execution.spot": true, "execution.linear": true, "execution.inverse": true, "execution.option": true,
	"execution.fast": true, "execution.fast.linear": true, "execution.fast.inverse": true, "execution.fast.spot": true, "execution.fast.option": true,
	"position": true, "position.linear": true, "position.inverse": true, "position.option": true,
	"wallet": true, "greeks": true,
	"dcp.future": true, "dcp.spot": true, "dcp.option": true,
}

// publicTopicPrefixes are public topic families Bybit has but the simulator
// does not stream.
var publicTopicPrefixes = []string{"priceLimit.", "liquidation.", "allLiquidation.", "kline_lt.", "tickers_lt.", "lt."}

// topicFamily is the all-in-one name of a private topic ("order.linear" ->
// "order", "execution.fast.spot" -> "execution.fast").
func topicFamily(t string) string {
	if strings.HasPrefix(t, "execution.fast") {
		return "execution.fast"
	}
	if i := strings.IndexByte(t, '.'); i >= 0 && !strings.HasPrefix(t, "dcp.") {
		return t[:i]
	}
	return t
}

// checkTopic returns "" if topic may be subscribed on this connection, or
// the refusal text.
func (c *wsConn) checkTopic(topic string) string {
	if c.kind == streamPrivate {
		if !privateTopics[topic] {
			return "error:handler not found,topic:" + topic
		}
		return ""
	}
	if msg, known := c.checkPublicTopic(topic); known {
		return msg
	}
	for _, p := range publicTopicPrefixes {
		if strings.HasPrefix(topic, p) {
			return "error:topic not supported by the simulator,topic:" + topic
		}
	}
	return "error:handler not found,topic:" + topic
}

// subscribe handles subscribe and unsubscribe. Each topic of a subscribe
// is judged on its own: the good ones are subscribed (and their snapshots
// pushed right after the ack) even when others are refused; the ack then
// has success false and a ret_msg naming only the refused topics.
func (c *wsConn) subscribe(req *wsRequest) {
	topics, okArgs := req.stringArgs()
	if !okArgs || len(topics) == 0 {
		c.reply(req, req.Op, false, "error:args must be a non-empty list of topics")
		return
	}
	if c.kind == streamPublicSpot && len(topics) > spotMaxArgs {
		c.reply(req, req.Op, false, "error:args size >"+strconv.Itoa(spotMaxArgs))
		return
	}
	c.mu.Lock()
	authed := c.key != nil
	c.mu.Unlock()
	if c.kind == streamPrivate && !authed {
		c.reply(req, req.Op, false, "Request not authorized")
		return
	}
	okMsg := ""
	if c.kind == streamPublicSpot {
		okMsg = req.Op
	}

	// The ack is enqueued under c.mu, like every public push, so no push of
	// an unsubscribed topic follows its ack and none of a new topic
	// precedes it.
	if req.Op == wsOpUnsubscribe {
		c.mu.Lock()
		for _, t := range topics {
			c.subs = removeString(c.subs, t)
			c.pub.forget(t)
		}
		c.reply(req, req.Op, true, okMsg)
		c.mu.Unlock()
		return
	}

	var refusals []string
	var good []string
	families := map[string]string{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		if msg := c.checkTopic(t); msg != "" {
			refusals = append(refusals, msg)
			continue
		}
		if c.kind == streamPrivate {
			f := topicFamily(t)
			if prev, seen := families[f]; seen && (prev == f) != (t == f) {
				refusals = append(refusals, "error:all-in-one and categorised topics cannot be mixed,topic:"+t)
				continue
			}
			families[f] = t
		}
		if containsString(c.subs, t) || containsString(good, t) {
			refusals = append(refusals, "error:already subscribed,topic:"+t)
			continue
		}
		good = append(good, t)
	}
	c.subs = append(c.subs, good...)
	// The subscription's moment is read before the ack goes out: a client
	// that reads the ack and moves the clock must not move it under the
	// first push (publicTrade counts its trades from this moment).
	now := c.s.now()
	if len(refusals) > 0 {
		c.reply(req, req.Op, false, strings.Join(refusals, ";"))
	} else {
		c.reply(req, req.Op, true, okMsg)
	}
	if c.kind != streamPrivate {
		c.pushPublicLocked(good, now)
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// pushLoop pushes the subscribed public topics every pushInterval until
// the connection ends (ws_public.go).
func (c *wsConn) pushLoop() {
	t := time.NewTicker(c.s.pushInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.mu.Lock()
			c.pushPublicLocked(c.subs, c.s.now())
			c.mu.Unlock()
		}
	}
}

// wsTickerMsg is a public ticker push; data is an object.
type wsTickerMsg struct {
	Topic string `json:"topic"`
	Type  string `json:"type"`
	Data  any    `json:"data"`
	Cs    int64  `json:"cs"`
	Ts    int64  `json:"ts"`
}

type wsLinearTicker struct {
	Symbol            string `json:"symbol"`
	TickDirection     string `json:"tickDirection"`
	Price24hPcnt      string `json:"price24hPcnt"`
	LastPrice         string `json:"lastPrice"`
	PrevPrice24h      string `json:"prevPrice24h"`
	HighPrice24h      string `json:"highPrice24h"`
	LowPrice24h       string `json:"lowPrice24h"`
	PrevPrice1h       string `json:"prevPrice1h"`
	MarkPrice         string `json:"markPrice"`
	IndexPrice        string `json:"indexPrice"`
	OpenInterest      string `json:"openInterest"`
	OpenInterestValue string `json:"openInterestValue"`
	Turnover24h       string `json:"turnover24h"`
	Volume24h         string `json:"volume24h"`
	NextFundingTime   string `json:"nextFundingTime"`
	FundingRate       string `json:"fundingRate"`
	Bid1Price         string `json:"bid1Price"`
	Bid1Size          string `json:"bid1Size"`
	Ask1Price         string `json:"ask1Price"`
	Ask1Size          string `json:"ask1Size"`
}

type wsSpotTicker struct {
	Symbol        string `json:"symbol"`
	LastPrice     string `json:"lastPrice"`
	HighPrice24h  string `json:"highPrice24h"`
	LowPrice24h   string `json:"lowPrice24h"`
	PrevPrice24h  string `json:"prevPrice24h"`
	Volume24h     string `json:"volume24h"`
	Turnover24h   string `json:"turnover24h"`
	Price24hPcnt  string `json:"price24hPcnt"`
	USDIndexPrice string `json:"usdIndexPrice"`
}

// pushTickersLocked sends each tickers.* topic's news: a snapshot, or on
// linear after the first push a delta (publicState.tickerDelta). c.mu must
// be held, which orders pushes against subscribe and unsubscribe acks.
func (c *wsConn) pushTickersLocked(topics []string) {
	now := c.s.now()
	sec := floorDiv(now.UnixMilli(), 1000)
	for _, t := range topics {
		sym, ok := strings.CutPrefix(t, "tickers.")
		if !ok {
			continue
		}
		in := c.s.catalog.get(c.kind.category(), sym)
		if in == nil {
			continue
		}
		st := c.s.model.stats(in, now)
		_, cs, _ := c.s.bookIDs(in, sec, now.UnixMilli())
		var data any
		rest := in.tickerJSON(st)
		switch v := rest.(type) {
		case linearTickerJSON:
			data = wsLinearTicker{
				Symbol: v.Symbol, TickDirection: st.tickDirection, Price24hPcnt: v.Price24hPcnt,
				LastPrice: v.LastPrice, PrevPrice24h: v.PrevPrice24h, HighPrice24h: v.HighPrice24h,
				LowPrice24h: v.LowPrice24h, PrevPrice1h: v.PrevPrice1h, MarkPrice: v.MarkPrice,
				IndexPrice: v.IndexPrice, OpenInterest: v.OpenInterest, OpenInterestValue: v.OpenInterestValue,
				Turnover24h: v.Turnover24h, Volume24h: v.Volume24h, NextFundingTime: v.NextFundingTime,
				FundingRate: v.FundingRate, Bid1Price: v.Bid1Price, Bid1Size: v.Bid1Size,
				Ask1Price: v.Ask1Price, Ask1Size: v.Ask1Size,
			}
		case spotTickerJSON:
			data = wsSpotTicker{
				Symbol: v.Symbol, LastPrice: v.LastPrice, HighPrice24h: v.HighPrice24h,
				LowPrice24h: v.LowPrice24h, PrevPrice24h: v.PrevPrice24h, Volume24h: v.Volume24h,
				Turnover24h: v.Turnover24h, Price24hPcnt: v.Price24hPcnt, USDIndexPrice: v.USDIndexPrice,
			}
		}
		msg := wsTickerMsg{Topic: t, Type: "snapshot", Data: data, Cs: cs, Ts: now.UnixMilli()}
		if in.category == catLinear && !c.pub.tickerDelta(&msg) {
			continue
		}
		c.enqueueJSON(msg)
	}
}

// privatePush is the envelope of every private topic message.
type privatePush struct {
	ID           string `json:"id"`
	Topic        string `json:"topic"`
	CreationTime int64  `json:"creationTime"`
	Data         any    `json:"data"`
}

// deliverPrivate sends one queued message to every authenticated private
// connection among targets that belongs to its account and subscribed to
// its topic or to the category variant (topic + "." + category). The
// caller holds Sim.pushMu, not Sim.mu.
func (s *Sim) deliverPrivate(targets []*wsConn, m privateMsg) {
	var msg []byte
	for _, c := range targets {
		c.mu.Lock()
		key := c.key
		subs := append([]string(nil), c.subs...)
		c.mu.Unlock()
		if key == nil || key.acct != m.acct {
			continue
		}
		for _, t := range subs {
			if t != m.topic && (m.category == "" || t != m.topic+"."+m.category) {
				continue
			}
			p := m.payload
			p.Topic = t
			b, err := json.Marshal(p)
			if err != nil {
				s.log.Error("sim: ws encode", "err", err)
				return
			}
			msg = b
			c.enqueue(msg)
		}
	}
}
