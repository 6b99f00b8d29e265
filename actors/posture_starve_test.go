package actors

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An agent that keeps a journal write in flight at all times (refused
// orders each journal order_refused) cannot keep an automatic cause from
// taking effect: a posture tick that finds a write in flight is postponed
// behind it, not skipped, so disk_low is journaled while the writes go on.
func TestBusyWritesDoNotStarveAutomaticCauses(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	ts.stop()
	// A margin no disk has: disk_low holds from the first evaluation.
	ts = startUsersWith(t, dir, func(c *Config) {
		c.JournalDir, c.DiskMarginBytes, c.PostureEvery = dir, 1<<62, 100*time.Millisecond
	})
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var n atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_, _ = ts.Handle(ctx, &messages.PlaceOrderCommand{User: "alice", Args: messages.PlaceOrderArgs{Category: messages.CategoryLinear,
					Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.NewNullDecimal(decimal.NewFromInt(1000))}}, messages.ActorAgent)
				n.Add(1)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	deadline := time.Now().Add(3 * time.Second)
	for n.Load() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("setup: only %d refused orders in 3 s", n.Load())
		}
		time.Sleep(time.Millisecond)
	}
	deadline = time.Now().Add(3 * time.Second)
	for {
		got := postureOf(t, ts, "alice")
		if got.State == messages.PostureReducing && containsCause(got.Why, messages.CauseDiskLow) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("disk_low held for 3 s but was never journaled while %d refused orders kept writes in flight: %s %v", n.Load(), got.State, got.Why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
