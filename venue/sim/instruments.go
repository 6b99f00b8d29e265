package sim

import (
	"hash/fnv"
	"sort"

	"github.com/shopspring/decimal"
)

// Categories the simulator lists instruments for. "inverse" and "option"
// are valid Bybit categories with no instruments here.
const (
	catSpot    = "spot"
	catLinear  = "linear"
	catInverse = "inverse"
	catOption  = "option"
)

// knownCategory reports whether c is a Bybit category at all.
func knownCategory(c string) bool {
	return c == catSpot || c == catLinear || c == catInverse || c == catOption
}

// An underlying is what a spot pair and its linear perpetual both track; the
// price walk is per underlying so spot and linear stay close.
type underlying struct {
	symbol string
	base   float64 // centre of the walk, quote coin
	vol    float64 // walk amplitude per sqrt(day), log scale
	hash   uint64
}

// An instrument is one tradable symbol of one category with its rules. Rule
// strings are kept exactly as Bybit spells them (trailing zeros included);
// the decimals are parsed from them. Immutable.
type instrument struct {
	category string
	symbol   string
	baseCoin string
	quote    string
	under    *underlying
	hash     uint64 // of category and symbol
	symbolID int
	launchMs int64

	tickStr    string
	tick       decimal.Decimal
	priceScale int32 // decimals of a price
	stepStr    string
	step       decimal.Decimal // linear qtyStep, spot basePrecision
	qtyScale   int32           // decimals of a quantity

	// linear
	minPrice, maxPrice               string
	minOrderQty, maxOrderQty         string
	maxMktOrderQty, minNotionalValue string
	minLeverage, maxLeverage         string
	leverageStep                     string

	// spot
	quotePrecision            string
	spotMinOrderQty           string // deprecated field, still sent
	spotMaxOrderQty           string // deprecated field, still sent
	minOrderAmt, maxOrderAmt  string
	maxLimitOrderQty          string
	maxMarketOrderQty         string
	postOnlyMaxLimitOrderSize string

	limitX, limitY string // riskParameters.priceLimitRatioX/Y

	// market-data shape
	bookUnit  float64 // typical size of a book level, base coin
	volPerMin float64 // typical traded volume per minute, base coin
	oiBase    float64 // typical open interest, base coin (linear)
}

// catalog holds every instrument, by category and symbol, and in listing
// order. Immutable after newCatalog.
type catalog struct {
	bySymbol map[string]map[string]*instrument
	list     map[string][]*instrument
}

func (c *catalog) get(category, symbol string) *instrument {
	return c.bySymbol[category][symbol]
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

func scaleOf(s string) int32 {
	d := decimal.RequireFromString(s)
	if e := d.Exponent(); e < 0 {
		return -e
	}
	return 0
}

func newCatalog() *catalog {
	btc := &underlying{symbol: "BTCUSDT", base: 67000, vol: 0.030}
	eth := &underlying{symbol: "ETHUSDT", base: 3500, vol: 0.040}
	sol := &underlying{symbol: "SOLUSDT", base: 150, vol: 0.055}
	for _, u := range []*underlying{btc, eth, sol} {
		u.hash = hashString("underlying/" + u.symbol)
	}

	linear := func(u *underlying, base string, id int, launch int64, tick, minP, maxP, step, minQ, maxQ, maxMkt, maxLev string, bookUnit, volPerMin, oi float64) *instrument {
		return &instrument{
			category: catLinear, symbol: u.symbol, baseCoin: base, quote: "USDT", under: u,
			symbolID: id, launchMs: launch,
			tickStr: tick, minPrice: minP, maxPrice: maxP,
			stepStr: step, minOrderQty: minQ, maxOrderQty: maxQ, maxMktOrderQty: maxMkt,
			minNotionalValue: "5",
			minLeverage:      "1", maxLeverage: maxLev, leverageStep: "0.01",
			limitX: "0.01", limitY: "0.02",
			bookUnit: bookUnit, volPerMin: volPerMin, oiBase: oi,
		}
	}
	spot := func(u *underlying, base string, id int, launch int64, tick, basePrec, quotePrec, minQ, maxQ, maxLimit, maxMarket, postOnly string, bookUnit, volPerMin float64) *instrument {
		return &instrument{
			category: catSpot, symbol: u.symbol, baseCoin: base, quote: "USDT", under: u,
			symbolID: id, launchMs: launch,
			tickStr: tick, stepStr: basePrec, quotePrecision: quotePrec,
			spotMinOrderQty: minQ, spotMaxOrderQty: maxQ,
			minOrderAmt: "5", maxOrderAmt: "2000000",
			maxLimitOrderQty: maxLimit, maxMarketOrderQty: maxMarket, postOnlyMaxLimitOrderSize: postOnly,
			limitX: "0.05", limitY: "0.05",
			bookUnit: bookUnit, volPerMin: volPerMin,
		}
	}

	all := []*instrument{
		linear(btc, "BTC", 1, 1585526400000, "0.10", "0.10", "1999999.80", "0.001", "0.001", "1190.000", "500.000", "100.00", 0.5, 25, 55000),
		linear(eth, "ETH", 2, 1615766400000, "0.01", "0.01", "199999.98", "0.01", "0.01", "7240.00", "3620.00", "100.00", 5, 300, 1200000),
		linear(sol, "SOL", 3, 1630281600000, "0.010", "0.010", "19999.980", "0.1", "0.1", "79770.0", "25000.0", "75.00", 100, 4000, 9000000),
		spot(btc, "BTC", 101, 1625097600000, "0.01", "0.000001", "0.0000001", "0.000048", "71.73956243", "83", "41.5", "415", 0.1, 5),
		spot(eth, "ETH", 102, 1625097600000, "0.01", "0.00001", "0.0000001", "0.00062", "1229.2336343", "1500", "750", "7500", 1, 60),
		spot(sol, "SOL", 103, 1633046400000, "0.01", "0.001", "0.0000001", "0.054", "12000", "30000", "15000", "150000", 20, 900),
	}

	c := &catalog{
		bySymbol: map[string]map[string]*instrument{catSpot: {}, catLinear: {}, catInverse: {}, catOption: {}},
		list:     map[string][]*instrument{},
	}
	for _, in := range all {
		in.tick = decimal.RequireFromString(in.tickStr)
		in.priceScale = scaleOf(in.tickStr)
		in.step = decimal.RequireFromString(in.stepStr)
		in.qtyScale = scaleOf(in.stepStr)
		in.hash = hashString(in.category + "/" + in.symbol)
		c.bySymbol[in.category][in.symbol] = in
		c.list[in.category] = append(c.list[in.category], in)
	}
	for _, l := range c.list {
		sort.Slice(l, func(i, j int) bool { return l[i].symbol < l[j].symbol })
	}
	return c
}

// JSON shapes of /v5/market/instruments-info (docs/bybit.md "Market endpoints").

type leverageFilterJSON struct {
	MinLeverage  string `json:"minLeverage"`
	MaxLeverage  string `json:"maxLeverage"`
	LeverageStep string `json:"leverageStep"`
}

type linearPriceFilterJSON struct {
	MinPrice string `json:"minPrice"`
	MaxPrice string `json:"maxPrice"`
	TickSize string `json:"tickSize"`
}

type linearLotSizeFilterJSON struct {
	MaxOrderQty         string `json:"maxOrderQty"`
	MinOrderQty         string `json:"minOrderQty"`
	QtyStep             string `json:"qtyStep"`
	PostOnlyMaxOrderQty string `json:"postOnlyMaxOrderQty"`
	MaxMktOrderQty      string `json:"maxMktOrderQty"`
	MinNotionalValue    string `json:"minNotionalValue"`
}

type riskParametersJSON struct {
	PriceLimitRatioX string `json:"priceLimitRatioX"`
	PriceLimitRatioY string `json:"priceLimitRatioY"`
}

type linearInstrumentJSON struct {
	Symbol              string                  `json:"symbol"`
	SymbolID            int                     `json:"symbolId"`
	ContractType        string                  `json:"contractType"`
	Status              string                  `json:"status"`
	BaseCoin            string                  `json:"baseCoin"`
	QuoteCoin           string                  `json:"quoteCoin"`
	LaunchTime          string                  `json:"launchTime"`
	DeliveryTime        string                  `json:"deliveryTime"`
	DeliveryFeeRate     string                  `json:"deliveryFeeRate"`
	PriceScale          string                  `json:"priceScale"`
	LeverageFilter      leverageFilterJSON      `json:"leverageFilter"`
	PriceFilter         linearPriceFilterJSON   `json:"priceFilter"`
	LotSizeFilter       linearLotSizeFilterJSON `json:"lotSizeFilter"`
	UnifiedMarginTrade  bool                    `json:"unifiedMarginTrade"`
	FundingInterval     int                     `json:"fundingInterval"`
	SettleCoin          string                  `json:"settleCoin"`
	CopyTrading         string                  `json:"copyTrading"`
	UpperFundingRate    string                  `json:"upperFundingRate"`
	LowerFundingRate    string                  `json:"lowerFundingRate"`
	IsPreListing        bool                    `json:"isPreListing"`
	PreListingInfo      *struct{}               `json:"preListingInfo"`
	RiskParameters      riskParametersJSON      `json:"riskParameters"`
	DisplayName         string                  `json:"displayName"`
	SymbolType          string                  `json:"symbolType"`
	ForbidUplWithdrawal bool                    `json:"forbidUplWithdrawal"`
}

type spotLotSizeFilterJSON struct {
	BasePrecision             string `json:"basePrecision"`
	QuotePrecision            string `json:"quotePrecision"`
	MinOrderQty               string `json:"minOrderQty"`
	MaxOrderQty               string `json:"maxOrderQty"`
	MinOrderAmt               string `json:"minOrderAmt"`
	MaxOrderAmt               string `json:"maxOrderAmt"`
	MaxLimitOrderQty          string `json:"maxLimitOrderQty"`
	MaxMarketOrderQty         string `json:"maxMarketOrderQty"`
	PostOnlyMaxLimitOrderSize string `json:"postOnlyMaxLimitOrderSize"`
}

type spotPriceFilterJSON struct {
	TickSize string `json:"tickSize"`
}

type spotInstrumentJSON struct {
	Symbol         string                `json:"symbol"`
	SymbolID       int                   `json:"symbolId"`
	BaseCoin       string                `json:"baseCoin"`
	QuoteCoin      string                `json:"quoteCoin"`
	Innovation     string                `json:"innovation"`
	Status         string                `json:"status"`
	MarginTrading  string                `json:"marginTrading"`
	StTag          string                `json:"stTag"`
	LotSizeFilter  spotLotSizeFilterJSON `json:"lotSizeFilter"`
	PriceFilter    spotPriceFilterJSON   `json:"priceFilter"`
	RiskParameters riskParametersJSON    `json:"riskParameters"`
	SymbolType     string                `json:"symbolType"`
}

func (in *instrument) linearJSON() linearInstrumentJSON {
	return linearInstrumentJSON{
		Symbol:          in.symbol,
		SymbolID:        in.symbolID,
		ContractType:    "LinearPerpetual",
		Status:          "Trading",
		BaseCoin:        in.baseCoin,
		QuoteCoin:       in.quote,
		LaunchTime:      itoa(in.launchMs),
		DeliveryTime:    "0",
		DeliveryFeeRate: "",
		PriceScale:      itoa(int64(in.priceScale)),
		LeverageFilter: leverageFilterJSON{
			MinLeverage: in.minLeverage, MaxLeverage: in.maxLeverage, LeverageStep: in.leverageStep,
		},
		PriceFilter: linearPriceFilterJSON{MinPrice: in.minPrice, MaxPrice: in.maxPrice, TickSize: in.tickStr},
		LotSizeFilter: linearLotSizeFilterJSON{
			MaxOrderQty: in.maxOrderQty, MinOrderQty: in.minOrderQty, QtyStep: in.stepStr,
			PostOnlyMaxOrderQty: in.maxOrderQty, MaxMktOrderQty: in.maxMktOrderQty,
			MinNotionalValue: in.minNotionalValue,
		},
		UnifiedMarginTrade: true,
		FundingInterval:    480,
		SettleCoin:         in.quote,
		CopyTrading:        "both",
		UpperFundingRate:   "0.005",
		LowerFundingRate:   "-0.005",
		IsPreListing:       false,
		PreListingInfo:     nil,
		RiskParameters:     riskParametersJSON{PriceLimitRatioX: in.limitX, PriceLimitRatioY: in.limitY},
		DisplayName:        "",
		SymbolType:         "",
	}
}

func (in *instrument) spotJSON() spotInstrumentJSON {
	return spotInstrumentJSON{
		Symbol:        in.symbol,
		SymbolID:      in.symbolID,
		BaseCoin:      in.baseCoin,
		QuoteCoin:     in.quote,
		Innovation:    "0",
		Status:        "Trading",
		MarginTrading: "utaOnly",
		StTag:         "0",
		LotSizeFilter: spotLotSizeFilterJSON{
			BasePrecision: in.stepStr, QuotePrecision: in.quotePrecision,
			MinOrderQty: in.spotMinOrderQty, MaxOrderQty: in.spotMaxOrderQty,
			MinOrderAmt: in.minOrderAmt, MaxOrderAmt: in.maxOrderAmt,
			MaxLimitOrderQty: in.maxLimitOrderQty, MaxMarketOrderQty: in.maxMarketOrderQty,
			PostOnlyMaxLimitOrderSize: in.postOnlyMaxLimitOrderSize,
		},
		PriceFilter:    spotPriceFilterJSON{TickSize: in.tickStr},
		RiskParameters: riskParametersJSON{PriceLimitRatioX: in.limitX, PriceLimitRatioY: in.limitY},
		SymbolType:     "",
	}
}
