package sim

import (
	"github.com/shopspring/decimal"
)

// More public market endpoints (docs/simulator.md), all derived from the
// price model like the tickers, so a value read here agrees with the
// ticker of the same second:
//
//	GET /v5/market/funding/history   -> {"category","list":[{"symbol","fundingRate","fundingRateTimestamp"}]}
//	GET /v5/market/open-interest     -> {"symbol","category","list":[{"openInterest","timestamp"}],"nextPageCursor"}
//	GET /v5/market/risk-limit        -> {"category","list":[{"id","symbol","riskLimitValue",...}]}
//	GET /v5/market/mark-price-kline  -> {"symbol","category","list":[[start,open,high,low,close]]}
//	GET /v5/market/index-price-kline -> the same, of the index price
//
// Funding, open interest, risk limits and the mark and index prices exist
// for linear instruments only; other categories answer "Illegal category".

// Hash-stream tags of the mark and index candles' wicks (apart from the
// last-price candles' tagCandle and from ledger.go's block).
const (
	tagMarkCandle uint64 = 0x200 + iota
	tagIndexCandle
)

// linearSymbolParam reads the required category (linear only) and symbol
// of a derivatives-only market read.
func (s *Sim) linearSymbolParam(c *call) (*instrument, *response) {
	cat, bad := categoryParam(c, "", catLinear)
	if bad != nil {
		return nil, bad
	}
	return s.symbolParam(c, cat)
}

// GET /v5/market/funding/history

type fundingRow struct {
	Symbol               string `json:"symbol"`
	FundingRate          string `json:"fundingRate"`
	FundingRateTimestamp string `json:"fundingRateTimestamp"`
}

type fundingResult struct {
	Category string       `json:"category"`
	List     []fundingRow `json:"list"`
}

// marketFundingHistory lists the settled funding rates, newest first: one
// per funding window that ended after the listing and by endTime (default
// now). startTime alone is refused, as on Bybit; endTime alone gives the
// latest limit settlements up to it.
func (s *Sim) marketFundingHistory(c *call) response {
	in, bad := s.linearSymbolParam(c)
	if bad != nil {
		return *bad
	}
	cat := in.category
	nowMs := c.now.UnixMilli()
	start, end, bad := timeRange(c, "startTime", "endTime")
	if bad != nil {
		return *bad
	}
	if end < start {
		return fail(codeParams, msgWindowReversed)
	}
	if c.query.Get("startTime") != "" && c.query.Get("endTime") == "" {
		return fail(codeParams, "params error: endTime is required with startTime")
	}
	limit, bad := intParam(c, "limit", 200, 1, 200)
	if bad != nil {
		return *bad
	}
	end = min(end, nowMs)
	periodMs := int64(fundingPeriod) * 1000
	list := []fundingRow{}
	// Settlement at the end of window w is at (w+1) × period.
	for t := floorDiv(end, periodMs) * periodMs; t >= start && t > in.launchMs && int64(len(list)) < limit; t -= periodMs {
		w := t/periodMs - 1
		list = append(list, fundingRow{Symbol: in.symbol, FundingRate: s.model.fundingRate(in, w).String(), FundingRateTimestamp: itoa(t)})
	}
	return ok(fundingResult{Category: cat, List: list})
}

// timeRange reads two optional millisecond timestamps: start (default 0)
// and end (default now).
func timeRange(c *call, startName, endName string) (start, end int64, bad *response) {
	const maxMs = int64(1) << 52
	if start, bad = intParam(c, startName, 0, 0, maxMs); bad != nil {
		return
	}
	end, bad = intParam(c, endName, c.now.UnixMilli(), 0, maxMs)
	return
}

// GET /v5/market/open-interest

type openInterestRow struct {
	OpenInterest string `json:"openInterest"`
	Timestamp    string `json:"timestamp"`
}

type openInterestResult struct {
	Symbol         string            `json:"symbol"`
	Category       string            `json:"category"`
	List           []openInterestRow `json:"list"`
	NextPageCursor string            `json:"nextPageCursor"`
}

// oiIntervals are the intervalTime values of open interest, in ms.
var oiIntervals = map[string]int64{
	"5min": 5 * msMinute, "15min": 15 * msMinute, "30min": 30 * msMinute,
	"1h": 60 * msMinute, "4h": 240 * msMinute, "1d": msDay,
}

// marketOpenInterest lists the open interest at the start of each
// interval in [startTime, endTime] (default: up to now), newest first,
// limit rows a page (default 50, at most 200); nextPageCursor continues
// with older rows.
func (s *Sim) marketOpenInterest(c *call) response {
	in, bad := s.linearSymbolParam(c)
	if bad != nil {
		return *bad
	}
	cat := in.category
	step, known := oiIntervals[c.query.Get("intervalTime")]
	if !known {
		return fail(codeParams, "params error: intervalTime must be one of 5min,15min,30min,1h,4h,1d")
	}
	nowMs := c.now.UnixMilli()
	start, end, bad := timeRange(c, "startTime", "endTime")
	if bad != nil {
		return *bad
	}
	if end < start {
		return fail(codeParams, msgWindowReversed)
	}
	limit, bad := intParam(c, "limit", 50, 1, 200)
	if bad != nil {
		return *bad
	}
	cur, bad := s.cursorParam(c)
	if bad != nil {
		return *bad
	}
	end = min(end, nowMs)
	t := floorDiv(end, step) * step
	if cur != nil {
		t = min(t, cur.T-step)
	}
	out := openInterestResult{Symbol: in.symbol, Category: cat, List: []openInterestRow{}}
	for ; t >= start && t >= in.launchMs && int64(len(out.List)) < limit; t -= step {
		oi := s.model.openInterest(in, floorDiv(t, 1000))
		out.List = append(out.List, openInterestRow{OpenInterest: fixed(oi, 8), Timestamp: itoa(t)})
	}
	if n := len(out.List); n > 0 && t >= start && t >= in.launchMs {
		out.NextPageCursor = s.encodeCursor(c, cursorPos{T: t + step})
	}
	return ok(out)
}

// GET /v5/market/risk-limit

type riskLimitRow struct {
	ID                int    `json:"id"`
	Symbol            string `json:"symbol"`
	RiskLimitValue    string `json:"riskLimitValue"`
	MaintenanceMargin string `json:"maintenanceMargin"`
	InitialMargin     string `json:"initialMargin"`
	IsLowestRisk      int    `json:"isLowestRisk"`
	MaxLeverage       string `json:"maxLeverage"`
	MmDeduction       string `json:"mmDeduction"`
}

type riskLimitResult struct {
	Category       string         `json:"category"`
	List           []riskLimitRow `json:"list"`
	NextPageCursor string         `json:"nextPageCursor"`
}

// simRiskLimitValue is the position value (USDT) of the simulator's only
// risk tier: the simulator's margin model has one maintenance rate for
// every size (ledger.go), so it lists one tier, with that rate.
const simRiskLimitValue = "2000000"

// marketRiskLimit lists one risk tier per linear symbol (or the one
// asked for): the maintenance rate and leverage bound the simulator's
// margin model uses.
func (s *Sim) marketRiskLimit(c *call) response {
	cat, bad := categoryParam(c, "", catLinear)
	if bad != nil {
		return *bad
	}
	ins := s.catalog.list[cat]
	if c.query.Get("symbol") != "" {
		in, bad := s.symbolParam(c, cat)
		if bad != nil {
			return *bad
		}
		ins = []*instrument{in}
	}
	out := riskLimitResult{Category: cat, List: make([]riskLimitRow, 0, len(ins))}
	for _, in := range ins {
		maxLev := decimal.RequireFromString(in.maxLeverage)
		out.List = append(out.List, riskLimitRow{
			ID: 1, Symbol: in.symbol, RiskLimitValue: simRiskLimitValue,
			MaintenanceMargin: maintenanceRate.String(),
			InitialMargin:     decimal.NewFromInt(1).DivRound(maxLev, 4).String(),
			IsLowestRisk:      1, MaxLeverage: fixed(maxLev, 2), MmDeduction: "",
		})
	}
	return ok(out)
}

// GET /v5/market/mark-price-kline and /v5/market/index-price-kline

type priceKlineResult struct {
	Symbol   string      `json:"symbol"`
	Category string      `json:"category"`
	List     [][5]string `json:"list"`
}

// priceKline serves the candles of the mark or the index price: the same
// parameters and window rules as /v5/market/kline, rows of [start, open,
// high, low, close] newest first.
func (s *Sim) priceKline(price func(*instrument, int64) decimal.Decimal, tag uint64) func(*call) response {
	return func(c *call) response {
		cat, in, iv, starts, bad := s.klineRequest(c, catLinear)
		if bad != nil {
			return *bad
		}
		sec := c.nowSec()
		list := make([][5]string, 0, len(starts))
		for _, t := range starts {
			h := s.model.hash(tag, in.hash, iv.code, uint64(t))
			o, hi, lo, cl, _, _ := s.model.bar(in, iv, t, sec, price, h)
			ps := in.priceScale
			list = append(list, [5]string{itoa(t), fixed(o, ps), fixed(hi, ps), fixed(lo, ps), fixed(cl, ps)})
		}
		return ok(priceKlineResult{Symbol: in.symbol, Category: cat, List: list})
	}
}

// klineRequest reads a kline request: the category (the first of cats by
// default), the symbol, and the window (klineWindow).
func (s *Sim) klineRequest(c *call, cats ...string) (cat string, in *instrument, iv interval, starts []int64, bad *response) {
	if cat, bad = categoryParam(c, cats[0], cats...); bad != nil {
		return
	}
	if in, bad = s.symbolParam(c, cat); bad != nil {
		return
	}
	iv, starts, bad = klineWindow(c, in)
	return
}

// klineWindow reads interval, start, end and limit of a kline request and
// returns the interval and the candle starts to answer, newest first:
// candles whose start lies in [start, end], never before the listing.
// With only start given the window is anchored at start (the earliest
// limit candles from there, as Bybit does: start=1&limit=1 answers the
// first candle); otherwise at end (the latest limit up to end).
func klineWindow(c *call, in *instrument) (interval, []int64, *response) {
	ivName := c.query.Get("interval")
	iv, known := intervals[ivName]
	if ivName == "" {
		r := fail(codeParams, "params error: interval is required")
		return iv, nil, &r
	}
	if !known {
		r := fail(codeParams, "params error: interval invalid, want one of 1,3,5,15,30,60,120,240,360,720,D,W,M")
		return iv, nil, &r
	}
	nowMs := c.now.UnixMilli()
	start, end, bad := timeRange(c, "start", "end")
	if bad != nil {
		return iv, nil, bad
	}
	limit, bad := intParam(c, "limit", 200, 1, 1000)
	if bad != nil {
		return iv, nil, bad
	}
	end = min(end, nowMs)
	lower := max(start, iv.startOf(in.launchMs))
	var starts []int64
	if c.query.Get("start") != "" && c.query.Get("end") == "" {
		t := iv.startOf(lower)
		if t < lower {
			t = iv.next(t)
		}
		for ; t <= end && int64(len(starts)) < limit; t = iv.next(t) {
			starts = append(starts, t)
		}
		for i, j := 0, len(starts)-1; i < j; i, j = i+1, j-1 {
			starts[i], starts[j] = starts[j], starts[i]
		}
	} else {
		for t := iv.startOf(end); t >= lower && int64(len(starts)) < limit; t = iv.prev(t) {
			starts = append(starts, t)
		}
	}
	return iv, starts, nil
}
