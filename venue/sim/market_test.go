package sim

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "bybit-samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleResult returns the "result" of a recorded envelope.
func sampleResult(t *testing.T, name string) map[string]json.RawMessage {
	t.Helper()
	var env struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	decodeInto(t, readSample(t, name), &env)
	return env.Result
}

// checkKeys fails unless got has every key of want, and its other keys are
// all in extra.
func checkKeys(t *testing.T, what string, got, want map[string]json.RawMessage, extra ...string) {
	t.Helper()
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: sample key %q missing (got %v)", what, k, keysOf(got))
		}
	}
	allowed := map[string]bool{}
	for _, e := range extra {
		allowed[e] = true
	}
	for k := range got {
		if _, ok := want[k]; !ok && !allowed[k] {
			t.Errorf("%s: unexpected key %q", what, k)
		}
	}
}

func mustDecimal(t *testing.T, raw json.RawMessage) decimal.Decimal {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s is not a JSON string", raw)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatalf("%q is not a decimal", s)
	}
	return d
}

func mustInt(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Fatalf("%s is not a JSON integer", raw)
	}
	return n
}

func onStep(d, step decimal.Decimal) bool {
	_, r := d.QuoRem(step, 0)
	return r.IsZero()
}

func TestTickersShape(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))

	r := get(t, s, "/v5/market/tickers?category=linear&symbol=BTCUSDT")
	mustOK(t, r)
	var res struct {
		Category string                       `json:"category"`
		List     []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(t, r.result, &res)
	if res.Category != "linear" || len(res.List) != 1 {
		t.Fatalf("result %s", r.result)
	}
	var sample struct {
		List []map[string]json.RawMessage `json:"list"`
	}
	decodeInto(t, sampleResult(t, "v5-market-tickers.linear.ccxt.json")["list"], &sample.List)
	checkKeys(t, "linear ticker", res.List[0], sample.List[0],
		"preOpenPrice", "preQty", "curPreListingPhase", "fundingIntervalHour", "fundingCap", "basisRateYear")
	for k, v := range res.List[0] {
		var str string
		if json.Unmarshal(v, &str) != nil {
			t.Errorf("linear ticker %s = %s is not a string", k, v)
		}
	}
	tk := res.List[0]
	last, bid, ask := mustDecimal(t, tk["lastPrice"]), mustDecimal(t, tk["bid1Price"]), mustDecimal(t, tk["ask1Price"])
	if !(bid.LessThan(ask) && !last.LessThan(bid) && !last.GreaterThan(ask)) {
		t.Fatalf("bid %s last %s ask %s", bid, last, ask)
	}
	hi, lo := mustDecimal(t, tk["highPrice24h"]), mustDecimal(t, tk["lowPrice24h"])
	for _, f := range []string{"lastPrice", "prevPrice24h"} {
		if p := mustDecimal(t, tk[f]); p.GreaterThan(hi) || p.LessThan(lo) {
			t.Errorf("%s %s outside [%s, %s]", f, p, lo, hi)
		}
	}
	if !strings.Contains(string(tk["lastPrice"]), ".") || len(strings.Split(strings.Trim(string(tk["lastPrice"]), `"`), ".")[1]) != 2 {
		t.Errorf("linear BTC lastPrice %s should carry priceScale 2", tk["lastPrice"])
	}

	// Spot: exactly the documented fields.
	r = get(t, s, "/v5/market/tickers?category=spot&symbol=ETHUSDT")
	mustOK(t, r)
	res.List = nil
	decodeInto(t, r.result, &res)
	want := "ask1Price,ask1Size,bid1Price,bid1Size,highPrice24h,lastPrice,lowPrice24h,prevPrice24h,price24hPcnt,symbol,turnover24h,usdIndexPrice,volume24h"
	if g := strings.Join(keysOf(res.List[0]), ","); g != want {
		t.Fatalf("spot ticker keys\n got %s\nwant %s", g, want)
	}

	// All symbols when symbol is omitted.
	for _, cat := range []string{"linear", "spot"} {
		r = get(t, s, "/v5/market/tickers?category="+cat)
		mustOK(t, r)
		decodeInto(t, r.result, &res)
		if len(res.List) != 3 {
			t.Fatalf("%s: %d tickers, want 3", cat, len(res.List))
		}
	}
	r = get(t, s, "/v5/market/tickers?category=inverse")
	mustOK(t, r)
	decodeInto(t, r.result, &res)
	if len(res.List) != 0 {
		t.Fatalf("inverse should list nothing: %s", r.result)
	}
}

func TestOrderbookShapeAndBook(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	for _, tc := range []struct {
		cat, sample string
		extra       []string
		defLevels   int
	}{
		{"linear", "v5-market-orderbook.linear.ccxt.json", []string{"cts"}, 25},
		{"spot", "v5-market-orderbook.spot.ccxt.json", []string{"seq", "cts"}, 1},
	} {
		t.Run(tc.cat, func(t *testing.T) {
			r := get(t, s, "/v5/market/orderbook?category="+tc.cat+"&symbol=BTCUSDT")
			mustOK(t, r)
			var got map[string]json.RawMessage
			decodeInto(t, r.result, &got)
			checkKeys(t, tc.cat+" orderbook", got, sampleResult(t, tc.sample), tc.extra...)
			for _, f := range []string{"ts", "u", "seq", "cts"} {
				mustInt(t, got[f])
			}
			var book struct {
				B [][]string `json:"b"`
				A [][]string `json:"a"`
			}
			decodeInto(t, r.result, &book)
			if len(book.B) != tc.defLevels || len(book.A) != tc.defLevels {
				t.Fatalf("default depth %d/%d, want %d", len(book.B), len(book.A), tc.defLevels)
			}

			r = get(t, s, "/v5/market/orderbook?category="+tc.cat+"&symbol=BTCUSDT&limit=200")
			mustOK(t, r)
			decodeInto(t, r.result, &book)
			if len(book.B) != 200 || len(book.A) != 200 {
				t.Fatalf("depth %d/%d, want 200", len(book.B), len(book.A))
			}
			in := s.catalog.get(tc.cat, "BTCUSDT")
			prev := decimal.Zero
			for i, lv := range book.B {
				p, q := decimal.RequireFromString(lv[0]), decimal.RequireFromString(lv[1])
				if !onStep(p, in.tick) || !onStep(q, in.step) || !q.IsPositive() {
					t.Fatalf("bid %d %v off tick/step", i, lv)
				}
				if i > 0 && !p.LessThan(prev) {
					t.Fatalf("bids not descending at %d", i)
				}
				prev = p
			}
			for i, lv := range book.A {
				p, q := decimal.RequireFromString(lv[0]), decimal.RequireFromString(lv[1])
				if !onStep(p, in.tick) || !onStep(q, in.step) || !q.IsPositive() {
					t.Fatalf("ask %d %v off tick/step", i, lv)
				}
				if i > 0 && !p.GreaterThan(prev) {
					t.Fatalf("asks not ascending at %d", i)
				}
				prev = p
			}
			bid, ask := decimal.RequireFromString(book.B[0][0]), decimal.RequireFromString(book.A[0][0])
			spread := ask.Sub(bid).Div(in.tick)
			if !spread.Equal(decimal.NewFromInt(1)) && !spread.Equal(decimal.NewFromInt(2)) {
				t.Fatalf("spread %s ticks", spread)
			}

			// The ticker's top of book is the book's.
			r = get(t, s, "/v5/market/tickers?category="+tc.cat+"&symbol=BTCUSDT")
			var tk struct {
				List []map[string]string `json:"list"`
			}
			decodeInto(t, r.result, &tk)
			if tk.List[0]["bid1Price"] != book.B[0][0] || tk.List[0]["ask1Price"] != book.A[0][0] ||
				tk.List[0]["bid1Size"] != book.B[0][1] || tk.List[0]["ask1Size"] != book.A[0][1] {
				t.Fatalf("ticker top %v vs book %v / %v", tk.List[0], book.B[0], book.A[0])
			}
		})
	}
}

func TestBookManySeconds(t *testing.T) {
	m := newModel(42)
	c := newCatalog()
	for _, cat := range []string{catLinear, catSpot} {
		for _, in := range c.list[cat] {
			for sec := int64(1_700_000_000); sec < 1_700_000_000+300; sec++ {
				bids, asks := m.book(in, sec, 50)
				if len(bids) != 50 || len(asks) != 50 {
					t.Fatalf("%s %s: depth %d/%d", cat, in.symbol, len(bids), len(asks))
				}
				last := m.last(in, sec)
				if !bids[0].price.LessThan(asks[0].price) || last.LessThan(bids[0].price) || last.GreaterThan(asks[0].price) {
					t.Fatalf("%s %s @%d: bid %s last %s ask %s", cat, in.symbol, sec, bids[0].price, last, asks[0].price)
				}
			}
		}
	}
}

func TestKlineShapeAndConsistency(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 5, clock)

	r := get(t, s, "/v5/market/kline?symbol=BTCUSDT&interval=60&limit=3")
	mustOK(t, r)
	var got map[string]json.RawMessage
	decodeInto(t, r.result, &got)
	checkKeys(t, "kline", got, sampleResult(t, "v5-market-kline.linear.ccxt.json"))
	var cat string
	decodeInto(t, got["category"], &cat)
	if cat != "linear" {
		t.Fatalf("default category %q, want linear", cat)
	}

	for _, tc := range []struct{ cat, sym string }{{"linear", "BTCUSDT"}, {"spot", "ETHUSDT"}, {"linear", "SOLUSDT"}} {
		in := s.catalog.get(tc.cat, tc.sym)
		var tick struct {
			List []map[string]string `json:"list"`
		}
		decodeInto(t, get(t, s, "/v5/market/tickers?category="+tc.cat+"&symbol="+tc.sym).result, &tick)
		last := tick.List[0]["lastPrice"]

		for name, iv := range intervals {
			t.Run(tc.cat+"/"+tc.sym+"/"+name, func(t *testing.T) {
				start := time.Now()
				r := get(t, s, "/v5/market/kline?category="+tc.cat+"&symbol="+tc.sym+"&interval="+name+"&limit=1000")
				mustOK(t, r)
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("1000 candles took %v", d)
				}
				var res struct {
					List [][]json.RawMessage `json:"list"`
				}
				decodeInto(t, r.result, &res)
				if len(res.List) == 0 || len(res.List) > 1000 {
					t.Fatalf("%d candles", len(res.List))
				}
				if name != "M" && name != "W" && name != "D" && len(res.List) != 1000 {
					t.Fatalf("%d candles, want 1000", len(res.List))
				}
				var prevStart int64
				for i, row := range res.List {
					if len(row) != 7 {
						t.Fatalf("row %d has %d fields", i, len(row))
					}
					var f [7]string
					for j := range row {
						if json.Unmarshal(row[j], &f[j]) != nil {
							t.Fatalf("row %d field %d is not a string: %s", i, j, row[j])
						}
					}
					st, _ := strconv.ParseInt(f[0], 10, 64)
					if st != iv.startOf(st) {
						t.Fatalf("row %d start %d not aligned", i, st)
					}
					if i > 0 && iv.next(st) != prevStart {
						t.Fatalf("row %d start %d does not precede %d", i, st, prevStart)
					}
					prevStart = st
					o, h, l, c := decimal.RequireFromString(f[1]), decimal.RequireFromString(f[2]), decimal.RequireFromString(f[3]), decimal.RequireFromString(f[4])
					if h.LessThan(decimal.Max(o, c)) || l.GreaterThan(decimal.Min(o, c)) || !l.IsPositive() {
						t.Fatalf("row %d inconsistent: %v", i, f)
					}
					for _, p := range []decimal.Decimal{o, h, l, c} {
						if !onStep(p, in.tick) {
							t.Fatalf("row %d price %s off tick", i, p)
						}
					}
					if v := decimal.RequireFromString(f[5]); v.IsNegative() || !onStep(v, in.step) {
						t.Fatalf("row %d volume %s", i, v)
					}
				}
				if res.List[0][4] == nil || strings.Trim(string(res.List[0][4]), `"`) != last {
					t.Fatalf("newest close %s != lastPrice %s", res.List[0][4], last)
				}
				var newest string
				_ = json.Unmarshal(res.List[0][0], &newest)
				if ns, _ := strconv.ParseInt(newest, 10, 64); ns != iv.startOf(clock.ms()) {
					t.Fatalf("newest candle starts %d, want %d", ns, iv.startOf(clock.ms()))
				}
			})
		}
	}

	t.Run("start and end", func(t *testing.T) {
		end := testNow - 10*3600*1000
		startMs := end - 5*3600*1000
		r := get(t, s, "/v5/market/kline?category=linear&symbol=BTCUSDT&interval=60&start="+strconv.FormatInt(startMs, 10)+"&end="+strconv.FormatInt(end, 10))
		mustOK(t, r)
		var res struct {
			List [][7]string `json:"list"`
		}
		decodeInto(t, r.result, &res)
		if len(res.List) != 5 {
			t.Fatalf("%d candles, want 5 (start mid-hour excludes the first partial hour)", len(res.List))
		}
		for _, row := range res.List {
			st, _ := strconv.ParseInt(row[0], 10, 64)
			if st < startMs || st > end {
				t.Fatalf("candle %d outside [%d, %d]", st, startMs, end)
			}
		}
		// Only start: anchored at start.
		r3 := get(t, s, "/v5/market/kline?category=linear&symbol=BTCUSDT&interval=60&limit=3&start="+strconv.FormatInt(startMs, 10))
		var res3 struct {
			List [][7]string `json:"list"`
		}
		decodeInto(t, r3.result, &res3)
		first := intervals["60"].startOf(startMs) + 3600*1000
		if len(res3.List) != 3 || res3.List[2][0] != strconv.FormatInt(first, 10) || res3.List[0][0] != strconv.FormatInt(first+2*3600*1000, 10) {
			t.Fatalf("start-anchored window %v", res3.List)
		}
		// start before the listing answers the first candles.
		r4 := get(t, s, "/v5/market/kline?category=linear&symbol=BTCUSDT&interval=D&limit=1&start=9999")
		decodeInto(t, r4.result, &res3)
		if len(res3.List) != 1 || res3.List[0][0] != "1585526400000" {
			t.Fatalf("earliest candle %v", res3.List)
		}
		// A closed candle does not change as time passes.
		clock.Advance(2 * time.Hour)
		r2 := get(t, s, "/v5/market/kline?category=linear&symbol=BTCUSDT&interval=60&start="+strconv.FormatInt(startMs, 10)+"&end="+strconv.FormatInt(end, 10))
		if !bytes.Equal(r.result, r2.result) {
			t.Fatalf("closed candles changed:\n%s\n%s", r.result, r2.result)
		}
	})
}

func TestInstrumentsInfo(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))

	r := get(t, s, "/v5/market/instruments-info?category=linear&symbol=BTCUSDT")
	mustOK(t, r)
	var lin struct {
		Category       string  `json:"category"`
		NextPageCursor *string `json:"nextPageCursor"`
		List           []struct {
			Symbol         string `json:"symbol"`
			Status         string `json:"status"`
			PriceScale     string `json:"priceScale"`
			SettleCoin     string `json:"settleCoin"`
			LeverageFilter struct {
				MinLeverage, MaxLeverage, LeverageStep string
			} `json:"leverageFilter"`
			PriceFilter struct {
				TickSize string `json:"tickSize"`
			} `json:"priceFilter"`
			LotSizeFilter struct {
				MaxOrderQty, MinOrderQty, QtyStep, MaxMktOrderQty, MinNotionalValue string
			} `json:"lotSizeFilter"`
			FundingInterval json.RawMessage `json:"fundingInterval"`
			SymbolID        json.RawMessage `json:"symbolId"`
		} `json:"list"`
	}
	decodeInto(t, r.result, &lin)
	if lin.NextPageCursor == nil || *lin.NextPageCursor != "" || len(lin.List) != 1 {
		t.Fatalf("linear result %s", r.result)
	}
	b := lin.List[0]
	if b.PriceFilter.TickSize != "0.10" || b.LotSizeFilter.QtyStep != "0.001" || b.LotSizeFilter.MinOrderQty != "0.001" ||
		b.LotSizeFilter.MaxOrderQty != "1190.000" || b.LotSizeFilter.MaxMktOrderQty != "500.000" ||
		b.LotSizeFilter.MinNotionalValue != "5" || b.LeverageFilter.MinLeverage != "1" ||
		b.LeverageFilter.MaxLeverage != "100.00" || b.LeverageFilter.LeverageStep != "0.01" ||
		b.Status != "Trading" || b.PriceScale != "2" || b.SettleCoin != "USDT" {
		t.Fatalf("BTCUSDT linear rules %+v", b)
	}
	mustInt(t, b.FundingInterval)
	mustInt(t, b.SymbolID)

	r = get(t, s, "/v5/market/instruments-info?category=spot&symbol=BTCUSDT")
	mustOK(t, r)
	var spot struct {
		List []struct {
			LotSizeFilter map[string]string `json:"lotSizeFilter"`
			PriceFilter   map[string]string `json:"priceFilter"`
		} `json:"list"`
	}
	decodeInto(t, r.result, &spot)
	if strings.Contains(string(r.result), "nextPageCursor") {
		t.Fatalf("spot is not paginated: %s", r.result)
	}
	lf := spot.List[0].LotSizeFilter
	if lf["basePrecision"] != "0.000001" || lf["quotePrecision"] != "0.0000001" || lf["minOrderAmt"] != "5" ||
		lf["maxLimitOrderQty"] != "83" || lf["maxMarketOrderQty"] != "41.5" || spot.List[0].PriceFilter["tickSize"] != "0.01" {
		t.Fatalf("BTCUSDT spot rules %v %v", lf, spot.List[0].PriceFilter)
	}

	// Pagination by cursor.
	var seen []string
	cursor := ""
	for page := 0; page < 5; page++ {
		q := "/v5/market/instruments-info?category=linear&limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r = get(t, s, q)
		mustOK(t, r)
		decodeInto(t, r.result, &lin)
		for _, it := range lin.List {
			seen = append(seen, it.Symbol)
		}
		cursor = *lin.NextPageCursor
		if cursor == "" {
			break
		}
	}
	if strings.Join(seen, ",") != "BTCUSDT,ETHUSDT,SOLUSDT" {
		t.Fatalf("paged %v", seen)
	}
	wantCode(t, get(t, s, "/v5/market/instruments-info?category=linear&cursor=bogus"), codeParams)

	// Filters.
	r = get(t, s, "/v5/market/instruments-info?category=linear&baseCoin=ETH")
	decodeInto(t, r.result, &lin)
	if len(lin.List) != 1 || lin.List[0].Symbol != "ETHUSDT" {
		t.Fatalf("baseCoin filter %s", r.result)
	}
	r = get(t, s, "/v5/market/instruments-info?category=linear&symbol=NOPEUSDT")
	mustOK(t, r)
	decodeInto(t, r.result, &lin)
	if len(lin.List) != 0 {
		t.Fatalf("unknown symbol should list nothing: %s", r.result)
	}
}

func TestMarketParamErrors(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	cases := []struct{ name, target string }{
		{"tickers no category", "/v5/market/tickers"},
		{"tickers bad category", "/v5/market/tickers?category=futures"},
		{"tickers unknown symbol", "/v5/market/tickers?category=linear&symbol=NOPEUSDT"},
		{"tickers unknown spot symbol", "/v5/market/tickers?category=spot&symbol=NOPEUSDT"},
		{"orderbook no symbol", "/v5/market/orderbook?category=linear"},
		{"orderbook limit 0", "/v5/market/orderbook?category=linear&symbol=BTCUSDT&limit=0"},
		{"orderbook limit 1001", "/v5/market/orderbook?category=spot&symbol=BTCUSDT&limit=1001"},
		{"orderbook limit abc", "/v5/market/orderbook?category=spot&symbol=BTCUSDT&limit=abc"},
		{"kline no interval", "/v5/market/kline?symbol=BTCUSDT"},
		{"kline bad interval", "/v5/market/kline?symbol=BTCUSDT&interval=2"},
		{"kline limit 1001", "/v5/market/kline?symbol=BTCUSDT&interval=1&limit=1001"},
		{"kline bad start", "/v5/market/kline?symbol=BTCUSDT&interval=1&start=yesterday"},
		{"kline option", "/v5/market/kline?category=option&symbol=BTCUSDT&interval=1"},
		{"instruments no category", "/v5/market/instruments-info"},
		{"instruments bad limit", "/v5/market/instruments-info?category=linear&limit=0"},
		{"price-limit unknown symbol", "/v5/market/price-limit?symbol=NOPEUSDT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := get(t, s, tc.target)
			wantCode(t, r, codeParams)
			if r.retMsg == "" {
				t.Fatal("empty retMsg")
			}
		})
	}
	if r := get(t, s, "/v5/market/tickers?category=linear&symbol=NOPEUSDT"); r.retMsg != "Not supported symbols" {
		t.Fatalf("retMsg %q", r.retMsg)
	}
}

func TestPriceLimitAndTime(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	for _, cat := range []string{"", "linear", "spot"} {
		q := "/v5/market/price-limit?symbol=SOLUSDT"
		if cat != "" {
			q += "&category=" + cat
		}
		r := get(t, s, q)
		mustOK(t, r)
		var pl map[string]json.RawMessage
		decodeInto(t, r.result, &pl)
		var ts string
		decodeInto(t, pl["ts"], &ts)
		if ts != strconv.FormatInt(testNow, 10) {
			t.Fatalf("ts %s is not the ms time as a string", pl["ts"])
		}
		buy, sell := mustDecimal(t, pl["buyLmt"]), mustDecimal(t, pl["sellLmt"])
		c := cat
		if c == "" {
			c = "linear"
		}
		in := s.catalog.get(c, "SOLUSDT")
		last := s.model.last(in, testNow/1000)
		if !buy.GreaterThan(last) || !sell.LessThan(last) || !onStep(buy, in.tick) || !onStep(sell, in.tick) {
			t.Fatalf("%s: sell %s last %s buy %s", c, sell, last, buy)
		}
	}

	r := get(t, s, "/v5/market/time")
	mustOK(t, r)
	var tm map[string]string
	decodeInto(t, r.result, &tm)
	if tm["timeSecond"] != strconv.FormatInt(testNow/1000, 10) || tm["timeNano"] != strconv.FormatInt(testNow*1_000_000, 10) {
		t.Fatalf("time %v", tm)
	}
}

func TestDeterminism(t *testing.T) {
	targets := []string{
		"/v5/market/tickers?category=linear",
		"/v5/market/tickers?category=spot",
		"/v5/market/orderbook?category=linear&symbol=BTCUSDT&limit=200",
		"/v5/market/orderbook?category=spot&symbol=SOLUSDT&limit=50",
		"/v5/market/kline?category=spot&symbol=ETHUSDT&interval=15&limit=300",
		"/v5/market/instruments-info?category=linear",
		"/v5/market/price-limit?symbol=BTCUSDT",
		"/v5/market/time",
	}
	run := func(seed int64) [][]byte {
		clock := newClock(testNow)
		s := newTestSim(t, seed, clock)
		var out [][]byte
		for _, tg := range targets {
			out = append(out, get(t, s, tg).body)
		}
		k := s.DefaultKey()
		out = append(out, []byte(k.APIKey+k.APISecret))
		out = append(out, signedGet(t, s, k, clock.ms(), "/v5/user/query-api", "").body)
		return out
	}
	a, b, c := run(7), run(7), run(8)
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("same seed differs at %d:\n%s\n%s", i, a[i], b[i])
		}
	}
	differs := 0
	for i := range a {
		if !bytes.Equal(a[i], c[i]) {
			differs++
		}
	}
	// tickers, books, klines, price-limit and the key differ; instruments
	// and time do not.
	if differs < 6 {
		t.Fatalf("a different seed changed only %d of %d answers", differs, len(a))
	}
}

func TestPriceWalk(t *testing.T) {
	m := newModel(99)
	c := newCatalog()
	sec := testNow / 1000
	for _, sym := range []string{"BTCUSDT", "ETHUSDT", "SOLUSDT"} {
		lin, spot := c.get(catLinear, sym), c.get(catSpot, sym)
		// Spot and linear stay close.
		for i := int64(0); i < 2000; i++ {
			l, s := m.last(lin, sec+i*977), m.last(spot, sec+i*977)
			if l.Sub(s).Abs().Div(s).GreaterThan(decimal.RequireFromString("0.002")) {
				t.Fatalf("%s: linear %s spot %s", sym, l, s)
			}
		}
		// The walk moves, but stays within a plausible band for years.
		moved := false
		lo, hi := lin.under.base, lin.under.base
		for d := int64(0); d < 3*365; d++ {
			p := m.lastFloat(lin, sec+d*86400)
			lo, hi = min(lo, p), max(hi, p)
		}
		if lo < lin.under.base*0.4 || hi > lin.under.base*2.5 {
			t.Fatalf("%s wandered to [%f, %f]", sym, lo, hi)
		}
		for i := int64(1); i < 60; i++ {
			if !m.last(lin, sec).Equal(m.last(lin, sec+i)) {
				moved = true
			}
		}
		if !moved {
			t.Fatalf("%s did not move in a minute", sym)
		}
	}
}

func TestRoutingStatuses(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	if r := get(t, s, "/v5/market/nope"); r.status != 404 {
		t.Fatalf("unknown path HTTP %d", r.status)
	}
	if r := get(t, s, "/nothing"); r.status != 404 {
		t.Fatalf("unknown root path HTTP %d", r.status)
	}
	if r := do(t, s, "PUT", "/v5/market/time", nil, nil); r.status != 400 {
		t.Fatalf("PUT HTTP %d", r.status)
	}
	if r := do(t, s, "POST", "/v5/market/time", []byte("{}"), nil); r.status != 404 {
		t.Fatalf("POST to a GET endpoint HTTP %d", r.status)
	}
	if r := do(t, s, "GET", "/v5/market/time", []byte("{}"), nil); r.status != 403 {
		t.Fatalf("GET with body HTTP %d", r.status)
	}
	r := get(t, s, "/v5/market/time")
	if !strings.HasPrefix(string(r.body), `{"retCode":0,"retMsg":"OK","result":{`) || !strings.Contains(string(r.body), `"retExtInfo":{},"time":`) {
		t.Fatalf("envelope %s", r.body)
	}
}
