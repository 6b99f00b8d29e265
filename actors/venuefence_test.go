package actors

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// TestFencedVenueWriteSendsNothing: once Config.Fence says this process
// may have lost the user's shard, a place_order whose attempt is journaled
// sends nothing to the venue and is answered shard_fenced, like a fenced
// journal write (D198). With the fence open the same order is placed.
func TestFencedVenueWriteSendsNothing(t *testing.T) {
	dir := t.TempDir()
	var fenced atomic.Bool
	te := newTradeEnvWith(t, dir, func(c *Config) { c.Fence = func() bool { return !fenced.Load() } })
	te.tradeReady(t, messages.PolicySettings{})

	fenced.Store(true)
	_, e := te.submitPlace(context.Background(), limitArgs("0.001", "30000"))
	if e == nil || e.Details["reason"] != messages.ReasonShardFenced {
		t.Fatalf("fenced place answered %+v", e)
	}
	atts := attemptsOf(t, dir)
	if len(atts) != 1 {
		t.Fatalf("attempts: %+v", atts)
	}
	if n := te.simOrders(t, atts[0].ClientOrderID); n != 0 {
		t.Fatalf("a fenced write reached the venue: %d orders under %s", n, atts[0].ClientOrderID)
	}

	fenced.Store(false)
	if _, e := te.submitPlace(context.Background(), limitArgs("0.001", "30000")); e != nil {
		t.Fatalf("place with the fence open: %+v", e)
	}
	atts = attemptsOf(t, dir)
	if len(atts) != 2 || te.simOrders(t, atts[1].ClientOrderID) != 1 {
		t.Fatalf("the open fence's order is not on the venue: %+v", atts)
	}
}
