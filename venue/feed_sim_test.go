package venue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// pathCounter counts the REST requests by path.
type pathCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (p *pathCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.n[r.URL.Path]++
	p.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (p *pathCounter) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[path]
}

// feedKit is a feed over the simulator on loopback, its public stream
// optionally behind a hostile proxy.
type feedKit struct {
	srv   *sim.Server
	ann   sim.Announcement
	rest  *pathCounter
	pub   *venue.PublicStream
	feed  *venue.MarketFeed
	proxy *hostile.Proxy
}

const testStaleAfter = 2500 * time.Millisecond

func newFeedKit(t *testing.T, viaProxy bool, backoff time.Duration) *feedKit {
	t.Helper()
	srv, err := sim.Start(sim.Config{Seed: 7, NoPublicRateLimit: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	k := &feedKit{srv: srv, ann: srv.Announcement(), rest: &pathCounter{n: map[string]int{}}}
	url := k.ann.WSPublicLinear
	if viaProxy {
		if k.proxy, err = hostile.New(url); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.proxy.Close)
		url = k.proxy.URL()
	}
	if k.pub, err = venue.NewPublicStream(venue.PublicStreamConfig{URL: url, Category: messages.CategoryLinear,
		Backoff: func(int) time.Duration { return backoff }}); err != nil {
		t.Fatal(err)
	}
	c, err := venue.NewClient(venue.Config{BaseURL: k.ann.REST, HTTPClient: &http.Client{Transport: k.rest}})
	if err != nil {
		t.Fatal(err)
	}
	if k.feed, err = venue.NewMarketFeed(venue.MarketFeedConfig{Client: c, Linear: k.pub, StaleAfter: testStaleAfter}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.feed.Close)
	return k
}

// waitFresh watches symbol and waits until the stream holds a fresh band
// and ticker for it.
func (k *feedKit) waitFresh(t *testing.T, symbol string) venue.PublicQuote {
	t.Helper()
	k.pub.Watch(symbol)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if q, ok := k.pub.Quote(symbol); ok && q.HasBand && q.HasTicker && q.BandAge(time.Now()) < time.Second {
			return q
		}
	}
	t.Fatal("the public stream never showed a quote")
	return venue.PublicQuote{}
}

func (k *feedKit) fault(t *testing.T, body string) {
	t.Helper()
	resp, err := http.Post(k.ann.REST+"/sim/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fault %s: %d", body, resp.StatusCode)
	}
}

// The simulator pushes the band of GET /v5/market/price-limit on
// priceLimit.{symbol}, and the ticker's best prices on tickers.{symbol};
// the stream keeps them per watched symbol, nothing for others.
func TestPublicStreamShowsTheBandAndTicker(t *testing.T) {
	k := newFeedKit(t, false, 20*time.Millisecond)
	q := k.waitFresh(t, "BTCUSDT")
	c, _ := venue.NewClient(venue.Config{BaseURL: k.ann.REST})
	band, err := c.PriceLimit(context.Background(), messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	// The band follows the mark second by second: the pushed one is
	// within a hundredth of the one read now.
	if d := q.BuyLimit.Sub(band.BuyLimit).Abs(); d.GreaterThan(band.BuyLimit.Div(decimal.NewFromInt(100))) || !q.SellLimit.IsPositive() ||
		!q.SellLimit.LessThan(q.BuyLimit) || !q.Bid.IsPositive() || !q.Ask.GreaterThan(q.Bid) {
		t.Fatalf("pushed quote %+v, band read %+v", q, band)
	}
	if _, ok := k.pub.Quote("ETHUSDT"); ok {
		t.Fatal("a quote for a symbol not watched")
	}
}

// A frozen stream (the simulator holds its pushes) is not fresh past the
// bound: the quote is read by REST, never the frozen one. A closed
// connection forgets every quote at once, and the next quote is read by
// REST too.
func TestFeedFallsBackToRESTWhenTheStreamFreezesOrDrops(t *testing.T) {
	k := newFeedKit(t, false, 3*time.Second)
	ctx := context.Background()
	k.waitFresh(t, "BTCUSDT")
	if _, _, src, err := k.feed.Quote(ctx, messages.CategoryLinear, "BTCUSDT", true); err != nil || src != venue.QuoteStream {
		t.Fatalf("a fresh stream: %s %v", src, err)
	}
	k.fault(t, `{"kind":"ws_delay","path":"/v5/public/linear","count":1,"delay_ms":8000}`)
	time.Sleep(testStaleAfter + 1200*time.Millisecond)
	before := k.rest.count(venue.PathPriceLimit)
	tk, band, src, err := k.feed.Quote(ctx, messages.CategoryLinear, "BTCUSDT", true)
	if err != nil || src != venue.QuoteREST {
		t.Fatalf("a frozen stream: %s %v", src, err)
	}
	if k.rest.count(venue.PathPriceLimit) != before+1 || tk == nil || band == nil {
		t.Fatalf("the band was not read by REST: %d → %d", before, k.rest.count(venue.PathPriceLimit))
	}
	if q, ok := k.pub.Quote("BTCUSDT"); ok && q.BandAge(time.Now()) <= testStaleAfter {
		t.Fatalf("the frozen stream's band looks fresh: %s old", q.BandAge(time.Now()))
	}

	// Dropped: the next push cuts the connection; the stream waits 3 s
	// before it reconnects.
	k2 := newFeedKit(t, false, 3*time.Second)
	k2.waitFresh(t, "BTCUSDT")
	k2.fault(t, `{"kind":"ws_disconnect","path":"/v5/public/linear","count":1}`)
	for deadline := time.Now().Add(5 * time.Second); k2.pub.Connected(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream never dropped")
		}
	}
	if _, ok := k2.pub.Quote("BTCUSDT"); ok {
		t.Fatal("a quote kept after the connection dropped")
	}
	before = k2.rest.count(venue.PathPriceLimit)
	if _, _, src, err := k2.feed.Quote(ctx, messages.CategoryLinear, "BTCUSDT", true); err != nil || src != venue.QuoteREST || k2.rest.count(venue.PathPriceLimit) != before+1 {
		t.Fatalf("a dropped stream: %s %v, %d band reads", src, err, k2.rest.count(venue.PathPriceLimit)-before)
	}
}

// A hostile stream forges the band wide open and the best prices far off
// (a bid near zero would value a sell at nothing; an ask far up would let
// a market buy cross anywhere), and floods forged pushes: the quote a
// decision gets is never looser than the REST read that anchors it (the
// band no wider, the bid no lower, the ask no higher). A forged narrower
// band only tightens.
func TestFeedForgedPublicPushesCannotLoosenTheQuote(t *testing.T) {
	k := newFeedKit(t, true, 20*time.Millisecond)
	ctx := context.Background()
	var tighten bool
	var mu sync.Mutex
	k.proxy.SetFilter(func(msg []byte) [][]byte {
		var m map[string]any
		if json.Unmarshal(msg, &m) != nil {
			return [][]byte{msg}
		}
		topic, _ := m["topic"].(string)
		mu.Lock()
		narrow := tighten
		mu.Unlock()
		switch {
		case strings.HasPrefix(topic, "priceLimit."):
			if narrow {
				m["data"] = []map[string]string{{"symbol": "BTCUSDT", "buyLmt": "1000", "sellLmt": "999000"}}
			} else {
				m["data"] = []map[string]string{{"symbol": "BTCUSDT", "buyLmt": "99999999", "sellLmt": "0.1"}}
			}
		case strings.HasPrefix(topic, "tickers."):
			d, _ := m["data"].(map[string]any)
			d["bid1Price"], d["ask1Price"] = "0.1", "99999999"
		}
		b, _ := json.Marshal(m)
		return [][]byte{b}
	})
	k.waitFresh(t, "BTCUSDT")
	c, _ := venue.NewClient(venue.Config{BaseURL: k.ann.REST})
	// check asks for a quote: from the stream when fromStream (a flood
	// may hold the real pushes back until the stream is stale: then
	// REST), never looser than REST.
	check := func(when string, fromStream bool) {
		t.Helper()
		tk, band, src, err := k.feed.Quote(ctx, messages.CategoryLinear, "BTCUSDT", true)
		if err != nil || (fromStream && src != venue.QuoteStream) {
			t.Fatalf("%s: %s %v", when, src, err)
		}
		rb, err := c.PriceLimit(ctx, messages.CategoryLinear, "BTCUSDT")
		if err != nil {
			t.Fatal(err)
		}
		rt, err := c.Ticker(ctx, messages.CategoryLinear, "BTCUSDT")
		if err != nil {
			t.Fatal(err)
		}
		// The REST values move with the market while the anchor is at
		// most 5 s old: a tenth of the price is far more than that and
		// far less than what was forged.
		slack := rt.LastPrice.Div(decimal.NewFromInt(10))
		if band.BuyLimit.GreaterThan(rb.BuyLimit.Add(slack)) || band.SellLimit.LessThan(rb.SellLimit.Sub(slack)) ||
			tk.Bid1Price.LessThan(rt.Bid1Price.Sub(slack)) || tk.Ask1Price.GreaterThan(rt.Ask1Price.Add(slack)) {
			t.Fatalf("%s: a forged push loosened the quote: band %s..%s (REST %s..%s), bid %s ask %s (REST %s %s)", when,
				band.SellLimit, band.BuyLimit, rb.SellLimit, rb.BuyLimit, tk.Bid1Price, tk.Ask1Price, rt.Bid1Price, rt.Ask1Price)
		}
	}
	check("forged wide", true)

	// A flood of forged pushes, for the symbol and for symbols not
	// watched: the quote stays bounded, and the stream keeps up.
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan int)
	go func() {
		done <- k.proxy.Flood(fctx, 20000, time.Second, func(i int) []byte {
			sym := "BTCUSDT"
			if i%2 == 1 {
				sym = fmt.Sprintf("X%dUSDT", i)
			}
			return []byte(fmt.Sprintf(`{"topic":"priceLimit.%s","ts":%d,"data":[{"symbol":%q,"buyLmt":"99999999","sellLmt":"0.1"}]}`, sym, time.Now().UnixMilli(), sym))
		})
	}()
	for range 20 {
		check("flooded", false)
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if n := <-done; n < 1000 {
		t.Fatalf("the flood sent %d pushes", n)
	}

	// A forged narrower band is taken: it only refuses more.
	mu.Lock()
	tighten = true
	mu.Unlock()
	// The stream may still be reading the flood's backlog: the bound is
	// generous, it only says the band is taken at all.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, band, _, err := k.feed.Quote(ctx, messages.CategoryLinear, "BTCUSDT", true)
		if err == nil && band.BuyLimit.Equal(decimal.NewFromInt(1000)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a narrower pushed band was not taken: %+v", band)
		}
	}
}

// Nothing dials the public stream until a decision asks for a symbol:
// building it, and the feed over it, opens no connection.
func TestPublicStreamConnectsOnlyAtTheFirstWatch(t *testing.T) {
	k := newFeedKit(t, true, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	if n := k.proxy.Accepted(); n != 0 || k.pub.Connected() {
		t.Fatalf("%d connections before any Watch", n)
	}
	k.waitFresh(t, "BTCUSDT")
	if n := k.proxy.Accepted(); n != 1 {
		t.Fatalf("%d connections after the first Watch, want 1", n)
	}
}
