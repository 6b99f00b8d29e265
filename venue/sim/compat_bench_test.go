package sim

import "testing"

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
