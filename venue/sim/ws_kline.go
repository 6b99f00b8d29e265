package sim

import (
	"strings"
	"time"
)

// The kline.{interval}.{symbol} topic of the public streams (reference
// §10; docs/simulator.md): on subscribe a snapshot of the open candle, then
// on every push the open candle again (confirm false, as Bybit repeats it
// while it trades), preceded, when a candle has closed since the last
// push, by that candle's final state with confirm true. Candles are the
// ones GET /v5/market/kline answers for the same second.

type wsKlineMsg struct {
	Topic string        `json:"topic"`
	Data  []wsKlineJSON `json:"data"`
	Ts    int64         `json:"ts"`
	Type  string        `json:"type"`
}

type wsKlineJSON struct {
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	Interval  string `json:"interval"`
	Open      string `json:"open"`
	Close     string `json:"close"`
	High      string `json:"high"`
	Low       string `json:"low"`
	Volume    string `json:"volume"`
	Turnover  string `json:"turnover"`
	Confirm   bool   `json:"confirm"`
	Timestamp int64  `json:"timestamp"`
}

// parseKlineTopic splits "kline.{interval}.{symbol}".
func parseKlineTopic(topic string) (iv interval, symbol string, ok bool) {
	rest, found := strings.CutPrefix(topic, "kline.")
	if !found {
		return iv, "", false
	}
	name, sym, found := strings.Cut(rest, ".")
	if !found {
		return iv, "", false
	}
	iv, ok = intervals[name]
	return iv, sym, ok
}

// checkKlineTopic judges a kline topic: "" when accepted.
func (c *wsConn) checkKlineTopic(topic string) string {
	_, sym, ok := parseKlineTopic(topic)
	if !ok {
		return "error:handler not found,topic:" + topic
	}
	if c.s.catalog.get(c.kind.category(), sym) == nil {
		return "Invalid symbol :[" + topic + "]"
	}
	return ""
}

// pushKlineLocked sends what a kline topic has to say at now. c.mu must be
// held.
func (c *wsConn) pushKlineLocked(topic string, now time.Time) {
	iv, sym, _ := parseKlineTopic(topic)
	in := c.s.catalog.get(c.kind.category(), sym)
	if in == nil {
		return
	}
	nowMs := now.UnixMilli()
	sec := floorDiv(nowMs, 1000)
	start := iv.startOf(nowMs)
	row := func(t int64, confirm bool) wsKlineJSON {
		k := c.s.model.candle(in, iv, t, sec)
		return wsKlineJSON{
			Start: t, End: iv.next(t) - 1, Interval: iv.name,
			Open: fixed(k.open, in.priceScale), Close: fixed(k.close, in.priceScale),
			High: fixed(k.high, in.priceScale), Low: fixed(k.low, in.priceScale),
			Volume: fixed(k.volume, in.qtyScale), Turnover: k.turnover.String(),
			Confirm: confirm, Timestamp: nowMs,
		}
	}
	var data []wsKlineJSON
	if prev, seen := c.pub.klines[topic]; seen && prev < start {
		data = append(data, row(prev, true))
	}
	data = append(data, row(start, false))
	if c.pub.klines == nil {
		c.pub.klines = make(map[string]int64)
	}
	c.pub.klines[topic] = start
	c.enqueueJSON(wsKlineMsg{Topic: topic, Data: data, Ts: nowMs, Type: "snapshot"})
}

// tickerDelta turns a linear ticker snapshot into what the client needs:
// the snapshot itself the first time, then a delta of the symbol and the
// fields that changed since the last push. It reports whether there is
// anything to send and remembers what the client now holds.
func (p *publicState) tickerDelta(msg *wsTickerMsg) bool {
	cur := jsonMap(msg.Data)
	fields := make(map[string]string, len(cur))
	for k, v := range cur {
		if s, ok := v.(string); ok {
			fields[k] = s
		}
	}
	prev, seen := p.tickers[msg.Topic]
	if p.tickers == nil {
		p.tickers = make(map[string]map[string]string)
	}
	p.tickers[msg.Topic] = fields
	if !seen {
		return true
	}
	delta := map[string]string{"symbol": fields["symbol"]}
	for k, v := range fields {
		if prev[k] != v {
			delta[k] = v
		}
	}
	if len(delta) == 1 {
		return false
	}
	msg.Type, msg.Data = "delta", delta
	return true
}
