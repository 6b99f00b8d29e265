package sim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func BenchmarkKline1000(b *testing.B) {
	s := New(Config{Seed: 1, Now: newClock(testNow).Now})
	for i := 0; i < b.N; i++ {
		r := s.marketKline(&call{query: map[string][]string{"symbol": {"BTCUSDT"}, "interval": {"60"}, "limit": {"1000"}}, now: s.now()})
		if r.code != 0 {
			b.Fatal(r.msg)
		}
	}
}

func BenchmarkTicker(b *testing.B) {
	s := New(Config{Seed: 1, Now: newClock(testNow).Now})
	in := s.catalog.get(catLinear, "BTCUSDT")
	for i := 0; i < b.N; i++ {
		s.model.stats(in, s.now())
	}
}

func BenchmarkBook200(b *testing.B) {
	s := New(Config{Seed: 1, Now: newClock(testNow).Now})
	in := s.catalog.get(catLinear, "BTCUSDT")
	for i := 0; i < b.N; i++ {
		s.model.book(in, testNow/1000, 200)
	}
}

// BenchmarkRecentTrade500 is GET /v5/market/recent-trade at the linear
// default limit: about 250 seconds of the trade model.
func BenchmarkRecentTrade500(b *testing.B) {
	s := New(Config{Seed: 1, Now: newClock(testNow).Now})
	for i := 0; i < b.N; i++ {
		r := s.marketRecentTrade(&call{query: map[string][]string{"category": {"linear"}, "symbol": {"BTCUSDT"}}, now: s.now()})
		if r.code != 0 {
			b.Fatal(r.msg)
		}
	}
}

// BenchmarkBookDelta200 is one orderbook.200 push after the first: the
// book of the next second and its diff against the one sent.
func BenchmarkBookDelta200(b *testing.B) {
	s := New(Config{Seed: 1, Now: newClock(testNow).Now})
	in := s.catalog.get(catLinear, "BTCUSDT")
	sec := testNow / 1000
	bids, asks := s.model.book(in, sec, 200)
	prevB, prevA := levelMap(in, bids), levelMap(in, asks)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nb, na := s.model.book(in, sec+1, 200)
		curB, curA := levelMap(in, nb), levelMap(in, na)
		bookDiff(prevB, curB, true)
		bookDiff(prevA, curA, false)
	}
}

// benchOrders places b.N orders through the full signed REST handler
// (signature, rate limit, validation, matching, ledger) and reports
// orders/s. The clock moves one second every 8 orders to stay inside the
// per-second order limit, so resting orders are also checked each second.
func benchOrders(b *testing.B, body func(i int) string) {
	clock := newClock(testNow)
	s := New(Config{Seed: 1, Now: clock.Now, StartingBalances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(1_000_000_000)}})
	defer s.shutdown()
	k := s.DefaultKey()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%8 == 7 {
			clock.Advance(time.Second)
		}
		p := body(i)
		req := httptest.NewRequest(http.MethodPost, "/v5/order/create", strings.NewReader(p))
		req.RemoteAddr = "127.0.0.1:50000"
		req.Header = signedHeader(k, clock.ms(), "5000", p)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if !strings.Contains(rec.Body.String(), `"retCode":0`) {
			b.Fatalf("order %d: %s", i, rec.Body.String())
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
}

// BenchmarkMatchMarket: market orders that take from the book, alternating
// sides so the position stays small.
func BenchmarkMatchMarket(b *testing.B) {
	benchOrders(b, func(i int) string {
		side := "Buy"
		if i%2 == 1 {
			side = "Sell"
		}
		return `{"category":"linear","symbol":"BTCUSDT","side":"` + side + `","orderType":"Market","qty":"0.010"}`
	})
}

// BenchmarkMatchLimitResting: limit orders far from the market that rest,
// so every second's sweep walks a growing set of resting orders (up to
// b.N of them).
func BenchmarkMatchLimitResting(b *testing.B) {
	benchOrders(b, func(i int) string {
		return `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2000.00"}`
	})
}
