package sim

import (
	"math"
	"strconv"

	"github.com/shopspring/decimal"
)

// Public trades (GET /v5/market/recent-trade, WebSocket publicTrade.*).
//
// Like prices and books, the market's trades are a pure function of
// (seed, instrument, second): every second holds one to three trades; the
// last one is at that second's last price (so trades agree with tickers and
// candles) and the earlier ones hit the bid or lift the ask of that
// second's book. The taker side of the last trade follows the book (last
// equal to the ask: a buy; to the bid: a sell). Trades of the simulator's
// own accounts are not mixed in.

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

	// Trade times inside the second: n distinct ascending offsets.
	offs := make([]int64, n)
	for i := range offs {
		offs[i] = int64(mix(h+uint64(i)+1)%uint64(1000/n)) + int64(i*1000/n)
	}
	out := make([]publicTrade, n)
	for i := 0; i < n; i++ {
		hi := mix(h ^ uint64(i+10))
		var side string
		var price decimal.Decimal
		if i == n-1 {
			price = last
			switch {
			case last.Equal(ask) && !last.Equal(bid):
				side = "Buy"
			case last.Equal(bid):
				side = "Sell"
			case hi%2 == 0:
				side = "Buy"
			default:
				side = "Sell"
			}
		} else if hi%2 == 0 {
			side, price = "Buy", ask
		} else {
			side, price = "Sell", bid
		}
		u := unit(mix(hi + 7))
		f := in.bookUnit * (0.005 + 0.4*u*u)
		steps := int64(math.Ceil(f / in.step.InexactFloat64()))
		if steps < 1 {
			steps = 1
		}
		out[i] = publicTrade{
			ms:    sec*1000 + offs[i],
			price: price,
			size:  decimal.NewFromInt(steps).Mul(in.step),
			side:  side,
			id:    s.tradeID(in, sec, i),
			seq:   (sec-1_500_000_000)*10 + int64(i),
		}
	}
	// Tick direction against the trade before (the previous second's last
	// price for the first one).
	ref := prev
	for i := range out {
		switch c := out[i].price.Cmp(ref); {
		case c > 0:
			out[i].tick = "PlusTick"
		case c < 0:
			out[i].tick = "MinusTick"
		case i > 0 && (out[i-1].tick == "PlusTick" || out[i-1].tick == "ZeroPlusTick"):
			out[i].tick = "ZeroPlusTick"
		case i > 0:
			out[i].tick = "ZeroMinusTick"
		default:
			out[i].tick = "ZeroPlusTick"
		}
		ref = out[i].price
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
