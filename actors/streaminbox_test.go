package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func pushedOrder(id, link, status string) messages.Order {
	return messages.Order{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: id, OrderLinkID: link, Status: status}
}

// The inbox coalesces each order to its latest row, signals once until it
// is drained, keeps connection events in order, and over its bound drops
// rows and owes one gap for all of them.
func TestStreamInboxCoalescesAndBoundsItself(t *testing.T) {
	var signals atomic.Int64
	in := newStreamInbox(func() { signals.Add(1) })
	for i := range 1000 {
		in.put(messages.StreamEvent{Kind: messages.StreamOrders, Orders: []messages.Order{pushedOrder("a", "gx-1", fmt.Sprint(i))}})
	}
	in.put(messages.StreamEvent{Kind: messages.StreamDisconnected})
	in.put(messages.StreamEvent{Kind: messages.StreamReconnected})
	in.put(messages.StreamEvent{Kind: messages.StreamOrders, Orders: []messages.Order{pushedOrder("a", "gx-1", "Filled")}})
	if signals.Load() != 1 {
		t.Fatalf("%d signals before a drain, want 1", signals.Load())
	}
	evs := in.drain()
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, string(ev.Kind))
	}
	if strings.Join(kinds, ",") != "order,disconnected,reconnected,order" || evs[0].Orders[0].Status != "999" || len(evs[0].Orders) != 1 {
		t.Fatalf("drained %v (first %+v)", kinds, evs[0].Orders)
	}

	for i := range 3 * maxInboxRows {
		in.put(messages.StreamEvent{Kind: messages.StreamOrders, Orders: []messages.Order{pushedOrder(fmt.Sprint("o", i), "", "New")}})
	}
	if signals.Load() != 2 {
		t.Fatalf("%d signals, want 2", signals.Load())
	}
	evs = in.drain()
	if len(evs) != 2 || len(evs[0].Orders) != maxInboxRows || evs[1].Kind != messages.StreamGap || evs[1].Dropped != 2*maxInboxRows || evs[1].Reason != inboxOverflow {
		t.Fatalf("an overflow drained %d events: %d rows, then %+v", len(evs), len(evs[0].Orders), evs[len(evs)-1])
	}
	// Another overflow within inboxGapEvery: its gap waits, and is
	// signalled when due.
	for i := range maxInboxRows + 1 {
		in.put(messages.StreamEvent{Kind: messages.StreamOrders, Orders: []messages.Order{pushedOrder(fmt.Sprint("p", i), "", "New")}})
	}
	if evs = in.drain(); len(evs) != 1 {
		t.Fatalf("a second gap within a second: %d events", len(evs))
	}
	deadline := time.Now().Add(5 * time.Second)
	for signals.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if evs = in.drain(); len(evs) != 1 || evs[0].Kind != messages.StreamGap || evs[0].Dropped != 1 {
		t.Fatalf("the held-back gap: %+v", evs)
	}
}

// A venue_update holds at most maxVenueUpdateRows rows, one per order, at
// most maxExternalRows of others' orders, the server's own orders before
// others; the rest are counted.
func TestVenueUpdateBufferKeepsOwnOrdersFirst(t *testing.T) {
	b := newVenueUpdateBuffer()
	for i := range 2 * maxVenueUpdateRows {
		b.add(time.Now(), []messages.Order{pushedOrder(fmt.Sprint("x", i), fmt.Sprint("ext-", i), "New")})
	}
	for i := range maxVenueUpdateRows - maxExternalRows {
		b.add(time.Now(), []messages.Order{pushedOrder(fmt.Sprint("g", i), fmt.Sprint("gx-abc-", i), "New")})
	}
	if b.add(time.Now(), []messages.Order{pushedOrder("mine", "gx-abc-1", "New"), pushedOrder("mine", "gx-abc-1", "Filled")}) {
		t.Fatal("a second signal while one is on its way")
	}
	rows, omitted, _, wait := b.take()
	if wait != 0 || len(rows) != maxVenueUpdateRows || omitted != 2*maxVenueUpdateRows-maxExternalRows+1 {
		t.Fatalf("took %d rows, %d omitted, wait %s", len(rows), omitted, wait)
	}
	found := false
	for _, r := range rows {
		found = found || (r.OrderID == "mine" && r.Status == "Filled")
	}
	if !found {
		t.Fatal("the server's own order was left out, or not at its latest row")
	}
	if _, _, _, wait := b.take(); wait <= 0 {
		t.Fatal("a second venue_update at once")
	}
}

// The flapping rule: a stream that keeps reconnecting counts as down from
// when its last healthy connection went down, until a connection holds
// streamStableFor and the reconnects thin out.
func TestStreamHealthCountsFlaps(t *testing.T) {
	c := newStreamCache()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	c.mu.Lock()
	c.open, c.since, c.unstableSince = true, t0, t0
	c.mu.Unlock()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	c.note(messages.StreamEvent{Kind: messages.StreamConnected}, at(0))
	if h := c.health(at(time.Second)); h.DownForS != 0 || h.Flapping {
		t.Fatalf("healthy: %+v", h)
	}
	// One drop and a reconnect: down only while down.
	c.note(messages.StreamEvent{Kind: messages.StreamDisconnected}, at(10*time.Second))
	c.note(messages.StreamEvent{Kind: messages.StreamReconnected}, at(11*time.Second))
	if h := c.health(at(11 * time.Second)); h.DownForS != 0 || h.Flapping {
		t.Fatalf("after one reconnect: %+v", h)
	}
	// Down and up every 200 ms from 20 s on.
	for i := range 20 {
		c.note(messages.StreamEvent{Kind: messages.StreamDisconnected}, at(20*time.Second+time.Duration(2*i)*100*time.Millisecond))
		c.note(messages.StreamEvent{Kind: messages.StreamReconnected}, at(20*time.Second+time.Duration(2*i+1)*100*time.Millisecond))
	}
	h := c.health(at(24 * time.Second))
	if !h.Connected || !h.Flapping || h.DownForS < 3 {
		t.Fatalf("flapping for 4 s: %+v", h)
	}
	// The last connection (at 23.9 s) holds 3 s, but more than
	// streamChurnMax reconnects fall within the last minute: still
	// flapping (D90).
	if h := c.health(at(27 * time.Second)); !h.Flapping || h.DownForS < 3 {
		t.Fatalf("a connection held 3 s after 20 reconnects: %+v", h)
	}
	// A minute on, the reconnects have thinned out: healthy again.
	if h := c.health(at(84 * time.Second)); h.Flapping || h.DownForS != 0 {
		t.Fatalf("after a connection held: %+v", h)
	}
}

// Drops are journaled once, not per drop: the first gap's stream_dropped
// at once, the next ones summed into one a minute later at the earliest.
func TestStreamDropsAreJournaledOnce(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ctx := context.Background()
	if _, err := ts.Handle(ctx, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Handle(ctx, &messages.ShowPolicyRequest{User: "alice"}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	pid := ts.registry.get("alice")
	if pid == nil {
		t.Fatal("alice's actor is not running")
	}
	for range 50 {
		ts.sys.Root.Send(pid, &streamResync{reason: string(messages.StreamGap), dropped: 10, dropReason: inboxOverflow})
	}
	// In order after the resyncs: once it answers, they were handled.
	if _, err := ts.Handle(ctx, &messages.ShowPolicyRequest{User: "alice"}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	var got []messages.StreamDroppedEvent
	for _, r := range ts.records(t) {
		if messages.RecordType(r.Type) == messages.RecordStreamDropped {
			var ev messages.StreamDroppedEvent
			if err := json.Unmarshal(r.Payload, &ev); err != nil {
				t.Fatal(err)
			}
			got = append(got, ev)
		}
	}
	if len(got) != 1 || got[0].Dropped != 10 || got[0].Gaps != 1 || got[0].Reason != inboxOverflow {
		t.Fatalf("50 gaps journaled as %+v, want one stream_dropped of the first", got)
	}
	// Replay accepts the record: the server starts again on its journal.
	again := startUsers(t, dir)
	if _, err := again.Handle(ctx, &messages.ShowPolicyRequest{User: "alice"}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
}
