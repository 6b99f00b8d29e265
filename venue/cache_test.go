package venue

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// instrumentHandler serves the linear BTCUSDT instrument sample.
func instrumentHandler(t testing.TB) http.HandlerFunc {
	body := readTestdata(t, "v5-market-instruments-info.linear.handmade.json")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

// manualClock is a settable clock for TTL tests.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (m *manualClock) Now() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.now }
func (m *manualClock) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

func TestInstrumentCacheTTL(t *testing.T) {
	fv := newFakeVenue(t, instrumentHandler(t))
	c, _ := newTestClient(t, fv.URL)
	clk := &manualClock{now: fixedNow}
	ic := NewInstrumentCache(c, time.Minute, clk.Now)
	ctx := context.Background()

	get := func() *messages.Instrument {
		t.Helper()
		in, err := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	in := get()
	if !in.FetchedAt.Equal(fixedNow) || fv.hits.Load() != 1 {
		t.Fatalf("FetchedAt %v hits %d", in.FetchedAt, fv.hits.Load())
	}
	in.Symbol = "MUTATED" // callers get copies
	clk.Advance(time.Minute - time.Nanosecond)
	if in2 := get(); in2.Symbol != "BTCUSDT" || fv.hits.Load() != 1 {
		t.Fatalf("fresh entry re-fetched or mutated: %s hits %d", in2.Symbol, fv.hits.Load())
	}
	clk.Advance(time.Nanosecond)
	if in3 := get(); fv.hits.Load() != 2 || !in3.FetchedAt.Equal(fixedNow.Add(time.Minute)) {
		t.Fatalf("expired entry not re-fetched: hits %d FetchedAt %v", fv.hits.Load(), in3.FetchedAt)
	}
	get()
	if fv.hits.Load() != 2 {
		t.Fatalf("hits %d after refresh", fv.hits.Load())
	}
	ic.Invalidate(messages.CategoryLinear, "BTCUSDT")
	get()
	if fv.hits.Load() != 3 {
		t.Fatalf("hits %d after Invalidate", fv.hits.Load())
	}
}

func TestInstrumentCacheDoesNotCacheErrors(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	ok := instrumentHandler(t)
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		ok(w, r)
	})
	c, _ := newTestClient(t, fv.URL, func(cfg *Config) { cfg.ReadRetries = -1 })
	ic := NewInstrumentCache(c, time.Minute, func() time.Time { return fixedNow })
	if _, err := ic.Get(context.Background(), messages.CategoryLinear, "BTCUSDT"); messages.CodeOf(err) != messages.CodeExchangeUnavailable {
		t.Fatalf("first Get: %v", err)
	}
	fail.Store(false)
	if _, err := ic.Get(context.Background(), messages.CategoryLinear, "BTCUSDT"); err != nil {
		t.Fatalf("second Get: %v", err)
	}
	if fv.hits.Load() != 2 {
		t.Fatalf("hits %d", fv.hits.Load())
	}
}

// handlerTransport serves an http.Handler in memory, so the test can run in
// a synctest bubble (sockets would keep the bubble from idling, docs/invariants.md "Rules of the code").
type handlerTransport struct {
	h    http.Handler
	hits atomic.Int32
}

func (ht *handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ht.hits.Add(1)
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

func TestInstrumentCacheConcurrentMissesFetchOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		serve := instrumentHandler(t)
		tr := &handlerTransport{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release // hold the first fetch until every caller is waiting
			serve(w, r)
		})}
		c, err := NewClient(Config{BaseURL: "http://venue.invalid", HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		ic := NewInstrumentCache(c, time.Minute, nil)

		const callers = 32
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for range callers {
			wg.Go(func() {
				in, err := ic.Get(context.Background(), messages.CategoryLinear, "BTCUSDT")
				if err == nil && in.Symbol != "BTCUSDT" {
					err = errors.New("wrong instrument")
				}
				errs <- err
			})
		}
		synctest.Wait() // every caller is now blocked: one in the fetch, the rest waiting on it
		if n := tr.hits.Load(); n != 1 {
			t.Fatalf("%d fetches in flight, want 1", n)
		}
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := tr.hits.Load(); n != 1 {
			t.Fatalf("venue hit %d times, want 1", n)
		}
	})
}

func TestInstrumentCacheWaiterCancelDoesNotFailOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		serve := instrumentHandler(t)
		tr := &handlerTransport{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			serve(w, r)
		})}
		c, err := NewClient(Config{BaseURL: "http://venue.invalid", HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		ic := NewInstrumentCache(c, time.Minute, nil)

		// The first caller starts the fetch, then gives up.
		ctx, cancel := context.WithCancel(context.Background())
		firstErr := make(chan error, 1)
		go func() { _, err := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT"); firstErr <- err }()
		synctest.Wait()
		otherErr := make(chan error, 1)
		go func() {
			_, err := ic.Get(context.Background(), messages.CategoryLinear, "BTCUSDT")
			otherErr <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-firstErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", err)
		}
		close(release)
		if err := <-otherErr; err != nil {
			t.Fatalf("other caller failed with the first one: %v", err)
		}
		if n := tr.hits.Load(); n != 1 {
			t.Fatalf("hits %d", n)
		}
	})
}

// BenchmarkInstrumentCacheHit is the cost of reading fresh rules, the
// path every order takes once the cache is warm.
func BenchmarkInstrumentCacheHit(b *testing.B) {
	tr := &handlerTransport{h: instrumentHandler(b)}
	c, err := NewClient(Config{BaseURL: "http://venue.invalid", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	ic := NewInstrumentCache(c, time.Hour, nil)
	ctx := context.Background()
	if _, err := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT"); err != nil {
			b.Fatal(err)
		}
	}
}

// panickingTransport panics on every request, as a bug under the fetch
// would.
type panickingTransport struct{}

func (panickingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	panic("transport: a bug")
}

// A panic under the instrument fetch is the fetch's error: singleflight
// would re-raise it on a goroutine no caller's recover reaches, and the
// whole server would die of one public read.
func TestInstrumentCacheFetchPanicIsAnError(t *testing.T) {
	c, _ := newTestClient(t, "http://paper.invalid", func(cfg *Config) {
		cfg.HTTPClient = &http.Client{Transport: panickingTransport{}}
		cfg.ReadRetries = -1
	})
	ic := NewInstrumentCache(c, time.Minute, func() time.Time { return fixedNow })
	if _, err := ic.Get(context.Background(), messages.CategoryLinear, "BTCUSDT"); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("Get under a panicking fetch: %v, want internal_error", err)
	}
}

// With RefreshAhead, an entry older than half the TTL is served and read
// again in the background; without it (above), only an expired entry is.
func TestInstrumentCacheRefreshAhead(t *testing.T) {
	fv := newFakeVenue(t, instrumentHandler(t))
	c, _ := newTestClient(t, fv.URL)
	clk := &manualClock{now: fixedNow}
	ic := NewInstrumentCache(c, time.Minute, clk.Now)
	ic.RefreshAhead()
	ctx := context.Background()
	if _, err := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	in, err := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT")
	if err != nil || !in.FetchedAt.Equal(fixedNow) {
		t.Fatalf("the entry was not served while it is read again: %v %v", in, err)
	}
	for deadline := time.Now().Add(5 * time.Second); fv.hits.Load() != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not read again in the background: hits %d", fv.hits.Load())
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if in, _ := ic.Get(ctx, messages.CategoryLinear, "BTCUSDT"); in.FetchedAt.Equal(fixedNow.Add(30 * time.Second)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the entry read again was not kept")
		}
	}
}
