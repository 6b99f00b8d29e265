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

// benchOrders sends b.N order requests through the full signed REST handler
// (signature, rate limit, validation, matching, ledger) and reports
// orders/s. The clock moves one second every 8 orders to stay inside the
// per-second order limit, so resting orders are also checked each second.
func benchOrders(b *testing.B, next func(i int) (path, body string)) {
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
		path, p := next(i)
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(p))
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
	benchOrders(b, func(i int) (string, string) {
		side := "Buy"
		if i%2 == 1 {
			side = "Sell"
		}
		return "/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"` + side + `","orderType":"Market","qty":"0.010"}`
	})
}

// BenchmarkMatchLimitResting: limit orders far from the market that rest,
// so every second's sweep and every funds check walk the resting orders;
// every 500th request is a cancel-all (Bybit cancels at most 500 linear
// orders per call), so up to 499 rest at once.
func BenchmarkMatchLimitResting(b *testing.B) {
	benchOrders(b, func(i int) (string, string) {
		if i%500 == 499 {
			return "/v5/order/cancel-all", `{"category":"linear","symbol":"ETHUSDT"}`
		}
		return "/v5/order/create", `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"2000.00"}`
	})
}
