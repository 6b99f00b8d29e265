package actors

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// reviewEmptyVenue is a REST venue whose every position list is empty: it
// shows no position at all, for any symbol it is asked about.
func reviewEmptyVenue(t *testing.T) *venue.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"retCode":0,"retMsg":"OK","result":{"category":"linear","list":[],"nextPageCursor":""},"retExtInfo":{},"time":1764640000000}`))
	}))
	t.Cleanup(srv.Close)
	c, err := venue.NewClient(venue.Config{BaseURL: srv.URL, APIKey: "reviewkey", APISecret: "reviewsecret"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// D94: "a forged one is dropped at that read". A pushed position whose
// symbol is exchange text that is not a symbol (here "btcusdt") could
// never be dropped by a REST read (the read by symbol refuses the name),
// so it is never kept: its loss never counts, it is only counted as
// unreadable. A REST read's such row counts until a read of every position
// no longer shows it.
func TestPushedLossOnUnreadableSymbolNeverCounts(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	client := reviewEmptyVenue(t)
	c := newStreamCache()
	c.setListing(func(context.Context, messages.Category, string) (bool, error) { return false, nil }) // the venue lists nothing
	c.mu.Lock()
	c.open = true
	c.mu.Unlock()
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("btcusdt", 0, "1", "0", "-1000000")}}, now)
	wantLoss(t, c, now, "0") // never counted
	c.mu.Lock()
	kept, worst := len(c.positions), len(c.worst)
	c.mu.Unlock()
	if kept != 0 || worst != 0 {
		t.Fatalf("a pushed row whose symbol is not one was kept: %d positions, %d worst", kept, worst)
	}
	if x := c.exposure(func(string) string { return "" }, 10); x.Unreadable != 1 || len(x.Positions) != 0 {
		t.Fatalf("exposure %+v: want the pushed row counted as unreadable only", x)
	}
	// A REST read's row of that name counts (fail closed) until the
	// posture clock's read of every position (every 2 s), against a venue
	// that shows no position at all, no longer shows it.
	c.seed(nil, []messages.Position{linPos("btcusdt", 0, "1", "0", "-1000000")}, now)
	wantLoss(t, c, now, "1000000")
	at := now.Add(2 * time.Second)
	if !c.wantsPositions(at, 2*time.Second) {
		t.Fatal("read not wanted while a position is open")
	}
	c.polled(readPositions(context.Background(), client, c), at)
	wantLoss(t, c, now.Add(time.Minute), "0")
	if c.wantsPositions(now.Add(time.Minute), 2*time.Second) {
		t.Fatal("positions still read every 2 s after the read showed none")
	}
}

// A flood of pushed positions whose symbols are not symbols (each new)
// would grow the stream cache's positions (and worst) per push, keyed by
// exchange-chosen text that no REST read can name: such rows are not kept
// at all, and symbol-shaped pushed rows (or forged position indexes) are
// bounded by count.
func TestUnreadablePositionPushesAreNotKept(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	c.setListing(func(context.Context, messages.Category, string) (bool, error) { return false, nil })
	const n = 50000
	for i := range n / 100 {
		rows := make([]messages.Position, 0, 100)
		for j := range 100 {
			rows = append(rows, linPos(fmt.Sprintf("x-%d-%d", i, j), 0, "1", "0", "-1"))
		}
		c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: rows}, now)
	}
	c.mu.Lock()
	got, worst := len(c.positions), len(c.worst)
	c.mu.Unlock()
	if got != 0 || worst != 0 {
		t.Fatalf("%d forged pushed rows left %d positions and %d worst entries in the cache", n, got, worst)
	}
	// Symbol-shaped names and position indexes, without a listing check.
	c = newStreamCache()
	for i := range n / 100 {
		rows := make([]messages.Position, 0, 100)
		for j := range 100 {
			rows = append(rows, linPos(fmt.Sprintf("F%dX%dUSDT", i, j), 0, "1", "0", "-1"), linPos("BTCUSDT", i*100+j+3, "1", "0", "-1"))
		}
		c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: rows}, now)
	}
	c.mu.Lock()
	got, worst = len(c.positions), len(c.worst)
	c.mu.Unlock()
	if got > maxPositions || worst > maxPositions {
		t.Fatalf("%d forged pushed rows left %d positions and %d worst entries in the cache (bound %d)", 2*n, got, worst, maxPositions)
	}
}

// The traded set is keyed by exchange-chosen symbols: pushed executions
// add at most maxTraded entries (past it every instrument counts as
// traded: fail closed), and the day's roll starts it again.
func TestForgedExecutionsKeepTradedBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	const n = 50000
	for i := range n / 100 {
		rows := make([]messages.Execution, 0, 100)
		for j := range 100 {
			rows = append(rows, messages.Execution{Category: messages.CategoryLinear, Symbol: fmt.Sprintf("F%dX%dUSDT", i, j)})
		}
		c.note(messages.StreamEvent{Kind: messages.StreamExecutions, Executions: rows}, now)
	}
	c.mu.Lock()
	got, overflow := len(c.traded), c.tradedOverflow
	c.mu.Unlock()
	if got > maxTraded || !overflow {
		t.Fatalf("%d forged executions left %d entries in traded (bound %d), overflow %v", n, got, maxTraded, overflow)
	}
	c.note(messages.StreamEvent{Kind: messages.StreamPositions}, now.Add(24*time.Hour)) // a new day
	c.mu.Lock()
	got, overflow = len(c.traded), c.tradedOverflow
	c.mu.Unlock()
	if got != 0 || overflow {
		t.Fatalf("after the day's roll %d entries in traded (overflow %v), want none", got, overflow)
	}
}

// D90: "a stream that keeps reconnecting counts as down". A proxy that
// cuts the stream each time a connection has held 3.1 s (the stream then
// waits its backoff(0), 250-500 ms, and reconnects) keeps it reconnecting
// 17 times a minute for as long as it likes. Each connection holds
// streamStableFor, but more than streamChurnMax reconnects a minute count
// as flapping however long each held: the stale clock runs across them
// and the stream counts as stale.
func TestStreamCutEvery3sCountsAsStale(t *testing.T) {
	c := newStreamCache()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	c.mu.Lock()
	c.open, c.since, c.unstableSince = true, t0, t0
	c.mu.Unlock()
	at := t0
	c.note(messages.StreamEvent{Kind: messages.StreamConnected}, at)
	maxDown, reconnects := 0.0, 0
	for at.Before(t0.Add(5 * time.Minute)) {
		for step := range 31 { // sample get_posture every 100 ms while connected
			if h := c.health(at.Add(time.Duration(step) * 100 * time.Millisecond)); (!h.Connected || h.Flapping) && h.DownForS > maxDown {
				maxDown = h.DownForS
			}
		}
		at = at.Add(3100 * time.Millisecond)
		c.note(messages.StreamEvent{Kind: messages.StreamDisconnected}, at)
		if h := c.health(at.Add(400 * time.Millisecond)); h.DownForS > maxDown {
			maxDown = h.DownForS
		}
		at = at.Add(500 * time.Millisecond)
		c.note(messages.StreamEvent{Kind: messages.StreamReconnected}, at)
		reconnects++
	}
	if maxDown < 15 { // the default stream_stale_s
		t.Fatalf("%d reconnects in 5 minutes: the stream was at most %.1f s down or flapping (stale at 15 s): it never counts as stale", reconnects, maxDown)
	}
}

// D94: a REST read's row of an instrument not yet known "keeps waiting
// ... its loss (never its gain) counted meanwhile". A stream that keeps
// pushing forged positions on new symbol-shaped names (each waits for its
// look-up, 100 ms apart) fills the pushed rows' places only: a REST read's
// real position on an instrument not yet known (one opened outside the
// server) still waits, its loss counted; and past the REST rows' own
// bound a REST row applies without its look-up (fail closed).
func TestForgedPushesCannotCrowdOutARealRESTLoss(t *testing.T) {
	now := time.Now().UTC()
	c := newStreamCache()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.setListing(func(ctx context.Context, _ messages.Category, symbol string) (bool, error) {
		select { // the venue answers slowly (or the look-ups are behind many others)
		case <-release:
		case <-ctx.Done():
		}
		return false, ctx.Err()
	})
	rows := make([]messages.Position, 0, maxHeldRows)
	for i := range maxHeldRows {
		rows = append(rows, linPos(fmt.Sprintf("FORGED%dUSDT", i), 0, "1", "0", "0"))
	}
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: rows}, now)
	// REST: a real open position with a large unrealised loss.
	c.seed(nil, []messages.Position{linPos("SOLUSDT", 0, "10", "0", "-1000000")}, now)
	if got := c.dailyLoss(now); got.LessThan(num("1000000")) {
		t.Fatalf("daily loss %s while REST shows a loss of 1000000 (the row was dropped: held full of forged pushed rows)", got)
	}
	if c.exposure(func(string) string { return "" }, 10).Known {
		t.Fatal("exposure known while a REST read's row waits for its look-up")
	}
	more := make([]messages.Position, 0, maxHeldRESTRows+10)
	for i := range maxHeldRESTRows + 10 {
		more = append(more, linPos(fmt.Sprintf("REAL%dUSDT", i), 0, "1", "0", "-1"))
	}
	c.seed(nil, more, now)
	if got, want := c.dailyLoss(now), num("1000000").Add(decimal.NewFromInt(maxHeldRESTRows+10)); got.LessThan(want) {
		t.Fatalf("daily loss %s while REST shows a loss of %s (rows past the held bound were dropped)", got, want)
	}
}

// D94: while an instrument's look-up fails, "a REST read's row keeps
// waiting (retried every second), its loss (never its gain) counted
// meanwhile". A push of the same position never takes the REST row's place
// among the held rows: a forged flat push cannot erase a loss REST showed,
// neither at once nor when the look-up fails again.
func TestPushNeverReplacesAHeldRESTLoss(t *testing.T) {
	now := time.Now().UTC()
	c := newStreamCache()
	c.setListing(func(context.Context, messages.Category, string) (bool, error) {
		return false, fmt.Errorf("instruments-info unavailable")
	})
	c.seed(nil, []messages.Position{linPos("SOLUSDT", 0, "10", "0", "-1000000")}, now)
	wantLoss(t, c, now, "1000000") // held, its loss counted meanwhile
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("SOLUSDT", 0, "0", "0", "0")}}, now)
	wantLoss(t, c, now, "1000000")
	c.listedAnswer(messages.CategoryLinear, "SOLUSDT", false, fmt.Errorf("instruments-info unavailable"))
	wantLoss(t, c, now, "1000000")
}
