package actors

import (
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Bounds of the venue_update records (docs/journal-format.md).
const (
	// maxVenueUpdateRows bounds the order rows of one venue_update; the
	// server's own orders are kept before any other, and the rows left
	// out are counted in the record (omitted).
	maxVenueUpdateRows = 128
	// maxExternalRows bounds the rows of orders that are not the server's
	// own in one venue_update: a flood of forged external orders costs at
	// most this many rows every venueUpdateEvery.
	maxExternalRows = 32
	// maxVenueUpdateBytes bounds the size of one venue_update's rows
	// (rowBytes): the rows past it, the server's own kept first, are
	// counted in omitted.
	maxVenueUpdateBytes = 64 << 10
	// venueUpdateRowOverhead is what a row costs in a record besides its
	// text fields (keys, decimals the venue package bounds, origin).
	venueUpdateRowOverhead = 256
	// maxSentIDs bounds the client order ids of creates the buffer
	// remembers as the server's own (the latest are kept).
	maxSentIDs = 1024
	// venueUpdateEvery spaces the venue_update records of one user: the
	// rows pushed meanwhile wait, coalesced, for the next.
	venueUpdateEvery = 200 * time.Millisecond
	// venueUpdateResignal: a signal that was not taken for this long is
	// sent again (a user actor that restarted drops what it had queued).
	venueUpdateResignal = 5 * time.Second
	// streamDroppedEvery spaces the stream_dropped records of one user:
	// the drops meanwhile are counted into the next.
	streamDroppedEvery = time.Minute
)

// streamOrdersReady tells the user actor that the venue actor put order
// rows into buf: it journals them as one venue_update. At most one is on
// its way at a time (venueUpdateBuffer.signalled).
type streamOrdersReady struct{ buf *venueUpdateBuffer }

// venueUpdateBuffer holds the order rows the stream pushed since the user
// actor last journaled them: one row per order (the latest wins), at most
// maxVenueUpdateRows, of which at most maxExternalRows of orders that are
// not the server's own. The venue actor adds, the user actor takes. Safe
// for concurrent use.
type venueUpdateBuffer struct {
	mu sync.Mutex
	// guarded by mu
	rows      []messages.Order
	at        map[string]int // rows' index by category and order id
	external  int            // rows of orders that are not the server's own
	omitted   int            // rows left out since the last take
	latest    time.Time      // the latest push's time
	signalled bool           // a streamOrdersReady is on its way
	sentAt    time.Time      // when it was sent
	lastTake  time.Time
	// sentIDs are the client order ids of the creates the venue actor
	// sent (at most maxSentIDs, the oldest forgotten first, in sentOrder).
	sentIDs   map[string]bool
	sentOrder []string
}

func newVenueUpdateBuffer() *venueUpdateBuffer {
	return &venueUpdateBuffer{at: map[string]int{}, sentIDs: map[string]bool{}}
}

// How much a row is the server's own, the best first: its client order
// id is one the server sent (sent), or only has the server's shape ("gx-",
// exchange text anyone can push), or neither (external). The origin
// written in the record is decided by the user actor (orderOrigin).
const (
	rankSent = iota
	rankOwnShape
	rankExternal
)

// sent remembers the client order id of a create the venue actor sends:
// a pushed row of it is the server's own order.
func (b *venueUpdateBuffer) sent(clientOrderID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if clientOrderID == "" || b.sentIDs[clientOrderID] {
		return
	}
	if len(b.sentOrder) >= maxSentIDs {
		delete(b.sentIDs, b.sentOrder[0])
		b.sentOrder = b.sentOrder[1:]
	}
	b.sentIDs[clientOrderID] = true
	b.sentOrder = append(b.sentOrder, clientOrderID)
}

// rankLocked is how much o is the server's own (rankSent first).
func (b *venueUpdateBuffer) rankLocked(o messages.Order) int {
	switch {
	case b.sentIDs[o.OrderLinkID]:
		return rankSent
	case strings.HasPrefix(o.OrderLinkID, "gx-"):
		return rankOwnShape
	}
	return rankExternal
}

// rowBytes is about what a row costs in a venue_update record.
func rowBytes(o messages.Order) int {
	return venueUpdateRowOverhead + len(o.OrderLinkID) + len(o.OrderID) + len(o.Category) + len(o.Symbol) + len(o.Side) + len(o.Status)
}

// add coalesces rows into the buffer and reports whether the user actor
// must be signalled (no signal is on its way). When the buffer is full a
// row takes the place of one of a lower rank (the lowest, latest first).
func (b *venueUpdateBuffer) add(at time.Time, rows []messages.Order) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if at.After(b.latest) {
		b.latest = at
	}
	for _, o := range rows {
		k := string(o.Category) + ":" + o.OrderID
		if i, ok := b.at[k]; ok {
			b.rows[i] = o // latest wins
			continue
		}
		rank := b.rankLocked(o)
		if rank == rankExternal && b.external >= maxExternalRows {
			b.omitted++
			continue
		}
		if len(b.rows) < maxVenueUpdateRows {
			b.at[k] = len(b.rows)
			b.rows = append(b.rows, o)
			if rank == rankExternal {
				b.external++
			}
			continue
		}
		b.omitted++
		worst, worstRank := -1, rank
		for i := len(b.rows) - 1; i >= 0; i-- {
			if r := b.rankLocked(b.rows[i]); r > worstRank {
				worst, worstRank = i, r
			}
		}
		if worst >= 0 {
			delete(b.at, string(b.rows[worst].Category)+":"+b.rows[worst].OrderID)
			if worstRank == rankExternal {
				b.external--
			}
			b.rows[worst] = o
			b.at[k] = worst
		}
	}
	now := time.Now()
	if (b.signalled && now.Sub(b.sentAt) < venueUpdateResignal) || (len(b.rows) == 0 && b.omitted == 0) {
		return false
	}
	b.signalled, b.sentAt = true, now
	return true
}

// withinBytesLocked keeps of rows, in their order, those that fit in
// maxVenueUpdateBytes, the server's own first (by rank); it returns them
// and how many were left out.
func (b *venueUpdateBuffer) withinBytesLocked(rows []messages.Order) ([]messages.Order, int) {
	budget, left := maxVenueUpdateBytes, 0
	keep := make([]bool, len(rows))
	for rank := rankSent; rank <= rankExternal; rank++ {
		for i, o := range rows {
			if b.rankLocked(o) != rank {
				continue
			}
			if n := rowBytes(o); n <= budget {
				keep[i], budget = true, budget-n
			} else {
				left++
			}
		}
	}
	if left == 0 {
		return rows, 0
	}
	kept := make([]messages.Order, 0, len(rows)-left)
	for i, o := range rows {
		if keep[i] {
			kept = append(kept, o)
		}
	}
	return kept, left
}

// take empties the buffer, or, when the last take is more recent than
// venueUpdateEvery, answers how long to wait first (the signal stays on
// its way: the caller sends it again then).
func (b *venueUpdateBuffer) take() (rows []messages.Order, omitted int, at time.Time, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now() // real time: it paces journal writes
	if w := venueUpdateEvery - now.Sub(b.lastTake); w > 0 {
		return nil, 0, time.Time{}, w
	}
	rows, left := b.withinBytesLocked(b.rows)
	omitted, at = b.omitted+left, b.latest
	b.rows, b.at, b.external, b.omitted, b.signalled, b.lastTake = nil, map[string]int{}, 0, 0, false, now
	return rows, omitted, at, 0
}

// journalVenueUpdate journals the order rows the stream pushed since the
// last venue_update, compactly, as one record; when the last one is too
// recent it comes back when it is due.
func (u *userActor) journalVenueUpdate(ctx actor.Context, m *streamOrdersReady) {
	rows, omitted, at, wait := m.buf.take()
	if wait > 0 {
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(wait, func() { root.Send(self, m) })
		return
	}
	if len(rows) == 0 && omitted == 0 {
		return
	}
	if at.IsZero() {
		at = u.now()
	}
	ev := messages.VenueUpdateEvent{At: at.UTC(), Orders: make([]messages.VenueOrderMark, 0, len(rows)), Omitted: omitted}
	for _, o := range rows {
		ev.Orders = append(ev.Orders, messages.VenueOrderMark{
			ClientOrderID: o.OrderLinkID, OrderID: o.OrderID, Category: o.Category, Symbol: o.Symbol, Side: o.Side,
			Status: o.Status, Qty: o.Qty, CumExecQty: o.CumExecQty, AvgPrice: o.AvgPrice, Origin: u.state.OrderOrigin(o.OrderLinkID),
		})
	}
	u.write(ctx, state.Event{Type: messages.RecordVenueUpdate, Payload: ev}, systemOrigin, func(_ wal.Record, err error) {
		if err != nil {
			u.logger.Warn("could not journal a venue update", "user", u.state.User, "code", string(messages.CodeOf(err)))
		}
	})
}

// droppedTally counts the stream's dropped updates for the stream_dropped
// record: the first drop is journaled at once, later ones at most every
// streamDroppedEvery, summed.
type droppedTally struct {
	dropped, gaps int
	reason        string
	since         time.Time // the first drop counted
	last          time.Time // the last record
}

// noteStreamDropped journals the stream's dropped updates (a gap: the
// state is read again by REST meanwhile), at most once per
// streamDroppedEvery.
func (u *userActor) noteStreamDropped(ctx actor.Context, m *streamResync) {
	if m.dropped <= 0 {
		return
	}
	t := &u.droppedTally
	now := u.now()
	if t.gaps == 0 {
		t.since, t.reason = now, m.dropReason
	}
	t.dropped += m.dropped
	t.gaps++
	if !t.last.IsZero() && now.Sub(t.last) < streamDroppedEvery {
		return
	}
	ev := messages.StreamDroppedEvent{At: now.UTC(), Since: t.since.UTC(), Reason: t.reason, Dropped: t.dropped, Gaps: t.gaps}
	*t = droppedTally{last: now}
	u.write(ctx, state.Event{Type: messages.RecordStreamDropped, Payload: ev}, systemOrigin, func(_ wal.Record, err error) {
		if err != nil {
			u.logger.Warn("could not journal the stream's dropped updates", "user", u.state.User, "code", string(messages.CodeOf(err)))
		}
	})
}
