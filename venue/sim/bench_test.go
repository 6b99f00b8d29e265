package sim

import "testing"

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
