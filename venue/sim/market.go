package sim

import (
	"strconv"

	"github.com/shopspring/decimal"
)

// Market endpoints (docs/bybit.md "Market endpoints"): public, GET, no signature. Decimals are
// strings; orderbook ts/u/seq/cts are numbers; kline rows are seven strings,
// newest first; price-limit ts is a string.

const msgSymbolInvalid = "Not supported symbols"

// categoryParam reads and checks the category parameter. def is used when
// it is absent; an empty def makes it required. allowed lists the
// categories the endpoint serves.
func categoryParam(c *call, def string, allowed ...string) (string, *response) {
	cat := c.query.Get("category")
	if cat == "" {
		if def == "" {
			r := fail(codeParams, "params error: category is required")
			return "", &r
		}
		cat = def
	}
	for _, a := range allowed {
		if cat == a {
			return cat, nil
		}
	}
	r := fail(codeParams, "Illegal category")
	return "", &r
}

// symbolParam reads a required symbol and finds its instrument.
func (s *Sim) symbolParam(c *call, cat string) (*instrument, *response) {
	sym := c.query.Get("symbol")
	if sym == "" {
		r := fail(codeParams, "params error: symbol is required")
		return nil, &r
	}
	in := s.catalog.get(cat, sym)
	if in == nil {
		r := fail(codeParams, msgSymbolInvalid)
		return nil, &r
	}
	return in, nil
}

// intParam reads an optional integer parameter within [lo, hi].
func intParam(c *call, name string, def, lo, hi int64) (int64, *response) {
	v := c.query.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r := fail(codeParams, "params error: "+name+" must be an integer in ["+itoa(lo)+", "+itoa(hi)+"]")
		return 0, &r
	}
	return n, nil
}

func fixed(d decimal.Decimal, places int32) string { return d.StringFixed(places) }

// nowSec is the price-model second of a call.
func (c *call) nowSec() int64 { return floorDiv(c.now.UnixMilli(), 1000) }

// GET /v5/market/time

type timeResult struct {
	TimeSecond string `json:"timeSecond"`
	TimeNano   string `json:"timeNano"`
}

func (s *Sim) marketTime(c *call) response {
	return ok(timeResult{
		TimeSecond: itoa(c.now.Unix()),
		TimeNano:   itoa(c.now.UnixNano()),
	})
}

// GET /v5/market/tickers

type linearTickerJSON struct {
	Symbol                 string `json:"symbol"`
	LastPrice              string `json:"lastPrice"`
	IndexPrice             string `json:"indexPrice"`
	MarkPrice              string `json:"markPrice"`
	PrevPrice24h           string `json:"prevPrice24h"`
	Price24hPcnt           string `json:"price24hPcnt"`
	HighPrice24h           string `json:"highPrice24h"`
	LowPrice24h            string `json:"lowPrice24h"`
	PrevPrice1h            string `json:"prevPrice1h"`
	OpenInterest           string `json:"openInterest"`
	OpenInterestValue      string `json:"openInterestValue"`
	Turnover24h            string `json:"turnover24h"`
	Volume24h              string `json:"volume24h"`
	FundingRate            string `json:"fundingRate"`
	NextFundingTime        string `json:"nextFundingTime"`
	PredictedDeliveryPrice string `json:"predictedDeliveryPrice"`
	BasisRate              string `json:"basisRate"`
	DeliveryFeeRate        string `json:"deliveryFeeRate"`
	DeliveryTime           string `json:"deliveryTime"`
	Ask1Size               string `json:"ask1Size"`
	Bid1Price              string `json:"bid1Price"`
	Ask1Price              string `json:"ask1Price"`
	Bid1Size               string `json:"bid1Size"`
	Basis                  string `json:"basis"`
	PreOpenPrice           string `json:"preOpenPrice"`
	PreQty                 string `json:"preQty"`
	CurPreListingPhase     string `json:"curPreListingPhase"`
	FundingIntervalHour    string `json:"fundingIntervalHour"`
	FundingCap             string `json:"fundingCap"`
	BasisRateYear          string `json:"basisRateYear"`
}

type spotTickerJSON struct {
	Symbol        string `json:"symbol"`
	Bid1Price     string `json:"bid1Price"`
	Bid1Size      string `json:"bid1Size"`
	Ask1Price     string `json:"ask1Price"`
	Ask1Size      string `json:"ask1Size"`
	LastPrice     string `json:"lastPrice"`
	PrevPrice24h  string `json:"prevPrice24h"`
	Price24hPcnt  string `json:"price24hPcnt"`
	HighPrice24h  string `json:"highPrice24h"`
	LowPrice24h   string `json:"lowPrice24h"`
	Turnover24h   string `json:"turnover24h"`
	Volume24h     string `json:"volume24h"`
	USDIndexPrice string `json:"usdIndexPrice"`
}

type listResult struct {
	Category string `json:"category"`
	List     []any  `json:"list"`
}

func (in *instrument) tickerJSON(st stats) any {
	p, q := in.priceScale, in.qtyScale
	if in.category == catSpot {
		return spotTickerJSON{
			Symbol:        in.symbol,
			Bid1Price:     fixed(st.bid1, p),
			Bid1Size:      fixed(st.bid1Size, q),
			Ask1Price:     fixed(st.ask1, p),
			Ask1Size:      fixed(st.ask1Size, q),
			LastPrice:     fixed(st.last, p),
			PrevPrice24h:  fixed(st.prev24h, p),
			Price24hPcnt:  st.pcnt24h.String(),
			HighPrice24h:  fixed(st.high24h, p),
			LowPrice24h:   fixed(st.low24h, p),
			Turnover24h:   st.turnover24h.String(),
			Volume24h:     fixed(st.volume24h, q),
			USDIndexPrice: st.usdIndex.String(),
		}
	}
	return linearTickerJSON{
		Symbol:                 in.symbol,
		LastPrice:              fixed(st.last, p),
		IndexPrice:             fixed(st.index, p),
		MarkPrice:              fixed(st.mark, p),
		PrevPrice24h:           fixed(st.prev24h, p),
		Price24hPcnt:           fixed(st.pcnt24h, 6),
		HighPrice24h:           fixed(st.high24h, p),
		LowPrice24h:            fixed(st.low24h, p),
		PrevPrice1h:            fixed(st.prev1h, p),
		OpenInterest:           fixed(st.openInterest, q),
		OpenInterestValue:      fixed(st.oiValue, 2),
		Turnover24h:            fixed(st.turnover24h, 4),
		Volume24h:              fixed(st.volume24h, q),
		FundingRate:            st.fundingRate.String(),
		NextFundingTime:        itoa(st.nextFundingMs),
		PredictedDeliveryPrice: "",
		BasisRate:              "",
		DeliveryFeeRate:        "",
		DeliveryTime:           "0",
		Ask1Size:               fixed(st.ask1Size, q),
		Bid1Price:              fixed(st.bid1, p),
		Ask1Price:              fixed(st.ask1, p),
		Bid1Size:               fixed(st.bid1Size, q),
		Basis:                  "",
		PreOpenPrice:           "",
		PreQty:                 "",
		CurPreListingPhase:     "",
		FundingIntervalHour:    "8",
		FundingCap:             "0.005",
		BasisRateYear:          "",
	}
}

func (s *Sim) marketTickers(c *call) response {
	cat, bad := categoryParam(c, "", catSpot, catLinear, catInverse, catOption)
	if bad != nil {
		return *bad
	}
	var ins []*instrument
	if sym := c.query.Get("symbol"); sym != "" {
		in := s.catalog.get(cat, sym)
		if in == nil {
			return fail(codeParams, msgSymbolInvalid)
		}
		ins = []*instrument{in}
	} else {
		ins = s.catalog.list[cat]
	}
	list := make([]any, 0, len(ins))
	for _, in := range ins {
		list = append(list, in.tickerJSON(s.model.stats(in, c.now)))
	}
	return ok(listResult{Category: cat, List: list})
}

// GET /v5/market/orderbook

type bookJSON struct {
	S   string      `json:"s"`
	A   [][2]string `json:"a"`
	B   [][2]string `json:"b"`
	Ts  int64       `json:"ts"`
	U   int64       `json:"u"`
	Seq int64       `json:"seq"`
	Cts int64       `json:"cts"`
}

// bookIDs returns the update id, cross sequence and matching-engine time of
// the book at a second; all grow with time.
func (s *Sim) bookIDs(in *instrument, sec, tsMs int64) (u, seq, cts int64) {
	u = sec - 1_500_000_000
	if u < 1 {
		u = 1
	}
	h := s.model.hash(tagBook, in.hash, uint64(sec), 99)
	seq = u*1000 + int64(h%1000)
	cts = tsMs - int64(mix(h)%50)
	return u, seq, cts
}

func (s *Sim) marketOrderbook(c *call) response {
	cat, bad := categoryParam(c, "", catSpot, catLinear, catInverse, catOption)
	if bad != nil {
		return *bad
	}
	in, bad := s.symbolParam(c, cat)
	if bad != nil {
		return *bad
	}
	def := int64(25)
	if cat == catSpot {
		def = 1
	}
	limit, bad := intParam(c, "limit", def, 1, maxBookDepth)
	if bad != nil {
		return *bad
	}
	sec := c.nowSec()
	bids, asks := s.model.book(in, sec, int(limit))
	out := bookJSON{S: in.symbol, A: make([][2]string, len(asks)), B: make([][2]string, len(bids)), Ts: c.now.UnixMilli()}
	for i, l := range asks {
		out.A[i] = [2]string{fixed(l.price, in.priceScale), fixed(l.size, in.qtyScale)}
	}
	for i, l := range bids {
		out.B[i] = [2]string{fixed(l.price, in.priceScale), fixed(l.size, in.qtyScale)}
	}
	out.U, out.Seq, out.Cts = s.bookIDs(in, sec, out.Ts)
	return ok(out)
}

// GET /v5/market/kline

type klineResult struct {
	Symbol   string      `json:"symbol"`
	Category string      `json:"category"`
	List     [][7]string `json:"list"`
}

func (s *Sim) marketKline(c *call) response {
	cat, in, iv, starts, bad := s.klineRequest(c, catLinear, catSpot, catInverse)
	if bad != nil {
		return *bad
	}
	list := make([][7]string, 0, len(starts))
	sec := c.nowSec()
	for _, t := range starts {
		k := s.model.candle(in, iv, t, sec)
		list = append(list, [7]string{
			itoa(k.start),
			fixed(k.open, in.priceScale), fixed(k.high, in.priceScale),
			fixed(k.low, in.priceScale), fixed(k.close, in.priceScale),
			fixed(k.volume, in.qtyScale), k.turnover.String(),
		})
	}
	return ok(klineResult{Symbol: in.symbol, Category: cat, List: list})
}

// GET /v5/market/instruments-info

type instrumentsResult struct {
	Category       string  `json:"category"`
	List           []any   `json:"list"`
	NextPageCursor *string `json:"nextPageCursor,omitempty"`
}

func (s *Sim) marketInstruments(c *call) response {
	cat, bad := categoryParam(c, "", catSpot, catLinear, catInverse, catOption)
	if bad != nil {
		return *bad
	}
	switch st := c.query.Get("status"); st {
	case "", "Trading", "PreLaunch", "Delivering", "Closed":
	default:
		return fail(codeParams, "params error: status invalid")
	}
	limit, bad := intParam(c, "limit", 500, 1, 1000)
	if bad != nil {
		return *bad
	}
	sym, baseCoin, status := c.query.Get("symbol"), c.query.Get("baseCoin"), c.query.Get("status")
	var matched []*instrument
	for _, in := range s.catalog.list[cat] {
		if sym != "" && in.symbol != sym {
			continue
		}
		if baseCoin != "" && cat != catSpot && in.baseCoin != baseCoin {
			continue
		}
		if status != "" && status != "Trading" {
			continue
		}
		matched = append(matched, in)
	}
	res := instrumentsResult{Category: cat, List: []any{}}
	if cat == catSpot {
		for _, in := range matched {
			res.List = append(res.List, in.spotJSON())
		}
		return ok(res)
	}
	// Derivatives page with an opaque cursor: the symbol to resume at.
	from := 0
	if cur := c.query.Get("cursor"); cur != "" {
		from = -1
		for i, in := range matched {
			if in.symbol == cur {
				from = i
				break
			}
		}
		if from < 0 {
			return fail(codeParams, "params error: cursor invalid")
		}
	}
	next := ""
	for i := from; i < len(matched); i++ {
		if int64(len(res.List)) == limit {
			next = matched[i].symbol
			break
		}
		res.List = append(res.List, matched[i].linearJSON())
	}
	res.NextPageCursor = &next
	return ok(res)
}

// GET /v5/market/price-limit

type priceLimitResult struct {
	Symbol  string `json:"symbol"`
	BuyLmt  string `json:"buyLmt"`
	SellLmt string `json:"sellLmt"`
	Ts      string `json:"ts"`
}

func (s *Sim) marketPriceLimit(c *call) response {
	cat, bad := categoryParam(c, catLinear, catSpot, catLinear, catInverse)
	if bad != nil {
		return *bad
	}
	in, bad := s.symbolParam(c, cat)
	if bad != nil {
		return *bad
	}
	buy, sell := s.priceLimits(in, c.nowSec())
	return ok(priceLimitResult{
		Symbol:  in.symbol,
		BuyLmt:  fixed(buy, in.priceScale),
		SellLmt: fixed(sell, in.priceScale),
		Ts:      itoa(c.now.UnixMilli()),
	})
}

// priceLimits is the band a limit price must stay inside: the highest
// allowed buy and the lowest allowed sell, priceLimitRatioX around the mark
// (linear) or last (spot) price.
func (s *Sim) priceLimits(in *instrument, sec int64) (buy, sell decimal.Decimal) {
	ref := s.model.last(in, sec)
	if in.category == catLinear {
		ref = s.model.mark(in, sec)
	}
	x := decimal.RequireFromString(in.limitX)
	one := decimal.NewFromInt(1)
	buy = ref.Mul(one.Add(x)).Div(in.tick).Floor().Mul(in.tick)
	sell = ref.Mul(one.Sub(x)).Div(in.tick).Ceil().Mul(in.tick)
	return buy, sell
}
