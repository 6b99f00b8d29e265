package messages

import (
	"regexp"
	"time"

	"github.com/shopspring/decimal"
)

// Category is a Bybit product category this server trades: "spot" or
// "linear".
type Category string

// The categories of docs/tools.md.
const (
	CategorySpot   Category = "spot"
	CategoryLinear Category = "linear"
)

// Valid reports whether c is one of the supported categories.
func (c Category) Valid() bool { return c == CategorySpot || c == CategoryLinear }

// Ticker is a snapshot of one instrument's prices. Fields the venue does not
// report for a category (mark, index, funding on spot) are zero and
// flagged by the Has* fields.
type Ticker struct {
	Category     Category
	Symbol       string
	LastPrice    decimal.Decimal
	Bid1Price    decimal.Decimal
	Bid1Size     decimal.Decimal
	Ask1Price    decimal.Decimal
	Ask1Size     decimal.Decimal
	PrevPrice24h decimal.Decimal
	// Price24hPcnt is a fraction: 0.0068 means +0.68 %.
	Price24hPcnt decimal.Decimal
	HighPrice24h decimal.Decimal
	LowPrice24h  decimal.Decimal
	Volume24h    decimal.Decimal
	Turnover24h  decimal.Decimal
	// Linear only; HasDerivatives is false on spot.
	HasDerivatives  bool
	MarkPrice       decimal.Decimal
	IndexPrice      decimal.Decimal
	FundingRate     decimal.Decimal
	OpenInterest    decimal.Decimal
	NextFundingTime time.Time
	// Time is the venue's time for this answer.
	Time time.Time
}

// BookLevel is one price level of an order book.
type BookLevel struct {
	Price decimal.Decimal
	Size  decimal.Decimal
}

// Orderbook is a depth snapshot: bids descending, asks ascending.
type Orderbook struct {
	Category Category
	Symbol   string
	Bids     []BookLevel
	Asks     []BookLevel
	// UpdateID is the venue's book update id ("u").
	UpdateID int64
	Time     time.Time
}

// Kline is one candle.
type Kline struct {
	Start    time.Time
	Open     decimal.Decimal
	High     decimal.Decimal
	Low      decimal.Decimal
	Close    decimal.Decimal
	Volume   decimal.Decimal
	Turnover decimal.Decimal
}

// KlineIntervals are the candle intervals Bybit accepts, in its spelling.
var KlineIntervals = []string{"1", "3", "5", "15", "30", "60", "120", "240", "360", "720", "D", "W", "M"}

// Instrument holds the trading rules of one symbol, normalised across
// categories: for spot, QtyStep is basePrecision and MinNotional is
// minOrderAmt; for linear, MinNotional is minNotionalValue.
type Instrument struct {
	Category   Category
	Symbol     string
	Status     string
	BaseCoin   string
	QuoteCoin  string
	SettleCoin string
	TickSize   decimal.Decimal
	// MinPrice and MaxPrice are zero when the venue does not bound them (spot).
	MinPrice     decimal.Decimal
	MaxPrice     decimal.Decimal
	QtyStep      decimal.Decimal
	MinOrderQty  decimal.Decimal
	MaxOrderQty  decimal.Decimal
	MaxMarketQty decimal.Decimal
	MinNotional  decimal.Decimal
	MinLeverage  decimal.Decimal
	MaxLeverage  decimal.Decimal
	LeverageStep decimal.Decimal
	HasLeverage  bool
	PriceScale   int
	FetchedAt    time.Time
}

// PriceLimit is the venue's allowed price band for new orders.
type PriceLimit struct {
	Category Category
	Symbol   string
	// BuyLimit is the highest allowed buy price, SellLimit the lowest sell.
	BuyLimit  decimal.Decimal
	SellLimit decimal.Decimal
	Time      time.Time
}

// GetTickerRequest asks for one instrument's ticker.
type GetTickerRequest struct {
	Category Category
	Symbol   string
}

// GetOrderbookRequest asks for a depth snapshot. Limit is the number of
// levels per side (1..200 at the MCP edge).
type GetOrderbookRequest struct {
	Category Category
	Symbol   string
	Limit    int
}

// GetKlinesRequest asks for candles. Start and End are optional (zero =
// unset); Limit is 1..1000.
type GetKlinesRequest struct {
	Category Category
	Symbol   string
	Interval string
	Limit    int
	Start    time.Time
	End      time.Time
}

// GetInstrumentRequest asks for one symbol's trading rules.
type GetInstrumentRequest struct {
	Category Category
	Symbol   string
}

// SymbolPattern is the one rule for an instrument symbol (uppercase letters
// and digits, 2-30), without anchors; SymbolRE is it anchored. The MCP
// argument readers and schemas, the venue client and the policy allowlist
// all use it.
const SymbolPattern = `[A-Z0-9]{2,30}`

// SymbolRE matches a whole symbol.
var SymbolRE = regexp.MustCompile(`^` + SymbolPattern + `$`)

// SymbolReason is the invalid_params reason of a symbol SymbolRE refuses,
// whichever tool reads it.
const SymbolReason = "must match ^" + SymbolPattern + "$ (uppercase, e.g. BTCUSDT)"
