package sim

import (
	"math"
	"sort"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"
)

// The price model.
//
// Every number the simulator shows is a pure function of (seed, instrument,
// time), so two simulators with the same seed and clock agree, and any
// moment in the past costs the same to compute as the present.
//
// The fair price of an underlying at second t is
//
//	base * exp( sum_k amp_k * valueNoise_k(t) + jitter(t) )
//
// where valueNoise_k interpolates (smoothstep) between hashed lattice values
// in [-1, 1] spaced period_k apart, period_k runs from one minute to 64 days,
// and amp_k = vol * sqrt(period_k / 1 day), which gives the look of a random
// walk at every scale while staying bounded around base forever. Prices
// change once per second. Linear adds a small basis, mark a small premium on
// top; spot trades at the fair price. Floats only drive this walk: every
// emitted value is rounded onto its tick or step with decimal arithmetic.
//
// Candles are derived from the walk, not simulated: open is the price at the
// candle's first second, close at its last second (for the open candle: now,
// so the newest close is the live last price), and the wicks and volume are
// hashed from (seed, instrument, interval, start). Books are hashed from
// (seed, instrument, second) around the last price.

// model computes prices; it holds the seed and the level shifts of
// POST /sim/price, and is safe for concurrent use.
type model struct {
	seed   uint64
	shifts atomic.Pointer[shiftTable] // copy-on-write; writers hold Sim.mu
}

func newModel(seed int64) *model { return &model{seed: uint64(seed)} }

// A shiftStep multiplies an underlying's walk by factor from second sec on.
type shiftStep struct {
	sec    int64
	factor float64
}

// shiftTable holds the steps of every moved underlying, by underlying hash,
// each list sorted by second. Immutable once published.
type shiftTable map[uint64][]shiftStep

// factor is the multiplier POST /sim/price set for an underlying at sec:
// the last step at or before sec, 1 before any.
func (m *model) factor(u *underlying, sec int64) float64 {
	t := m.shifts.Load()
	if t == nil {
		return 1
	}
	steps := (*t)[u.hash]
	i := sort.Search(len(steps), func(i int) bool { return steps[i].sec > sec })
	if i == 0 {
		return 1
	}
	return steps[i-1].factor
}

// moveTo makes in's last price equal level from second sec on, by scaling
// its underlying's walk (so the other category of the same underlying
// moves with it and the walk goes on from the new level). A later move at
// or before sec replaces the steps after it. Callers hold Sim.mu, which
// serialises writers.
func (m *model) moveTo(in *instrument, sec int64, level decimal.Decimal) {
	cur := m.lastFloat(in, sec)
	f := m.factor(in.under, sec) * level.InexactFloat64() / cur
	next := shiftTable{}
	if t := m.shifts.Load(); t != nil {
		for k, v := range *t {
			next[k] = v
		}
	}
	var steps []shiftStep
	for _, st := range next[in.under.hash] {
		if st.sec < sec {
			steps = append(steps, st)
		}
	}
	next[in.under.hash] = append(steps, shiftStep{sec: sec, factor: f})
	m.shifts.Store(&next)
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hash combines the seed with words into one well-mixed value.
func (m *model) hash(words ...uint64) uint64 {
	x := mix(m.seed)
	for _, w := range words {
		x = mix(x ^ w)
	}
	return x
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// signed maps a hash to [-1, 1).
func signed(h uint64) float64 { return 2*unit(h) - 1 }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// noise is value noise in [-1, 1] with lattice spacing period seconds.
func (m *model) noise(stream, tag uint64, sec, period int64) float64 {
	i := floorDiv(sec, period)
	f := float64(sec-i*period) / float64(period)
	a := signed(m.hash(tag, stream, uint64(period), uint64(i)))
	b := signed(m.hash(tag, stream, uint64(period), uint64(i+1)))
	f = f * f * (3 - 2*f)
	return a + (b-a)*f
}

// octaves are the lattice spacings of the walk, in seconds.
var octaves = [...]int64{60, 300, 1800, 7200, 28800, 86400, 345600, 1382400, 5529600}

// fair is the fair price of an underlying at a second.
func (m *model) fair(u *underlying, sec int64) float64 {
	x := 0.0
	for _, p := range octaves {
		x += m.noise(u.hash, tagOctave, sec, p) * u.vol * math.Sqrt(float64(p)/86400)
	}
	x += signed(m.hash(tagJitter, u.hash, uint64(sec))) * u.vol * 0.002
	return u.base * math.Exp(x) * m.factor(u, sec)
}

// lastFloat is the unrounded last traded price of an instrument.
func (m *model) lastFloat(in *instrument, sec int64) float64 {
	f := m.fair(in.under, sec)
	if in.category == catLinear {
		f *= 1 + 0.0003*m.noise(in.hash, tagBasis, sec, 600)
	}
	return f
}

// last is the last traded price, on tick.
func (m *model) last(in *instrument, sec int64) decimal.Decimal {
	return roundTick(m.lastFloat(in, sec), in.tick)
}

// index is the index price of a linear instrument, on tick.
func (m *model) index(in *instrument, sec int64) decimal.Decimal {
	return roundTick(m.fair(in.under, sec), in.tick)
}

// mark is the mark price of a linear instrument, on tick.
func (m *model) mark(in *instrument, sec int64) decimal.Decimal {
	f := m.fair(in.under, sec) * (1 + 0.0001*m.noise(in.hash, tagPremium, sec, 60))
	return roundTick(f, in.tick)
}

// roundTick rounds a float price to the nearest tick, exactly.
func roundTick(f float64, tick decimal.Decimal) decimal.Decimal {
	return decimal.NewFromInt(int64(math.Round(f / tick.InexactFloat64()))).Mul(tick)
}

// ceilTick rounds up to a tick.
func ceilTick(f float64, tick decimal.Decimal) decimal.Decimal {
	return decimal.NewFromInt(int64(math.Ceil(f / tick.InexactFloat64()))).Mul(tick)
}

// floorTick rounds down to a tick (also used for steps).
func floorTick(f float64, tick decimal.Decimal) decimal.Decimal {
	return decimal.NewFromInt(int64(math.Floor(f / tick.InexactFloat64()))).Mul(tick)
}

// A level is one price level of a book.
type level struct {
	price decimal.Decimal
	size  decimal.Decimal
}

// maxBookDepth is the deepest book the REST endpoint serves.
const maxBookDepth = 1000

// book returns depth levels per side around the last price at sec: bids
// descending, asks ascending, every price on tick and size on step, best bid
// below best ask by one or two ticks.
func (m *model) book(in *instrument, sec int64, depth int) (bids, asks []level) {
	bids = make([]level, 0, depth)
	asks = make([]level, 0, depth)
	bi, ai := m.side(in, sec, false), m.side(in, sec, true)
	for i := 0; i < depth; i++ {
		l, ok := bi.next()
		if !ok {
			break
		}
		bids = append(bids, l)
	}
	for i := 0; i < depth; i++ {
		l, _ := ai.next()
		asks = append(asks, l)
	}
	return bids, asks
}

// top returns the best bid and ask at sec.
func (m *model) top(in *instrument, sec int64) (bid, ask decimal.Decimal) {
	last := m.last(in, sec)
	switch m.hash(tagBook, in.hash, uint64(sec)) % 3 {
	case 0: // two-tick spread around the last trade
		return last.Sub(in.tick), last.Add(in.tick)
	case 1: // last trade hit the bid
		return last, last.Add(in.tick)
	default: // last trade lifted the ask
		return last.Sub(in.tick), last
	}
}

// A sideIter walks one side of the book at one second, best level first,
// computing each level only when asked (the matcher rarely needs more
// than a few).
type sideIter struct {
	m   *model
	in  *instrument
	sec int64
	ask bool
	i   int
	p   decimal.Decimal
}

// side starts a walk of the asks (ask) or bids of in at sec.
func (m *model) side(in *instrument, sec int64, ask bool) *sideIter {
	bid, best := m.top(in, sec)
	if !ask {
		best = bid
	}
	return &sideIter{m: m, in: in, sec: sec, ask: ask, p: best}
}

// next returns the next level; ok is false when a bid side reaches zero.
func (it *sideIter) next() (l level, ok bool) {
	m, in, tick := it.m, it.in, it.in.tick
	if it.i > 0 {
		if it.ask {
			it.p = it.p.Add(tick.Mul(decimal.NewFromInt(int64(1 + m.hash(tagLevel, in.hash, uint64(it.sec), 2, uint64(it.i))%3))))
		} else {
			it.p = it.p.Sub(tick.Mul(decimal.NewFromInt(int64(1 + m.hash(tagLevel, in.hash, uint64(it.sec), 0, uint64(it.i))%3))))
		}
	}
	if !it.p.IsPositive() {
		return level{}, false
	}
	sideTag := uint64(1)
	if it.ask {
		sideTag = 3
	}
	l = level{price: it.p, size: m.levelSize(in, it.sec, sideTag, it.i)}
	it.i++
	return l, true
}

// levelSize is the size of one book level: at least one step, usually
// around the instrument's book unit, growing a little with depth.
func (m *model) levelSize(in *instrument, sec int64, side uint64, i int) decimal.Decimal {
	u := unit(m.hash(tagLevel, in.hash, uint64(sec), side+10, uint64(i)))
	f := in.bookUnit * (0.02 + 3*u*u) * (1 + float64(i)/50)
	steps := int64(math.Ceil(f / in.step.InexactFloat64()))
	if steps < 1 {
		steps = 1
	}
	return decimal.NewFromInt(steps).Mul(in.step)
}

// An interval is a kline interval in Bybit's spelling.
type interval struct {
	name    string
	code    uint64
	minutes int64 // 0 for "M"
}

var intervals = map[string]interval{
	"1": {"1", 1, 1}, "3": {"3", 3, 3}, "5": {"5", 5, 5}, "15": {"15", 15, 15},
	"30": {"30", 30, 30}, "60": {"60", 60, 60}, "120": {"120", 120, 120},
	"240": {"240", 240, 240}, "360": {"360", 360, 360}, "720": {"720", 720, 720},
	"D": {"D", 1440, 1440}, "W": {"W", 10080, 10080}, "M": {"M", 43200, 0},
}

const (
	msMinute = int64(60_000)
	msDay    = 1440 * msMinute
	msWeek   = 7 * msDay
)

// startOf returns the start (ms) of the candle containing ms. Minute and
// day candles align to the Unix epoch (UTC midnight), weeks start on Monday
// 00:00 UTC, months on the 1st 00:00 UTC.
func (iv interval) startOf(ms int64) int64 {
	switch {
	case iv.name == "M":
		t := time.UnixMilli(ms).UTC()
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	case iv.name == "W":
		const monday = 4 * msDay // 1970-01-05 was a Monday
		return floorDiv(ms-monday, msWeek)*msWeek + monday
	default:
		d := iv.minutes * msMinute
		return floorDiv(ms, d) * d
	}
}

// next returns the start of the candle after the one starting at start.
func (iv interval) next(start int64) int64 {
	if iv.name == "M" {
		return time.UnixMilli(start).UTC().AddDate(0, 1, 0).UnixMilli()
	}
	return start + iv.minutes*msMinute
}

// prev returns the start of the candle before the one starting at start.
func (iv interval) prev(start int64) int64 {
	if iv.name == "M" {
		return time.UnixMilli(start).UTC().AddDate(0, -1, 0).UnixMilli()
	}
	return start - iv.minutes*msMinute
}

// A candle is one kline.
type candle struct {
	start                  int64 // ms
	open, high, low, close decimal.Decimal
	volume, turnover       decimal.Decimal
}

// candle computes the candle of interval iv starting at start (ms), as seen
// at nowSec. The open candle (containing nowSec) closes at the live last
// price and carries volume pro rata to its elapsed time.
func (m *model) candle(in *instrument, iv interval, start, nowSec int64) candle {
	h := m.hash(tagCandle, in.hash, iv.code, uint64(start))
	o, hi, lo, c, durSec, elapsed := m.bar(in, iv, start, nowSec, m.last, h)
	volF := in.volPerMin * float64(durSec) / 60 * (0.4 + 1.2*unit(mix(h+3))) * float64(elapsed) / float64(durSec)
	vol := floorTick(volF, in.step)
	avg := o.Add(hi).Add(lo).Add(c).Div(decimal.NewFromInt(4))
	return candle{
		start: start, open: o, high: hi, low: lo, close: c,
		volume: vol, turnover: vol.Mul(avg).Round(4),
	}
}

// bar computes the open, high, low and close of the candle of interval iv
// starting at start (ms) of the price series price, as seen at nowSec: the
// series' values at the candle's first and last (or current) second, with
// wicks drawn from h. durSec is the candle's length, elapsed how much of it
// has passed.
func (m *model) bar(in *instrument, iv interval, start, nowSec int64, price func(*instrument, int64) decimal.Decimal, h uint64) (o, hi, lo, c decimal.Decimal, durSec, elapsed int64) {
	end := iv.next(start)
	openSec := floorDiv(start, 1000)
	closeSec := floorDiv(end, 1000) - 1
	durSec = closeSec - openSec + 1
	elapsed = durSec
	if nowSec < closeSec {
		closeSec = nowSec
		elapsed = nowSec - openSec + 1
	}
	o = price(in, openSec)
	c = price(in, closeSec)
	hi, lo = decimal.Max(o, c), decimal.Min(o, c)

	w := in.under.vol * math.Sqrt(float64(durSec)/86400) * 0.35
	hi = decimal.Max(hi, ceilTick(hi.InexactFloat64()*(1+w*unit(mix(h+1))), in.tick))
	low := floorTick(lo.InexactFloat64()*(1-w*unit(mix(h+2))), in.tick)
	if !low.IsPositive() {
		low = in.tick
	}
	lo = decimal.Min(lo, low)
	return o, hi, lo, c, durSec, elapsed
}

// stats is everything a ticker shows, as decimals.
type stats struct {
	last, index, mark      decimal.Decimal
	prev24h, prev1h        decimal.Decimal
	high24h, low24h        decimal.Decimal
	volume24h, turnover24h decimal.Decimal
	pcnt24h                decimal.Decimal
	openInterest, oiValue  decimal.Decimal
	fundingRate            decimal.Decimal
	nextFundingMs          int64
	bid1, bid1Size         decimal.Decimal
	ask1, ask1Size         decimal.Decimal
	usdIndex               decimal.Decimal
	tickDirection          string
}

// fundingPeriod is the linear funding interval.
const fundingPeriod = 8 * 3600

// stats computes the ticker of an instrument at now. The 24 h figures come
// from the 25 hourly candles that overlap the last 24 hours, so they agree
// with /v5/market/kline.
func (m *model) stats(in *instrument, now time.Time) stats {
	sec := floorDiv(now.UnixMilli(), 1000)
	var st stats
	st.last = m.last(in, sec)
	st.prev24h = m.last(in, sec-86400)
	st.prev1h = m.last(in, sec-3600)

	hour := intervals["60"]
	start := hour.startOf(sec * 1000)
	st.high24h, st.low24h = decimal.Max(st.last, st.prev24h), decimal.Min(st.last, st.prev24h)
	for i := 0; i < 25; i++ {
		c := m.candle(in, hour, start, sec)
		st.high24h = decimal.Max(st.high24h, c.high)
		st.low24h = decimal.Min(st.low24h, c.low)
		st.volume24h = st.volume24h.Add(c.volume)
		st.turnover24h = st.turnover24h.Add(c.turnover)
		start = hour.prev(start)
	}
	places := int32(4)
	if in.category == catLinear {
		places = 6
	}
	if st.prev24h.IsPositive() {
		st.pcnt24h = st.last.Sub(st.prev24h).DivRound(st.prev24h, places)
	}

	bids, asks := m.book(in, sec, 1)
	st.bid1, st.bid1Size = bids[0].price, bids[0].size
	st.ask1, st.ask1Size = asks[0].price, asks[0].size

	prev := m.last(in, sec-1)
	switch c := st.last.Cmp(prev); {
	case c > 0:
		st.tickDirection = "PlusTick"
	case c < 0:
		st.tickDirection = "MinusTick"
	case m.lastFloat(in, sec) >= m.lastFloat(in, sec-1):
		st.tickDirection = "ZeroPlusTick"
	default:
		st.tickDirection = "ZeroMinusTick"
	}

	fair := m.fair(in.under, sec)
	st.usdIndex = decimal.NewFromFloat(fair).Round(in.priceScale + 4)
	if in.category == catLinear {
		st.index = m.index(in, sec)
		st.mark = m.mark(in, sec)
		st.openInterest = m.openInterest(in, sec)
		st.oiValue = st.openInterest.Mul(st.mark).Round(2)
		w := floorDiv(sec, fundingPeriod)
		st.fundingRate = m.fundingRate(in, w)
		st.nextFundingMs = (w + 1) * fundingPeriod * 1000
	}
	return st
}

// openInterest is a linear instrument's open interest at a second.
func (m *model) openInterest(in *instrument, sec int64) decimal.Decimal {
	oi := in.oiBase * (1 + 0.08*m.noise(in.hash, tagOI, sec, 3600) + 0.02*m.noise(in.hash, tagOI, sec, 300))
	return floorTick(oi, in.step)
}

// fundingRate is the funding rate of a linear instrument over funding
// window w (the seconds [w, w+1) × fundingPeriod); it settles at the
// window's end.
func (m *model) fundingRate(in *instrument, w int64) decimal.Decimal {
	rate := -0.0001 + 0.0004*unit(m.hash(tagFunding, in.hash, uint64(w)))
	return decimal.NewFromFloat(rate).Round(8)
}
