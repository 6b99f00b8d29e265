package sim

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// BenchmarkDurableMarketOrder is a market order through the full signed
// handler with the state file on (a rewrite and two fsyncs per order), on
// an account whose history already holds `history` filled orders: the
// file is rewritten whole, so the cost grows with the history.
func BenchmarkDurableMarketOrder(b *testing.B) {
	for _, history := range []int{0, 1000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			clock := newClock(testNow)
			p, err := StartInProcess(Config{Seed: 1, Now: clock.Now, StatePath: filepath.Join(b.TempDir(), "state.json"), IDNonce: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			s := p.Sim()
			if _, err := s.ProvisionKey(paperKey, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(1_000_000_000)}); err != nil {
				b.Fatal(err)
			}
			const body = `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.01"}`
			n := 0
			place := func() {
				if n++; n%8 == 0 {
					clock.Advance(time.Second) // inside the per-second order limit
				}
				req := httptest.NewRequest(http.MethodPost, "/v5/order/create", strings.NewReader(body))
				req.RemoteAddr = "127.0.0.1:50000"
				req.Header = signedHeader(paperKey, clock.ms(), "5000", body)
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				if !strings.Contains(rec.Body.String(), `"retCode":0`) {
					b.Fatalf("create: %s", rec.Body.String())
				}
			}
			for range history {
				place()
			}
			b.ResetTimer()
			for range b.N {
				place()
			}
		})
	}
}
