package venue

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Market endpoint paths (docs/bybit.md "Market endpoints").
const (
	PathTickers     = "/v5/market/tickers"
	PathOrderbook   = "/v5/market/orderbook"
	PathKline       = "/v5/market/kline"
	PathInstruments = "/v5/market/instruments-info"
	PathPriceLimit  = "/v5/market/price-limit"
	PathServerTime  = "/v5/market/time"
)

// Input bounds checked before any request.
const (
	MaxOrderbookLimit = 200
	MaxKlineLimit     = 1000
)

var symbolRE = messages.SymbolRE

// checkMarket validates the category and symbol of a market call. Values are
// never echoed back.
func checkMarket(cat messages.Category, symbol string) error {
	if !cat.Valid() {
		return messages.InvalidParams("category", "must be spot or linear")
	}
	if !symbolRE.MatchString(symbol) {
		return messages.InvalidParams("symbol", "must be 2 to 30 characters of A-Z and 0-9")
	}
	return nil
}

// notFoundSymbol is the answer when the venue lists nothing for a symbol.
func notFoundSymbol(path string) *messages.Error {
	return &messages.Error{
		Code:     messages.CodeNotFound,
		Message:  "the exchange lists no such symbol in this category",
		NextStep: "check the symbol and the category (spot or linear), e.g. BTCUSDT",
		Details:  map[string]any{"field": "symbol", "endpoint": path},
	}
}

// symbolRefused turns a refusal of a validated market request that names an
// unlisted symbol (symbolRefusalRetCodes) into not_found; the exchange text
// stays in UntrustedText. Other errors pass through.
func symbolRefused(err error) error {
	var e *messages.Error
	if !errors.As(err, &e) || e.Code != messages.CodeExchangeRejected {
		return err
	}
	if rc, ok := e.Details["ret_code"].(int); ok && slices.Contains(symbolRefusalRetCodes, rc) {
		e.Code = messages.CodeNotFound
		e.Message = "the exchange refused this symbol for this category; it is probably not listed"
		e.NextStep = "check the symbol and the category (spot or linear), e.g. BTCUSDT"
		e.Details["field"] = "symbol"
	}
	return err
}

// malformed maps a result that decoded as JSON but not as the expected
// object (reads only).
func (c *Client) malformed(path string, resp *Response, err error) *messages.Error {
	f := &failure{rule: ruleByFailure[FailMalformedResult], reason: string(FailMalformedResult),
		cause: errors.New("venue: " + path + ": " + err.Error())}
	if resp != nil {
		f.httpStatus = resp.HTTPStatus
	}
	return f.toError(false, path, 1, c.now())
}

type wireTicker struct {
	Symbol          string  `json:"symbol"`
	LastPrice       flexNum `json:"lastPrice"`
	Bid1Price       flexNum `json:"bid1Price"`
	Bid1Size        flexNum `json:"bid1Size"`
	Ask1Price       flexNum `json:"ask1Price"`
	Ask1Size        flexNum `json:"ask1Size"`
	PrevPrice24h    flexNum `json:"prevPrice24h"`
	Price24hPcnt    flexNum `json:"price24hPcnt"`
	HighPrice24h    flexNum `json:"highPrice24h"`
	LowPrice24h     flexNum `json:"lowPrice24h"`
	Volume24h       flexNum `json:"volume24h"`
	Turnover24h     flexNum `json:"turnover24h"`
	MarkPrice       flexNum `json:"markPrice"`
	IndexPrice      flexNum `json:"indexPrice"`
	FundingRate     flexNum `json:"fundingRate"`
	OpenInterest    flexNum `json:"openInterest"`
	NextFundingTime flexNum `json:"nextFundingTime"`
}

// Ticker returns the ticker of symbol in cat (GET /v5/market/tickers). On
// linear, HasDerivatives is set and mark, index, funding and open interest
// are filled. An unlisted symbol is not_found.
func (c *Client) Ticker(ctx context.Context, cat messages.Category, symbol string) (*messages.Ticker, error) {
	if err := checkMarket(cat, symbol); err != nil {
		return nil, err
	}
	var res struct {
		List []wireTicker `json:"list"`
	}
	resp, err := c.Get(ctx, PathTickers, Query{{"category", string(cat)}, {"symbol", symbol}}, false, &res)
	if err != nil {
		return nil, symbolRefused(err)
	}
	i := slices.IndexFunc(res.List, func(t wireTicker) bool { return t.Symbol == symbol })
	if i < 0 {
		return nil, notFoundSymbol(PathTickers)
	}
	t, err := parseTicker(cat, &res.List[i], resp.Time)
	if err != nil {
		return nil, c.malformed(PathTickers, resp, err)
	}
	return t, nil
}

func parseTicker(cat messages.Category, w *wireTicker, at time.Time) (*messages.Ticker, error) {
	var d fieldDecoder
	t := &messages.Ticker{
		Category:     cat,
		Symbol:       w.Symbol,
		LastPrice:    d.decNum("lastPrice", w.LastPrice),
		Bid1Price:    d.decNum("bid1Price", w.Bid1Price),
		Bid1Size:     d.decNum("bid1Size", w.Bid1Size),
		Ask1Price:    d.decNum("ask1Price", w.Ask1Price),
		Ask1Size:     d.decNum("ask1Size", w.Ask1Size),
		PrevPrice24h: d.decNum("prevPrice24h", w.PrevPrice24h),
		Price24hPcnt: d.decNum("price24hPcnt", w.Price24hPcnt),
		HighPrice24h: d.decNum("highPrice24h", w.HighPrice24h),
		LowPrice24h:  d.decNum("lowPrice24h", w.LowPrice24h),
		Volume24h:    d.decNum("volume24h", w.Volume24h),
		Turnover24h:  d.decNum("turnover24h", w.Turnover24h),
		Time:         at,
	}
	if cat == messages.CategoryLinear {
		t.HasDerivatives = true
		t.MarkPrice = d.decNum("markPrice", w.MarkPrice)
		t.IndexPrice = d.decNum("indexPrice", w.IndexPrice)
		t.FundingRate = d.decNum("fundingRate", w.FundingRate)
		t.OpenInterest = d.decNum("openInterest", w.OpenInterest)
		t.NextFundingTime = d.ms("nextFundingTime", w.NextFundingTime)
	}
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

type wireOrderbook struct {
	Symbol string      `json:"s"`
	Bids   [][]flexNum `json:"b"`
	Asks   [][]flexNum `json:"a"`
	TS     flexNum     `json:"ts"`
	U      flexNum     `json:"u"`
}

// Orderbook returns a depth snapshot with up to limit levels per side (GET
// /v5/market/orderbook). limit is 1..200; 0 means the venue's default (spot
// 1, linear 25). An unlisted symbol is not_found.
func (c *Client) Orderbook(ctx context.Context, cat messages.Category, symbol string, limit int) (*messages.Orderbook, error) {
	if err := checkMarket(cat, symbol); err != nil {
		return nil, err
	}
	if limit < 0 || limit > MaxOrderbookLimit {
		return nil, messages.InvalidParams("limit", "must be between 1 and 200")
	}
	q := Query{{"category", string(cat)}, {"symbol", symbol}}
	if limit > 0 {
		q = q.Add("limit", strconv.Itoa(limit))
	}
	var res wireOrderbook
	resp, err := c.Get(ctx, PathOrderbook, q, false, &res)
	if err != nil {
		return nil, symbolRefused(err)
	}
	if res.Symbol == "" {
		return nil, notFoundSymbol(PathOrderbook)
	}
	b, err := parseOrderbook(cat, &res)
	if err != nil {
		return nil, c.malformed(PathOrderbook, resp, err)
	}
	return b, nil
}

func parseOrderbook(cat messages.Category, w *wireOrderbook) (*messages.Orderbook, error) {
	var d fieldDecoder
	levels := func(name string, in [][]flexNum) []messages.BookLevel {
		out := make([]messages.BookLevel, 0, len(in))
		for _, l := range in {
			if len(l) < 2 {
				if d.err == nil {
					d.err = errors.New("field " + name + ": level is not [price, size]")
				}
				continue
			}
			out = append(out, messages.BookLevel{Price: d.levelNum(name, l[0]), Size: d.levelNum(name, l[1])})
		}
		return out
	}
	b := &messages.Orderbook{
		Category: cat,
		Symbol:   w.Symbol,
		Bids:     levels("b", w.Bids),
		Asks:     levels("a", w.Asks),
		UpdateID: d.int("u", w.U),
		Time:     d.ms("ts", w.TS),
	}
	if d.err != nil {
		return nil, d.err
	}
	return b, nil
}

// Klines returns candles, newest first as the venue sends them (GET
// /v5/market/kline). Interval is one of messages.KlineIntervals; Limit is
// 1..1000 (0 = the venue's default, 200); zero Start/End are omitted.
func (c *Client) Klines(ctx context.Context, req messages.GetKlinesRequest) ([]messages.Kline, error) {
	if err := checkMarket(req.Category, req.Symbol); err != nil {
		return nil, err
	}
	if !slices.Contains(messages.KlineIntervals, req.Interval) {
		return nil, messages.InvalidParams("interval", "must be one of "+strings.Join(messages.KlineIntervals, ", "))
	}
	if req.Limit < 0 || req.Limit > MaxKlineLimit {
		return nil, messages.InvalidParams("limit", "must be between 1 and 1000")
	}
	if !req.Start.IsZero() && !req.End.IsZero() && req.End.Before(req.Start) {
		return nil, messages.InvalidParams("end_time", "must not be before start_time")
	}
	q := Query{{"category", string(req.Category)}, {"symbol", req.Symbol}, {"interval", req.Interval}}
	if !req.Start.IsZero() {
		q = q.Add("start", strconv.FormatInt(req.Start.UnixMilli(), 10))
	}
	if !req.End.IsZero() {
		q = q.Add("end", strconv.FormatInt(req.End.UnixMilli(), 10))
	}
	if req.Limit > 0 {
		q = q.Add("limit", strconv.Itoa(req.Limit))
	}
	var res struct {
		Symbol string      `json:"symbol"`
		List   [][]flexNum `json:"list"`
	}
	resp, err := c.Get(ctx, PathKline, q, false, &res)
	if err != nil {
		return nil, symbolRefused(err)
	}
	if res.Symbol != "" && res.Symbol != req.Symbol {
		return nil, c.malformed(PathKline, resp, errors.New("result is for another symbol"))
	}
	ks, err := parseKlines(res.List)
	if err != nil {
		return nil, c.malformed(PathKline, resp, err)
	}
	return ks, nil
}

func parseKlines(list [][]flexNum) ([]messages.Kline, error) {
	var d fieldDecoder
	out := make([]messages.Kline, 0, len(list))
	for _, k := range list {
		if len(k) < 7 {
			return nil, errors.New("field list: candle has fewer than 7 values")
		}
		out = append(out, messages.Kline{
			Start:    d.ms("startTime", k[0]),
			Open:     d.decNum("open", k[1]),
			High:     d.decNum("high", k[2]),
			Low:      d.decNum("low", k[3]),
			Close:    d.decNum("close", k[4]),
			Volume:   d.decNum("volume", k[5]),
			Turnover: d.decNum("turnover", k[6]),
		})
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

type wireInstrument struct {
	Symbol      string  `json:"symbol"`
	Status      string  `json:"status"`
	BaseCoin    string  `json:"baseCoin"`
	QuoteCoin   string  `json:"quoteCoin"`
	SettleCoin  string  `json:"settleCoin"`
	PriceScale  flexNum `json:"priceScale"`
	PriceFilter struct {
		MinPrice flexNum `json:"minPrice"`
		MaxPrice flexNum `json:"maxPrice"`
		TickSize flexNum `json:"tickSize"`
	} `json:"priceFilter"`
	LotSizeFilter struct {
		// linear
		MinOrderQty      flexNum `json:"minOrderQty"`
		MaxOrderQty      flexNum `json:"maxOrderQty"`
		MaxMktOrderQty   flexNum `json:"maxMktOrderQty"`
		QtyStep          flexNum `json:"qtyStep"`
		MinNotionalValue flexNum `json:"minNotionalValue"`
		// spot
		BasePrecision     flexNum `json:"basePrecision"`
		MinOrderAmt       flexNum `json:"minOrderAmt"`
		MaxLimitOrderQty  flexNum `json:"maxLimitOrderQty"`
		MaxMarketOrderQty flexNum `json:"maxMarketOrderQty"`
	} `json:"lotSizeFilter"`
	LeverageFilter *struct {
		MinLeverage  flexNum `json:"minLeverage"`
		MaxLeverage  flexNum `json:"maxLeverage"`
		LeverageStep flexNum `json:"leverageStep"`
	} `json:"leverageFilter"`
}

// Instrument returns the trading rules of symbol in cat (GET
// /v5/market/instruments-info), normalised: on spot QtyStep is
// basePrecision, MinOrderQty is that step (Bybit no longer checks spot
// minOrderQty), MinNotional is minOrderAmt, MaxOrderQty is maxLimitOrderQty
// and MaxMarketQty maxMarketOrderQty; on linear MinNotional is
// minNotionalValue, MaxMarketQty maxMktOrderQty and the leverage filter sets
// HasLeverage. An unlisted symbol is not_found.
func (c *Client) Instrument(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error) {
	if err := checkMarket(cat, symbol); err != nil {
		return nil, err
	}
	var res struct {
		List []wireInstrument `json:"list"`
	}
	resp, err := c.Get(ctx, PathInstruments, Query{{"category", string(cat)}, {"symbol", symbol}}, false, &res)
	if err != nil {
		return nil, symbolRefused(err)
	}
	i := slices.IndexFunc(res.List, func(w wireInstrument) bool { return w.Symbol == symbol })
	if i < 0 {
		return nil, notFoundSymbol(PathInstruments)
	}
	in, err := parseInstrument(cat, &res.List[i], c.now())
	if err != nil {
		return nil, c.malformed(PathInstruments, resp, err)
	}
	return in, nil
}

func parseInstrument(cat messages.Category, w *wireInstrument, now time.Time) (*messages.Instrument, error) {
	var d fieldDecoder
	lot := &w.LotSizeFilter
	in := &messages.Instrument{
		Category:   cat,
		Symbol:     w.Symbol,
		Status:     w.Status,
		BaseCoin:   w.BaseCoin,
		QuoteCoin:  w.QuoteCoin,
		SettleCoin: w.SettleCoin,
		TickSize:   d.decNum("tickSize", w.PriceFilter.TickSize),
		MinPrice:   d.decNum("minPrice", w.PriceFilter.MinPrice),
		MaxPrice:   d.decNum("maxPrice", w.PriceFilter.MaxPrice),
		FetchedAt:  now.UTC(),
	}
	switch cat {
	case messages.CategorySpot:
		in.QtyStep = d.decNum("basePrecision", lot.BasePrecision)
		in.MinOrderQty = in.QtyStep
		in.MinNotional = d.decNum("minOrderAmt", lot.MinOrderAmt)
		in.MaxOrderQty = d.decNum("maxLimitOrderQty", lot.MaxLimitOrderQty)
		in.MaxMarketQty = d.decNum("maxMarketOrderQty", lot.MaxMarketOrderQty)
	default:
		in.QtyStep = d.decNum("qtyStep", lot.QtyStep)
		in.MinOrderQty = d.decNum("minOrderQty", lot.MinOrderQty)
		in.MinNotional = d.decNum("minNotionalValue", lot.MinNotionalValue)
		in.MaxOrderQty = d.decNum("maxOrderQty", lot.MaxOrderQty)
		in.MaxMarketQty = d.decNum("maxMktOrderQty", lot.MaxMktOrderQty)
	}
	if lf := w.LeverageFilter; lf != nil {
		in.MinLeverage = d.decNum("minLeverage", lf.MinLeverage)
		in.MaxLeverage = d.decNum("maxLeverage", lf.MaxLeverage)
		in.LeverageStep = d.decNum("leverageStep", lf.LeverageStep)
		in.HasLeverage = in.MaxLeverage.IsPositive()
	}
	if w.PriceScale.set && w.PriceScale.text != "" {
		in.PriceScale = int(d.int("priceScale", w.PriceScale))
	} else if s := in.TickSize.String(); strings.Contains(s, ".") {
		in.PriceScale = len(s) - strings.IndexByte(s, '.') - 1
	}
	if d.err != nil {
		return nil, d.err
	}
	if !in.TickSize.IsPositive() || !in.QtyStep.IsPositive() {
		return nil, errors.New("instrument has no positive tick size or quantity step")
	}
	return in, nil
}

// PriceLimit returns the venue's allowed price band for new orders (GET
// /v5/market/price-limit). An unlisted symbol is not_found.
func (c *Client) PriceLimit(ctx context.Context, cat messages.Category, symbol string) (*messages.PriceLimit, error) {
	if err := checkMarket(cat, symbol); err != nil {
		return nil, err
	}
	var res struct {
		Symbol  string  `json:"symbol"`
		BuyLmt  flexNum `json:"buyLmt"`
		SellLmt flexNum `json:"sellLmt"`
		TS      flexNum `json:"ts"`
	}
	resp, err := c.Get(ctx, PathPriceLimit, Query{{"category", string(cat)}, {"symbol", symbol}}, false, &res)
	if err != nil {
		return nil, symbolRefused(err)
	}
	if res.Symbol == "" {
		return nil, notFoundSymbol(PathPriceLimit)
	}
	var d fieldDecoder
	pl := &messages.PriceLimit{
		Category:  cat,
		Symbol:    res.Symbol,
		BuyLimit:  d.decNum("buyLmt", res.BuyLmt),
		SellLimit: d.decNum("sellLmt", res.SellLmt),
		Time:      d.ms("ts", res.TS),
	}
	if d.err != nil {
		return nil, c.malformed(PathPriceLimit, resp, d.err)
	}
	if pl.Time.IsZero() {
		pl.Time = resp.Time
	}
	return pl, nil
}

// ServerTime returns the venue's clock (GET /v5/market/time), from timeNano,
// else timeSecond, else the envelope time.
func (c *Client) ServerTime(ctx context.Context) (time.Time, error) {
	var res struct {
		TimeSecond flexNum `json:"timeSecond"`
		TimeNano   flexNum `json:"timeNano"`
	}
	resp, err := c.Get(ctx, PathServerTime, nil, false, &res)
	if err != nil {
		return time.Time{}, err
	}
	if ns, err := res.TimeNano.Int64(); err == nil && ns > 0 {
		return time.Unix(0, ns).UTC(), nil
	}
	if s, err := res.TimeSecond.Int64(); err == nil && s > 0 {
		return time.Unix(s, 0).UTC(), nil
	}
	if !resp.Time.IsZero() {
		return resp.Time, nil
	}
	return time.Time{}, c.malformed(PathServerTime, resp, errors.New("no time in the answer"))
}
