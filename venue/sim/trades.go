package sim

import (
	"math"
	"strconv"

	"github.com/shopspring/decimal"
)

// Public trades (GET /v5/market/recent-trade, WebSocket publicTrade.*).
//
// Like prices and books, the market's trades are a pure function of
// (seed, instrument, second): every second holds one to three trades, all
// at that second's last price and the first right at the second's start,
// so the newest trade always agrees with the ticker's lastPrice and the
// candles. The taker side follows the book (last equal to the ask: a buy;
// to the bid: a sell). Trades of the simulator's own accounts are not mixed
// in.

// Hash-stream tags for public trades; a block of their own so they never
// collide with accounts.go (which grows by appending) or ledger.go (0x100).
const (
	tagTrade uint64 = 0x200 + iota
	tagTradeID
)

// A publicTrade is one trade of the simulated market.
type publicTrade struct {
	ms    int64 // trade time
	price decimal.Decimal
	size  decimal.Decimal
	side  string // taker side: Buy or Sell
	tick  string // PlusTick, ZeroPlusTick, MinusTick, ZeroMinusTick
	id    string // execId / "i"
	seq   int64
}

// maxTradeLookback bounds how far back recent-trade searches, in seconds.
const maxTradeLookback = 3600

// tradesAt returns the trades of the second sec, oldest first.
func (s *Sim) tradesAt(in *instrument, sec int64) []publicTrade {
	m := s.model
	h := m.hash(tagTrade, in.hash, uint64(sec))
	n := 1 + int(h%3)
	bids, asks := m.book(in, sec, 1)
	bid, ask := bids[0].price, asks[0].price
	last := m.last(in, sec)
	prev := m.last(in, sec-1)

	// The taker side follows the book: last at the ask was a buy, at the
	// bid a sell; between the two, either.
	side := "Sell"
	switch {
	case last.Equal(ask) && !last.Equal(bid):
		side = "Buy"
	case last.Equal(bid):
	case (h>>32)%2 == 0:
		side = "Buy"
	}
	out := make([]publicTrade, n)
	for i := 0; i < n; i++ {
		// The first trade opens the second (so every visible moment's last
		// trade is at the ticker's lastPrice); the others follow at
		// distinct ascending offsets.
		off := int64(0)
		if i > 0 {
			slot := int64(1000 / n)
			off = int64(i)*slot + 1 + int64(mix(h+uint64(i))%uint64(slot-1))
		}
		u := unit(mix(h ^ uint64(i+10)))
		f := in.bookUnit * (0.005 + 0.4*u*u)
		steps := int64(math.Ceil(f / in.step.InexactFloat64()))
		if steps < 1 {
			steps = 1
		}
		// Tick direction as the ticker reports it for the first trade; the
		// others repeat its price, so they are zero ticks the same way.
		tick := "ZeroPlusTick"
		switch c := last.Cmp(prev); {
		case i == 0 && c > 0:
			tick = "PlusTick"
		case i == 0 && c < 0:
			tick = "MinusTick"
		case c < 0, c == 0 && m.lastFloat(in, sec) < m.lastFloat(in, sec-1):
			tick = "ZeroMinusTick"
		}
		out[i] = publicTrade{
			ms:    sec*1000 + off,
			price: last,
			size:  decimal.NewFromInt(steps).Mul(in.step),
			side:  side,
			tick:  tick,
			id:    s.tradeID(in, sec, i),
			seq:   (sec-1_500_000_000)*10 + int64(i),
		}
	}
	return out
}

// tradeID is a trade's id in the style of its category: a UUID for linear,
// a 19-digit number for spot.
func (s *Sim) tradeID(in *instrument, sec int64, i int) string {
	if in.category == catSpot {
		return "22" + s.randString(17, "0123456789", tagTradeID, in.hash, uint64(sec), uint64(i))
	}
	const hexd = "0123456789abcdef"
	h := s.randString(32, hexd, tagTradeID, in.hash, uint64(sec), uint64(i))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// tradesBetween returns the trades with fromMs < time <= toMs, oldest
// first, never before the instrument's launch.
func (s *Sim) tradesBetween(in *instrument, fromMs, toMs int64) []publicTrade {
	var out []publicTrade
	first := max(floorDiv(fromMs, 1000), floorDiv(in.launchMs, 1000))
	for sec := first; sec <= floorDiv(toMs, 1000); sec++ {
		for _, t := range s.tradesAt(in, sec) {
			if t.ms > fromMs && t.ms <= toMs {
				out = append(out, t)
			}
		}
	}
	return out
}

// GET /v5/market/recent-trade

type recentTradeJSON struct {
	ExecID       string `json:"execId"`
	Symbol       string `json:"symbol"`
	Price        string `json:"price"`
	Size         string `json:"size"`
	Side         string `json:"side"`
	Time         string `json:"time"`
	IsBlockTrade bool   `json:"isBlockTrade"`
	IsRPITrade   bool   `json:"isRPITrade"`
	Seq          string `json:"seq"`
}

func (s *Sim) marketRecentTrade(c *call) response {
	cat, bad := categoryParam(c, "", catSpot, catLinear, catInverse, catOption)
	if bad != nil {
		return *bad
	}
	def, hi := int64(500), int64(1000)
	if cat == catSpot {
		def, hi = 60, 60
	}
	limit, bad := intParam(c, "limit", def, 1, hi)
	if bad != nil {
		return *bad
	}
	sym := c.query.Get("symbol")
	if sym == "" {
		if cat != catOption {
			return fail(codeParams, "params error: symbol is required")
		}
		return ok(listResult{Category: cat, List: []any{}})
	}
	in := s.catalog.get(cat, sym)
	if in == nil {
		return fail(codeParams, msgSymbolInvalid)
	}
	nowMs := c.now.UnixMilli()
	list := make([]any, 0, limit)
	launch := floorDiv(in.launchMs, 1000)
	for sec := floorDiv(nowMs, 1000); sec >= launch && sec > floorDiv(nowMs, 1000)-maxTradeLookback && int64(len(list)) < limit; sec-- {
		ts := s.tradesAt(in, sec)
		for i := len(ts) - 1; i >= 0 && int64(len(list)) < limit; i-- {
			t := ts[i]
			if t.ms > nowMs {
				continue
			}
			list = append(list, recentTradeJSON{
				ExecID: t.id, Symbol: in.symbol,
				Price: fixed(t.price, in.priceScale), Size: fixed(t.size, in.qtyScale),
				Side: t.side, Time: itoa(t.ms), Seq: strconv.FormatInt(t.seq, 10),
			})
		}
	}
	return ok(listResult{Category: cat, List: list})
}
