package mcp

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Size caps keep every answer far below 20,000 characters (docs/tools.md).
const (
	orderbookDefaultLimit = 25
	orderbookMaxLimit     = 50
	klinesDefaultLimit    = 50
	klinesMaxLimit        = 100
)

func (s *server) marketTools() []*tool {
	return []*tool{
		{
			name:        "get_ticker",
			title:       "Get ticker",
			description: "Last price, best bid/ask and 24 h statistics of one instrument.",
			kind:        KindRead,
			schema:      inputSchema[marketArgs](),
			handle:      s.getTicker,
		},
		{
			name:        "get_orderbook",
			title:       "Get order book",
			description: "Bids and asks of one instrument, best first, up to 50 levels a side.",
			kind:        KindRead,
			schema:      inputSchema[orderbookArgs](),
			handle:      s.getOrderbook,
		},
		{
			name:        "get_klines",
			title:       "Get candles",
			description: "Candles of one instrument, newest first: start, open, high, low, close, volume, turnover.",
			kind:        KindRead,
			schema:      inputSchema[klinesArgs](),
			handle:      s.getKlines,
		},
		{
			name:        "get_instrument",
			title:       "Get instrument rules",
			description: "Rules of one instrument (tick, qty step, minimums, leverage range); read before sizing an order.",
			kind:        KindRead,
			schema:      inputSchema[marketArgs](),
			handle:      s.getInstrument,
		},
	}
}

type tickerOut struct {
	Venue        string          `json:"venue"`
	Category     string          `json:"category"`
	Symbol       string          `json:"symbol"`
	LastPrice    decimal.Decimal `json:"last_price"`
	Bid1Price    decimal.Decimal `json:"bid1_price"`
	Bid1Size     decimal.Decimal `json:"bid1_size"`
	Ask1Price    decimal.Decimal `json:"ask1_price"`
	Ask1Size     decimal.Decimal `json:"ask1_size"`
	PrevPrice24h decimal.Decimal `json:"prev_price_24h"`
	Price24hPcnt decimal.Decimal `json:"price_24h_pcnt"`
	HighPrice24h decimal.Decimal `json:"high_price_24h"`
	LowPrice24h  decimal.Decimal `json:"low_price_24h"`
	Volume24h    decimal.Decimal `json:"volume_24h"`
	Turnover24h  decimal.Decimal `json:"turnover_24h"`
	Derivatives  *derivativesOut `json:"derivatives,omitempty"`
	Time         string          `json:"time,omitempty"`
}

type derivativesOut struct {
	MarkPrice       decimal.Decimal `json:"mark_price"`
	IndexPrice      decimal.Decimal `json:"index_price"`
	FundingRate     decimal.Decimal `json:"funding_rate"`
	OpenInterest    decimal.Decimal `json:"open_interest"`
	NextFundingTime string          `json:"next_funding_time,omitempty"`
}

func (s *server) getTicker(ctx context.Context, c *call) (any, error) {
	sym, cat := c.args.symbol(), c.args.category()
	if err := c.args.done(); err != nil {
		return nil, err
	}
	t, err := s.opts.Backend.Ticker(ctx, &messages.GetTickerRequest{Category: cat, Symbol: sym})
	if err != nil {
		return nil, err
	}
	if !boundedDecimals(t.LastPrice, t.Bid1Price, t.Bid1Size, t.Ask1Price, t.Ask1Size, t.PrevPrice24h, t.Price24hPcnt,
		t.HighPrice24h, t.LowPrice24h, t.Volume24h, t.Turnover24h, t.MarkPrice, t.IndexPrice, t.FundingRate, t.OpenInterest) {
		return nil, malformedAnswer()
	}
	out := tickerOut{
		Venue: s.opts.Venue, Category: string(cat), Symbol: sym,
		LastPrice: t.LastPrice, Bid1Price: t.Bid1Price, Bid1Size: t.Bid1Size, Ask1Price: t.Ask1Price, Ask1Size: t.Ask1Size,
		PrevPrice24h: t.PrevPrice24h, Price24hPcnt: t.Price24hPcnt, HighPrice24h: t.HighPrice24h, LowPrice24h: t.LowPrice24h,
		Volume24h: t.Volume24h, Turnover24h: t.Turnover24h, Time: rfc3339(t.Time),
	}
	if t.HasDerivatives {
		out.Derivatives = &derivativesOut{
			MarkPrice: t.MarkPrice, IndexPrice: t.IndexPrice, FundingRate: t.FundingRate,
			OpenInterest: t.OpenInterest, NextFundingTime: rfc3339(t.NextFundingTime),
		}
	}
	return out, nil
}

type levelOut [2]decimal.Decimal

type orderbookOut struct {
	Venue    string     `json:"venue"`
	Category string     `json:"category"`
	Symbol   string     `json:"symbol"`
	Columns  [2]string  `json:"columns"`
	Bids     []levelOut `json:"bids"`
	Asks     []levelOut `json:"asks"`
	Time     string     `json:"time,omitempty"`
	// Omitted counts levels left out because a number was malformed.
	Omitted int `json:"omitted,omitempty"`
}

func (s *server) getOrderbook(ctx context.Context, c *call) (any, error) {
	sym, cat := c.args.symbol(), c.args.category()
	limit := c.args.integer("limit", orderbookDefaultLimit, 1, orderbookMaxLimit)
	if err := c.args.done(); err != nil {
		return nil, err
	}
	b, err := s.opts.Backend.Orderbook(ctx, &messages.GetOrderbookRequest{Category: cat, Symbol: sym, Limit: limit})
	if err != nil {
		return nil, err
	}
	// The symbol and category shown are the ones asked for: the venue's
	// own spelling is exchange text and never reaches the agent.
	out := orderbookOut{Venue: s.opts.Venue, Category: string(cat), Symbol: sym, Columns: [2]string{"price", "size"}, Time: rfc3339(b.Time)}
	var dropped int
	out.Bids, dropped = levels(b.Bids, limit)
	out.Omitted += dropped
	out.Asks, dropped = levels(b.Asks, limit)
	out.Omitted += dropped
	return out, nil
}

// levels keeps at most limit well-formed levels and counts the others.
func levels(in []messages.BookLevel, limit int) ([]levelOut, int) {
	out := make([]levelOut, 0, min(len(in), limit))
	omitted := 0
	for i := 0; i < len(in) && len(out) < limit; i++ {
		if !boundedDecimals(in[i].Price, in[i].Size) {
			omitted++
			continue
		}
		out = append(out, levelOut{in[i].Price, in[i].Size})
	}
	return out, omitted
}

// klineColumns name the fields of each candle row; rows instead of
// objects keep 100 candles near 10,000 characters.
var klineColumns = [7]string{"start", "open", "high", "low", "close", "volume", "turnover"}

type klinesOut struct {
	Venue    string      `json:"venue"`
	Category string      `json:"category"`
	Symbol   string      `json:"symbol"`
	Interval string      `json:"interval"`
	Columns  [7]string   `json:"columns"`
	Klines   [][7]string `json:"klines"`
	// Omitted counts candles left out because a number was malformed.
	Omitted int `json:"omitted,omitempty"`
}

func (s *server) getKlines(ctx context.Context, c *call) (any, error) {
	sym, cat := c.args.symbol(), c.args.category()
	interval := c.args.enum("interval", true, messages.KlineIntervals...)
	limit := c.args.integer("limit", klinesDefaultLimit, 1, klinesMaxLimit)
	start, end := c.args.timestamp("start_time"), c.args.timestamp("end_time")
	if err := c.args.done(); err != nil {
		return nil, err
	}
	if !start.IsZero() && !end.IsZero() && end.Before(start) {
		return nil, messages.InvalidParams("end_time", "must not be before start_time")
	}
	ks, err := s.opts.Backend.Klines(ctx, &messages.GetKlinesRequest{
		Category: cat, Symbol: sym, Interval: interval, Limit: limit, Start: start, End: end,
	})
	if err != nil {
		return nil, err
	}
	out := klinesOut{Venue: s.opts.Venue, Category: string(cat), Symbol: sym, Interval: interval, Columns: klineColumns, Klines: make([][7]string, 0, len(ks))}
	for _, k := range ks {
		if len(out.Klines) == limit {
			break
		}
		if !boundedDecimals(k.Open, k.High, k.Low, k.Close, k.Volume, k.Turnover) {
			out.Omitted++
			continue
		}
		out.Klines = append(out.Klines, [7]string{
			rfc3339(k.Start), k.Open.String(), k.High.String(), k.Low.String(), k.Close.String(), k.Volume.String(), k.Turnover.String(),
		})
	}
	return out, nil
}

type instrumentOut struct {
	Venue       string           `json:"venue"`
	Category    string           `json:"category"`
	Symbol      string           `json:"symbol"`
	Status      string           `json:"status"`
	BaseCoin    string           `json:"base_coin"`
	QuoteCoin   string           `json:"quote_coin"`
	SettleCoin  string           `json:"settle_coin,omitempty"`
	TickSize    decimal.Decimal  `json:"tick_size"`
	MinPrice    *decimal.Decimal `json:"min_price,omitempty"`
	MaxPrice    *decimal.Decimal `json:"max_price,omitempty"`
	QtyStep     decimal.Decimal  `json:"qty_step"`
	MinOrderQty decimal.Decimal  `json:"min_order_qty"`
	MaxOrderQty decimal.Decimal  `json:"max_order_qty"`
	MaxMarket   decimal.Decimal  `json:"max_market_order_qty"`
	MinNotional decimal.Decimal  `json:"min_order_value"`
	Leverage    *leverageOut     `json:"leverage,omitempty"`
}

type leverageOut struct {
	Min  decimal.Decimal `json:"min"`
	Max  decimal.Decimal `json:"max"`
	Step decimal.Decimal `json:"step"`
}

func (s *server) getInstrument(ctx context.Context, c *call) (any, error) {
	sym, cat := c.args.symbol(), c.args.category()
	if err := c.args.done(); err != nil {
		return nil, err
	}
	in, err := s.opts.Backend.Instrument(ctx, &messages.GetInstrumentRequest{Category: cat, Symbol: sym})
	if err != nil {
		return nil, err
	}
	if !boundedDecimals(in.TickSize, in.MinPrice, in.MaxPrice, in.QtyStep, in.MinOrderQty, in.MaxOrderQty, in.MaxMarketQty,
		in.MinNotional, in.MinLeverage, in.MaxLeverage, in.LeverageStep) {
		return nil, malformedAnswer()
	}
	out := instrumentOut{
		Venue: s.opts.Venue, Category: string(cat), Symbol: sym, Status: sanitizeWord(in.Status),
		BaseCoin: sanitizeWord(in.BaseCoin), QuoteCoin: sanitizeWord(in.QuoteCoin), SettleCoin: sanitizeWord(in.SettleCoin),
		TickSize: in.TickSize, QtyStep: in.QtyStep, MinOrderQty: in.MinOrderQty, MaxOrderQty: in.MaxOrderQty,
		MaxMarket: in.MaxMarketQty, MinNotional: in.MinNotional,
	}
	if !in.MinPrice.IsZero() || !in.MaxPrice.IsZero() {
		lo, hi := in.MinPrice, in.MaxPrice
		out.MinPrice, out.MaxPrice = &lo, &hi
	}
	if in.HasLeverage {
		out.Leverage = &leverageOut{Min: in.MinLeverage, Max: in.MaxLeverage, Step: in.LeverageStep}
	}
	return out, nil
}

// boundedDecimals reports whether every value prints in at most
// maxDecimalLen characters: a price of a million digits (or 1e10000, which
// the decimal parser accepts) must not flood the agent's context.
func boundedDecimals(ds ...decimal.Decimal) bool {
	for _, d := range ds {
		if !decimalFits(d) {
			return false
		}
	}
	return true
}

// malformedAnswer is the refusal for a venue answer this server will not
// show.
func malformedAnswer() error {
	return &messages.Error{
		Code:     messages.CodeExchangeUnavailable,
		Message:  "the venue answered with a malformed number",
		NextStep: "call again later; if it persists, ask the operator to check the venue",
	}
}

// sanitizeWord keeps an exchange-supplied identifier only if it is a plain
// word; anything else could carry text aimed at the model.
func sanitizeWord(s string) string {
	if len(s) > 32 {
		return ""
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return ""
		}
	}
	return s
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
