package actors

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

// D94: "a forged one is dropped at that read". A forged pushed position
// whose symbol is exchange text that is not a symbol (here "btcusdt") is
// admitted without a listing look-up (admitLocked), its loss counts at
// once, and no REST read can ever drop it: vanished names it, but the
// read by symbol refuses the name (checkListArgs), so absentIn never runs
// and worst stays until 00:00 UTC -- the forced REDUCING "for the rest of
// the day" that issue 17 part A asked to fix.
func TestReviewForgedLossOnUnreadableSymbolIsNeverDropped(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	client := reviewEmptyVenue(t)
	c := newStreamCache()
	c.setListing(func(context.Context, messages.Category, string) (bool, error) { return false, nil }) // the venue lists nothing
	c.mu.Lock()
	c.open = true
	c.mu.Unlock()
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("btcusdt", 0, "1", "0", "-1000000")}}, now)
	wantLoss(t, c, now, "1000000") // stricter at once: allowed
	// The posture clock's reads (every 2 s), as pollPositions runs them,
	// against a venue that shows no position at all.
	for i := range 5 {
		at := now.Add(time.Duration(2*(i+1)) * time.Second)
		if !c.wantsPositions(at, 2*time.Second) {
			t.Fatalf("read %d not wanted", i)
		}
		c.polled(readPositions(context.Background(), client, c), at)
	}
	wantLoss(t, c, now.Add(time.Minute), "0")
}

// A flood of pushed positions whose symbols are not symbols (each new)
// grows the stream cache's positions (and worst) without bound: they are
// admitted without a look-up and never removed (no REST read can name
// them), so memory grows per push, keyed by exchange-chosen text.
func TestReviewUnreadablePositionPushesGrowTheCacheWithoutBound(t *testing.T) {
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
	if got > maxListed || worst > maxListed {
		t.Fatalf("%d forged pushed rows left %d positions and %d worst entries in the cache (no bound)", n, got, worst)
	}
}

// The traded set is keyed by exchange-chosen symbols: every pushed
// execution with a new symbol-shaped name adds an entry that is never
// removed (not even at the day's roll), so a flood of forged executions
// grows it per push.
func TestReviewForgedExecutionsGrowTradedWithoutBound(t *testing.T) {
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
	c.note(messages.StreamEvent{Kind: messages.StreamPositions}, now.Add(24*time.Hour)) // a new day
	c.mu.Lock()
	got := len(c.traded)
	c.mu.Unlock()
	if got > maxListed {
		t.Fatalf("%d forged executions left %d entries in traded (no bound)", n, got)
	}
}

// D90: "a stream that keeps reconnecting counts as down". A proxy that
// cuts the stream each time a connection has held 3.1 s (the stream then
// waits its backoff(0), 250-500 ms, and reconnects) keeps it reconnecting
// 17 times a minute for as long as it likes, yet the stream never counts
// as flapping for long and never as stale: each cut finds a connection
// that held streamStableFor, which restarts the stale clock, and the
// reconnect clears it.
func TestReviewStreamCutEvery3sNeverCountsAsStale(t *testing.T) {
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
// ... its loss (never its gain) counted meanwhile". But the rows that wait
// are at most maxHeldRows and pushed rows take those places first: a
// stream that keeps pushing forged positions on new symbol-shaped names
// (each waits for its look-up, 100 ms apart) keeps held full, and a REST
// read's real position on an instrument not yet known (one opened outside
// the server) is dropped, read after read: its loss never counts, so the
// stream has made the posture looser than REST shows.
func TestReviewForgedPushesCrowdOutARealRESTLoss(t *testing.T) {
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
}

// D94: while an instrument's look-up fails, "a REST read's row keeps
// waiting (retried every second), its loss (never its gain) counted
// meanwhile". A push of the same position takes the REST row's place among
// the held rows (admitLocked overwrites held[k] with rest false): the REST
// loss stops counting at once, and when the look-up fails again the pushed
// row is dropped -- a forged flat push erases a loss REST showed.
func TestReviewPushReplacesAHeldRESTLoss(t *testing.T) {
	now := time.Now().UTC()
	c := newStreamCache()
	c.setListing(func(context.Context, messages.Category, string) (bool, error) {
		return false, fmt.Errorf("instruments-info unavailable")
	})
	c.seed(nil, []messages.Position{linPos("SOLUSDT", 0, "10", "0", "-1000000")}, now)
	wantLoss(t, c, now, "1000000") // held, its loss counted meanwhile
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("SOLUSDT", 0, "0", "0", "0")}}, now)
	wantLoss(t, c, now, "1000000")
}
