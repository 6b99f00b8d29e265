package sim

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Public stream topics (docs/bybit.md "Public streams"), pushed on subscribe and then every
// pushInterval by the connection's pusher:
//
//   - tickers.{symbol}: on spot a snapshot each time; on linear a snapshot
//     after the ack, then a delta carrying the symbol and only the fields
//     that changed, nothing when none did (ws.go), as Bybit sends them.
//   - kline.{interval}.{symbol}: the open candle (ws_kline.go).
//   - orderbook.{depth}.{symbol}: a snapshot right after the ack, then a
//     delta whenever the book's second has moved on: changed or new levels
//     carry their size, vanished levels size "0", so a client applying the
//     deltas holds exactly the simulator's book. u is the book's update id
//     (one per second of the price model, the same as GET
//     /v5/market/orderbook) and seq its cross sequence. Depth 1 is
//     snapshot-only, as on Bybit.
//   - publicTrade.{symbol}: the market's trades (trades.go) that happened
//     since the previous push, oldest first; nothing is sent on subscribe
//     and nothing when there was no trade.
//   - priceLimit.{symbol}: the price band of GET /v5/market/price-limit,
//     {symbol, buyLmt, sellLmt}, on every push whether or not it moved
//     (Bybit pushes it every 300 ms).
//
// Every message is a function of (seed, instrument, clock), so the same
// seed and clock give the same stream.

// bookDepths are the orderbook depths each public stream serves. 500 is the
// older linear depth some clients still ask for.
var bookDepths = map[streamKind]map[int]bool{
	streamPublicLinear: {1: true, 50: true, 200: true, 500: true, 1000: true},
	streamPublicSpot:   {1: true, 50: true, 200: true, 1000: true},
}

// publicState is what a public connection remembers between pushes;
// guarded by wsConn.mu.
type publicState struct {
	books   map[string]*sentBook         // by orderbook topic
	trades  map[string]int64             // by publicTrade topic: time (ms) pushed up to
	klines  map[string]int64             // by kline topic: start (ms) of the candle last pushed
	tickers map[string]map[string]string // by linear tickers topic: the fields the client holds
}

// sentBook is the book a client holds after the last push of a topic.
type sentBook struct {
	sec        int64
	bids, asks map[string]string // price text -> size text
}

func (p *publicState) forget(topic string) {
	delete(p.books, topic)
	delete(p.trades, topic)
	delete(p.klines, topic)
	delete(p.tickers, topic)
}

// parseBookTopic splits "orderbook.{depth}.{symbol}".
func parseBookTopic(topic string) (depth int, symbol string, ok bool) {
	rest, found := strings.CutPrefix(topic, "orderbook.")
	if !found {
		return 0, "", false
	}
	d, sym, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	n, err := strconv.Atoi(d)
	if err != nil {
		return 0, "", false
	}
	return n, sym, true
}

// checkPublicTopic judges a topic of the families the simulator streams.
// known is false for any other topic; msg is "" when the topic is accepted.
func (c *wsConn) checkPublicTopic(topic string) (msg string, known bool) {
	cat := c.kind.category()
	invalid := "Invalid symbol :[" + topic + "]"
	switch {
	case strings.HasPrefix(topic, "tickers."):
		if c.s.catalog.get(cat, strings.TrimPrefix(topic, "tickers.")) == nil {
			return invalid, true
		}
		return "", true
	case strings.HasPrefix(topic, "publicTrade."):
		if c.s.catalog.get(cat, strings.TrimPrefix(topic, "publicTrade.")) == nil {
			return invalid, true
		}
		return "", true
	case strings.HasPrefix(topic, "priceLimit."):
		if c.s.catalog.get(cat, strings.TrimPrefix(topic, "priceLimit.")) == nil {
			return invalid, true
		}
		return "", true
	case strings.HasPrefix(topic, "kline."):
		return c.checkKlineTopic(topic), true
	case strings.HasPrefix(topic, "orderbook."):
		depth, sym, ok := parseBookTopic(topic)
		if !ok || !bookDepths[c.kind][depth] {
			return "error:handler not found,topic:" + topic, true
		}
		if c.s.catalog.get(cat, sym) == nil {
			return invalid, true
		}
		return "", true
	}
	return "", false
}

// pushPublicLocked sends what each of topics has to say at now. c.mu must
// be held, which orders pushes against subscribe and unsubscribe acks.
func (c *wsConn) pushPublicLocked(topics []string, now time.Time) {
	c.pushTickersLocked(topics)
	for _, t := range topics {
		switch {
		case strings.HasPrefix(t, "orderbook."):
			c.pushBookLocked(t, now)
		case strings.HasPrefix(t, "publicTrade."):
			c.pushTradesLocked(t, now)
		case strings.HasPrefix(t, "kline."):
			c.pushKlineLocked(t, now)
		case strings.HasPrefix(t, "priceLimit."):
			c.pushPriceLimitLocked(t, now)
		}
	}
}

// wsPriceLimitMsg is a priceLimit push: data is a list of one row.
type wsPriceLimitMsg struct {
	Topic string             `json:"topic"`
	Ts    int64              `json:"ts"`
	Data  []wsPriceLimitJSON `json:"data"`
}

type wsPriceLimitJSON struct {
	Symbol  string `json:"symbol"`
	BuyLmt  string `json:"buyLmt"`
	SellLmt string `json:"sellLmt"`
}

// pushPriceLimitLocked sends the symbol's band as GET
// /v5/market/price-limit would answer it now.
func (c *wsConn) pushPriceLimitLocked(topic string, now time.Time) {
	in := c.s.catalog.get(c.kind.category(), strings.TrimPrefix(topic, "priceLimit."))
	if in == nil {
		return
	}
	buy, sell := c.s.priceLimits(in, floorDiv(now.UnixMilli(), 1000))
	c.enqueueJSON(wsPriceLimitMsg{Topic: topic, Ts: now.UnixMilli(), Data: []wsPriceLimitJSON{{
		Symbol: in.symbol, BuyLmt: fixed(buy, in.priceScale), SellLmt: fixed(sell, in.priceScale)}}})
}

// wsBookMsg is an orderbook push.
type wsBookMsg struct {
	Topic string     `json:"topic"`
	Type  string     `json:"type"`
	Ts    int64      `json:"ts"`
	Data  wsBookData `json:"data"`
	Cts   int64      `json:"cts"`
}

type wsBookData struct {
	S   string      `json:"s"`
	B   [][2]string `json:"b"`
	A   [][2]string `json:"a"`
	U   int64       `json:"u"`
	Seq int64       `json:"seq"`
}

func (c *wsConn) pushBookLocked(topic string, now time.Time) {
	depth, sym, _ := parseBookTopic(topic)
	in := c.s.catalog.get(c.kind.category(), sym)
	if in == nil {
		return
	}
	nowMs := now.UnixMilli()
	sec := floorDiv(nowMs, 1000)
	prev := c.pub.books[topic]
	if prev != nil && prev.sec == sec {
		return // the model's book changes once per second
	}
	bids, asks := c.s.model.book(in, sec, depth)
	cur := &sentBook{sec: sec, bids: levelMap(in, bids), asks: levelMap(in, asks)}
	msg := wsBookMsg{Topic: topic, Ts: nowMs, Data: wsBookData{S: in.symbol}}
	msg.Data.U, msg.Data.Seq, msg.Cts = c.s.bookIDs(in, sec, nowMs)
	if prev == nil || depth == 1 {
		msg.Type = "snapshot"
		msg.Data.B = levelRows(in, bids)
		msg.Data.A = levelRows(in, asks)
	} else {
		msg.Type = "delta"
		msg.Data.B = bookDiff(prev.bids, cur.bids, true)
		msg.Data.A = bookDiff(prev.asks, cur.asks, false)
	}
	if c.pub.books == nil {
		c.pub.books = make(map[string]*sentBook)
	}
	c.pub.books[topic] = cur
	c.enqueueJSON(msg)
}

func levelMap(in *instrument, levels []level) map[string]string {
	m := make(map[string]string, len(levels))
	for _, l := range levels {
		m[fixed(l.price, in.priceScale)] = fixed(l.size, in.qtyScale)
	}
	return m
}

func levelRows(in *instrument, levels []level) [][2]string {
	rows := make([][2]string, len(levels))
	for i, l := range levels {
		rows[i] = [2]string{fixed(l.price, in.priceScale), fixed(l.size, in.qtyScale)}
	}
	return rows
}

// bookDiff lists the levels that turn side old into side cur: new or
// resized levels with their size, vanished ones with "0"; bids descending,
// asks ascending.
func bookDiff(old, cur map[string]string, desc bool) [][2]string {
	type row struct {
		price decimal.Decimal
		text  [2]string
	}
	var rows []row
	for p, sz := range cur {
		if was, ok := old[p]; !ok || was != sz {
			rows = append(rows, row{decimal.RequireFromString(p), [2]string{p, sz}})
		}
	}
	for p := range old {
		if _, ok := cur[p]; !ok {
			rows = append(rows, row{decimal.RequireFromString(p), [2]string{p, "0"}})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if desc {
			return rows[i].price.GreaterThan(rows[j].price)
		}
		return rows[i].price.LessThan(rows[j].price)
	})
	out := make([][2]string, len(rows))
	for i, r := range rows {
		out[i] = r.text
	}
	return out
}

// wsTradeMsg is a publicTrade push.
type wsTradeMsg struct {
	Topic string        `json:"topic"`
	Type  string        `json:"type"`
	Ts    int64         `json:"ts"`
	Data  []wsTradeJSON `json:"data"`
}

type wsTradeJSON struct {
	T   int64  `json:"T"`
	S   string `json:"s"`
	Sd  string `json:"S"`
	V   string `json:"v"`
	P   string `json:"p"`
	L   string `json:"L"`
	I   string `json:"i"`
	BT  bool   `json:"BT"`
	RPI bool   `json:"RPI"`
	Seq int64  `json:"seq"`
}

func (c *wsConn) pushTradesLocked(topic string, now time.Time) {
	in := c.s.catalog.get(c.kind.category(), strings.TrimPrefix(topic, "publicTrade."))
	if in == nil {
		return
	}
	nowMs := now.UnixMilli()
	from, seen := c.pub.trades[topic]
	if c.pub.trades == nil {
		c.pub.trades = make(map[string]int64)
	}
	c.pub.trades[topic] = nowMs
	if !seen {
		return // only trades after the subscription
	}
	if lo := nowMs - maxTradeLookback*1000; from < lo {
		from = lo // a clock jump: send the last hour at most
	}
	ts := c.s.tradesBetween(in, from, nowMs)
	if len(ts) == 0 {
		return
	}
	msg := wsTradeMsg{Topic: topic, Type: "snapshot", Ts: nowMs, Data: make([]wsTradeJSON, len(ts))}
	for i, t := range ts {
		msg.Data[i] = wsTradeJSON{
			T: t.ms, S: in.symbol, Sd: t.side,
			V: fixed(t.size, in.qtyScale), P: fixed(t.price, in.priceScale),
			L: t.tick, I: t.id, Seq: t.seq,
		}
	}
	c.enqueueJSON(msg)
}
