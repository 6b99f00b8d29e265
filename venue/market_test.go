package venue

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// samples maps "path?category" to a testdata file.
var samples = map[string]string{
	PathTickers + "?linear":     "v5-market-tickers.linear.ccxt.json",
	PathTickers + "?spot":       "v5-market-tickers.spot.handmade.json",
	PathOrderbook + "?linear":   "v5-market-orderbook.linear.ccxt.json",
	PathOrderbook + "?spot":     "v5-market-orderbook.spot.ccxt.json",
	PathKline + "?linear":       "v5-market-kline.linear.ccxt.json",
	PathInstruments + "?linear": "v5-market-instruments-info.linear.handmade.json",
	PathInstruments + "?spot":   "v5-market-instruments-info.spot.handmade.json",
	PathPriceLimit + "?linear":  "v5-market-price-limit.linear.handmade.json",
	PathServerTime + "?":        "v5-market-time.handmade.json",
}

// sampleServer serves the recorded samples and remembers the last query
// per path.
func sampleServer(t *testing.T) (*fakeVenue, func(path string) url.Values) {
	var mu sync.Mutex
	last := map[string]url.Values{}
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last[r.URL.Path] = r.URL.Query()
		mu.Unlock()
		name, ok := samples[r.URL.Path+"?"+r.URL.Query().Get("category")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(readTestdata(t, name))
	})
	return fv, func(path string) url.Values {
		mu.Lock()
		defer mu.Unlock()
		return last[path]
	}
}

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// eq checks decimals by value, naming the field.
func eq(t *testing.T, field string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(d(want)) {
		t.Errorf("%s = %s, want %s", field, got, want)
	}
}

func TestTickerLinearSample(t *testing.T) {
	fv, last := sampleServer(t)
	c, _ := newTestClient(t, fv.URL)
	tk, err := c.Ticker(context.Background(), messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	if q := last(PathTickers); q.Get("category") != "linear" || q.Get("symbol") != "BTCUSDT" {
		t.Fatalf("query %v", q)
	}
	if tk.Category != messages.CategoryLinear || tk.Symbol != "BTCUSDT" || !tk.HasDerivatives {
		t.Fatalf("ticker %+v", tk)
	}
	eq(t, "LastPrice", tk.LastPrice, "51444.40")
	eq(t, "Bid1Price", tk.Bid1Price, "51444.30")
	eq(t, "Bid1Size", tk.Bid1Size, "55.841")
	eq(t, "Ask1Price", tk.Ask1Price, "51444.40")
	eq(t, "Ask1Size", tk.Ask1Size, "491.691")
	eq(t, "PrevPrice24h", tk.PrevPrice24h, "50147.50")
	eq(t, "Price24hPcnt", tk.Price24hPcnt, "0.025861")
	eq(t, "HighPrice24h", tk.HighPrice24h, "51444.40")
	eq(t, "LowPrice24h", tk.LowPrice24h, "48381.60")
	eq(t, "Volume24h", tk.Volume24h, "47293.8870")
	eq(t, "Turnover24h", tk.Turnover24h, "2352063794.0035")
	eq(t, "MarkPrice", tk.MarkPrice, "51444.40")
	eq(t, "IndexPrice", tk.IndexPrice, "51469.95")
	eq(t, "FundingRate", tk.FundingRate, "-0.00046295")
	eq(t, "OpenInterest", tk.OpenInterest, "225766.793")
	if !tk.NextFundingTime.Equal(time.UnixMilli(1707926400000)) {
		t.Errorf("NextFundingTime %v", tk.NextFundingTime)
	}
	// The recorded envelope has "time" as a string.
	if !tk.Time.Equal(time.UnixMilli(1707905549267)) {
		t.Errorf("Time %v", tk.Time)
	}
}

func TestTickerSpot(t *testing.T) {
	fv, _ := sampleServer(t)
	c, _ := newTestClient(t, fv.URL)
	tk, err := c.Ticker(context.Background(), messages.CategorySpot, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	if tk.HasDerivatives || !tk.MarkPrice.IsZero() || !tk.NextFundingTime.IsZero() {
		t.Fatalf("spot ticker has derivative fields: %+v", tk)
	}
	eq(t, "LastPrice", tk.LastPrice, "20533.13")
	eq(t, "Price24hPcnt", tk.Price24hPcnt, "0.0068")
	if !tk.Time.Equal(time.UnixMilli(1673859087947)) {
		t.Errorf("Time %v", tk.Time)
	}
}

func TestOrderbookSamples(t *testing.T) {
	cases := []struct {
		cat                         messages.Category
		bid0, bid0Size, ask1, ask1S string
		u                           int64
		ts                          int64
	}{
		{messages.CategoryLinear, "42544.7", "172.404", "42548.2", "75.008", 342690, 1706803948569},
		{messages.CategorySpot, "29861", "0.00101", "29988.93", "0.112648", 4313234, 1706803989954},
	}
	for _, tc := range cases {
		t.Run(string(tc.cat), func(t *testing.T) {
			fv, last := sampleServer(t)
			c, _ := newTestClient(t, fv.URL)
			b, err := c.Orderbook(context.Background(), tc.cat, "BTCUSDT", 50)
			if err != nil {
				t.Fatal(err)
			}
			if q := last(PathOrderbook); q.Get("limit") != "50" {
				t.Fatalf("limit not sent: %v", q)
			}
			if b.Symbol != "BTCUSDT" || b.Category != tc.cat || len(b.Bids) != 2 || len(b.Asks) != 2 {
				t.Fatalf("book %+v", b)
			}
			eq(t, "bid0", b.Bids[0].Price, tc.bid0)
			eq(t, "bid0 size", b.Bids[0].Size, tc.bid0Size)
			eq(t, "ask1", b.Asks[1].Price, tc.ask1)
			eq(t, "ask1 size", b.Asks[1].Size, tc.ask1S)
			if !b.Bids[0].Price.GreaterThan(b.Bids[1].Price) || !b.Asks[0].Price.LessThan(b.Asks[1].Price) {
				t.Fatal("bids must be descending and asks ascending")
			}
			if b.UpdateID != tc.u || !b.Time.Equal(time.UnixMilli(tc.ts)) {
				t.Fatalf("u %d ts %v", b.UpdateID, b.Time)
			}
		})
	}
}

func TestKlinesSample(t *testing.T) {
	fv, last := sampleServer(t)
	c, _ := newTestClient(t, fv.URL)
	start := time.UnixMilli(1706630400000)
	end := time.UnixMilli(1706637600000)
	ks, err := c.Klines(context.Background(), messages.GetKlinesRequest{
		Category: messages.CategoryLinear, Symbol: "BTCUSDT", Interval: "60", Limit: 3, Start: start, End: end,
	})
	if err != nil {
		t.Fatal(err)
	}
	q := last(PathKline)
	if q.Get("interval") != "60" || q.Get("limit") != "3" || q.Get("start") != "1706630400000" || q.Get("end") != "1706637600000" {
		t.Fatalf("query %v", q)
	}
	if len(ks) != 3 {
		t.Fatalf("%d candles", len(ks))
	}
	k := ks[0] // newest first, as sent
	if !k.Start.Equal(time.UnixMilli(1706637600000)) || !ks[2].Start.Equal(start) {
		t.Fatalf("order %v .. %v", k.Start, ks[2].Start)
	}
	eq(t, "open", k.Open, "43376.1")
	eq(t, "high", k.High, "43474.1")
	eq(t, "low", k.Low, "43264.8")
	eq(t, "close", k.Close, "43352.8")
	eq(t, "volume", k.Volume, "1575.305")
	eq(t, "turnover", k.Turnover, "68345898.1407")
}

func TestInstrumentLinear(t *testing.T) {
	fv, _ := sampleServer(t)
	c, _ := newTestClient(t, fv.URL)
	in, err := c.Instrument(context.Background(), messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != "Trading" || in.BaseCoin != "BTC" || in.QuoteCoin != "USDT" || in.SettleCoin != "USDT" {
		t.Fatalf("identity %+v", in)
	}
	eq(t, "TickSize", in.TickSize, "0.10")
	eq(t, "MinPrice", in.MinPrice, "0.10")
	eq(t, "MaxPrice", in.MaxPrice, "1999999.80")
	eq(t, "QtyStep", in.QtyStep, "0.001")
	eq(t, "MinOrderQty", in.MinOrderQty, "0.001")
	eq(t, "MaxOrderQty", in.MaxOrderQty, "1190")
	eq(t, "MaxMarketQty", in.MaxMarketQty, "500")
	eq(t, "MinNotional", in.MinNotional, "5")
	eq(t, "MinLeverage", in.MinLeverage, "1")
	eq(t, "MaxLeverage", in.MaxLeverage, "100")
	eq(t, "LeverageStep", in.LeverageStep, "0.01")
	if !in.HasLeverage || in.PriceScale != 2 || !in.FetchedAt.Equal(fixedNow) {
		t.Fatalf("HasLeverage %v PriceScale %d FetchedAt %v", in.HasLeverage, in.PriceScale, in.FetchedAt)
	}
}

func TestInstrumentSpotNormalised(t *testing.T) {
	fv, _ := sampleServer(t)
	c, _ := newTestClient(t, fv.URL)
	in, err := c.Instrument(context.Background(), messages.CategorySpot, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "TickSize", in.TickSize, "0.1")
	eq(t, "QtyStep (basePrecision)", in.QtyStep, "0.000001")
	eq(t, "MinOrderQty (= step)", in.MinOrderQty, "0.000001")
	eq(t, "MinNotional (minOrderAmt)", in.MinNotional, "5")
	eq(t, "MaxOrderQty (maxLimitOrderQty)", in.MaxOrderQty, "83")
	eq(t, "MaxMarketQty (maxMarketOrderQty)", in.MaxMarketQty, "41.5")
	if in.HasLeverage || !in.MinPrice.IsZero() || !in.MaxPrice.IsZero() || in.PriceScale != 1 {
		t.Fatalf("spot %+v", in)
	}
}

func TestPriceLimitAndServerTime(t *testing.T) {
	fv, _ := sampleServer(t)
	c, _ := newTestClient(t, fv.URL)
	pl, err := c.PriceLimit(context.Background(), messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "BuyLimit", pl.BuyLimit, "105878.10")
	eq(t, "SellLimit", pl.SellLimit, "103781.60")
	if !pl.Time.Equal(time.UnixMilli(1750302284491)) {
		t.Fatalf("Time %v", pl.Time)
	}
	st, err := c.ServerTime(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.Equal(time.Unix(0, 1688639403423213947)) {
		t.Fatalf("ServerTime %v", st)
	}
}

func TestUnknownSymbolIsNotFound(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case PathOrderbook, PathPriceLimit:
			writeEnvelope(w, 0, "OK", `{}`)
		default:
			writeEnvelope(w, 0, "OK", `{"category":"linear","list":[]}`)
		}
	})
	c, _ := newTestClient(t, fv.URL)
	ctx := context.Background()
	calls := map[string]func() error{
		"ticker":      func() error { _, err := c.Ticker(ctx, messages.CategoryLinear, "NOPEUSDT"); return err },
		"instrument":  func() error { _, err := c.Instrument(ctx, messages.CategoryLinear, "NOPEUSDT"); return err },
		"orderbook":   func() error { _, err := c.Orderbook(ctx, messages.CategoryLinear, "NOPEUSDT", 1); return err },
		"price_limit": func() error { _, err := c.PriceLimit(ctx, messages.CategoryLinear, "NOPEUSDT"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			e := asVenueError(t, call())
			if e.Code != messages.CodeNotFound || strings.Contains(e.Message, "NOPE") {
				t.Fatalf("%s: %+v", name, e)
			}
		})
	}
}

func TestMalformedResultIsUnavailableNotRetried(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		writeEnvelope(w, 0, "OK", `{"list":[{"symbol":"BTCUSDT","lastPrice":"12,5"}]}`)
	})
	c, _ := newTestClient(t, fv.URL)
	_, err := c.Ticker(context.Background(), messages.CategorySpot, "BTCUSDT")
	e := asVenueError(t, err)
	if e.Code != messages.CodeExchangeUnavailable || e.Details["reason"] != string(FailMalformedResult) || fv.hits.Load() != 1 {
		t.Fatalf("%+v hits %d", e, fv.hits.Load())
	}
}

func TestInputValidationSendsNothing(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) { writeEnvelope(w, 0, "OK", "{}") })
	c, _ := newTestClient(t, fv.URL)
	ctx := context.Background()
	kl := func(mut func(*messages.GetKlinesRequest)) error {
		r := messages.GetKlinesRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Interval: "1"}
		mut(&r)
		_, err := c.Klines(ctx, r)
		return err
	}
	cases := []struct {
		name, field string
		err         error
	}{
		{"category", "category", func() error { _, err := c.Ticker(ctx, "inverse", "BTCUSDT"); return err }()},
		{"symbol_lower", "symbol", func() error { _, err := c.Ticker(ctx, "spot", "btcusdt"); return err }()},
		{"symbol_inject", "symbol", func() error {
			_, err := c.Instrument(ctx, "spot", "BTC&category=option")
			return err
		}()},
		{"symbol_short", "symbol", func() error { _, err := c.PriceLimit(ctx, "linear", "B"); return err }()},
		{"book_limit_high", "limit", func() error { _, err := c.Orderbook(ctx, "spot", "BTCUSDT", 201); return err }()},
		{"book_limit_neg", "limit", func() error { _, err := c.Orderbook(ctx, "spot", "BTCUSDT", -1); return err }()},
		{"kline_interval", "interval", kl(func(r *messages.GetKlinesRequest) { r.Interval = "2" })},
		{"kline_limit", "limit", kl(func(r *messages.GetKlinesRequest) { r.Limit = 1001 })},
		{"kline_range", "end_time", kl(func(r *messages.GetKlinesRequest) {
			r.Start, r.End = time.UnixMilli(2000), time.UnixMilli(1000)
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := asVenueError(t, tc.err)
			if e.Code != messages.CodeInvalidParams || e.Details["field"] != tc.field {
				t.Fatalf("%+v", e)
			}
			if strings.Contains(e.Message, "btcusdt") || strings.Contains(e.Message, "inverse") || strings.Contains(e.Message, "&") {
				t.Fatalf("message echoes the input: %q", e.Message)
			}
		})
	}
	if n := fv.hits.Load(); n != 0 {
		t.Fatalf("invalid input reached the venue %d times", n)
	}
}

func TestSymbolRefusalIsNotFoundOnMarketReads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retCode int
	}{{"10001", 10001}, {"170121", 170121}} {
		t.Run(tc.name, func(t *testing.T) {
			fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
				writeEnvelope(w, tc.retCode, "Not supported symbols", "{}")
			})
			c, _ := newTestClient(t, fv.URL)
			_, err := c.Orderbook(context.Background(), messages.CategorySpot, "NOPEUSDT", 1)
			e := asVenueError(t, err)
			if e.Code != messages.CodeNotFound || e.UntrustedText != "Not supported symbols" ||
				e.Details["ret_code"] != tc.retCode || e.Details["field"] != "symbol" || fv.hits.Load() != 1 {
				t.Fatalf("%+v", e)
			}
			// The generic Get keeps the table's answer.
			_, err = c.Get(context.Background(), PathOrderbook, nil, false, nil)
			if messages.CodeOf(err) != messages.CodeExchangeRejected {
				t.Fatalf("generic Get: %v", err)
			}
		})
	}
}
