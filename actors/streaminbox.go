package actors

import (
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The private stream's ingestion (docs/architecture.md, "The private
// stream path"). A stream may push far faster than anything can act on
// each push (a very busy account, or a hostile venue flooding forged
// orders), so no push is ever a message of its own in a mailbox that
// carries commands:
//
//   - the stream's pump goroutine puts each event into the stream's
//     streamInbox: bounded, coalesced (an order's or a position's latest
//     row wins), and over its bound it drops rows and owes a gap, so the
//     state is read again by REST;
//   - the venue actor is signalled (*streamReady) only when the inbox goes
//     from empty to not empty, so at most one signal per stream waits in
//     its mailbox, and it drains everything pending at once;
//   - the order rows go on to the user actor the same way, through a
//     venueUpdateBuffer (venueupdates.go) and one *streamOrdersReady in its
//     mailbox at a time; it journals them as one bounded venue_update.

// Bounds of a streamInbox.
const (
	// maxInboxRows bounds the rows (orders, positions, executions) waiting
	// for the venue actor; rows beyond it are dropped and a gap is owed.
	maxInboxRows = 2048
	// maxInboxSegments bounds the connection events and the data between
	// them; past it the oldest is dropped and a gap is owed.
	maxInboxSegments = 64
	// inboxGapEvery spaces the gaps the inbox owes for its drops: a
	// sustained flood costs one REST resync a second, not one per drain.
	inboxGapEvery = time.Second
)

// inboxOverflow is the reason of a gap owed for rows the inbox dropped.
const inboxOverflow = "coalesce_overflow"

// streamReady tells the venue actor that the inbox of stream gen has
// events; it drains them all.
type streamReady struct {
	gen   uint64
	inbox *streamInbox
}

// streamInbox is one stream's bounded, coalescing buffer between its pump
// goroutine (put) and the venue actor (drain). Safe for concurrent use.
type streamInbox struct {
	mu sync.Mutex
	// guarded by mu
	segs      []*inboxSegment
	rows      int
	dropped   int       // rows and events dropped since the last gap
	gapReason string    // the stream's own gap reason, when it owed one
	lastGap   time.Time // when the last gap was drained
	signalled bool      // a streamReady is on its way; no other is sent
	retry     bool      // a timer will signal again for a gap held back
	signal    func()    // sends a streamReady (set at construction)
}

// inboxSegment is one connection event, or the data pushed between two.
type inboxSegment struct {
	conn *messages.StreamEvent // a connection event; nil: data

	at         time.Time // the latest push's time
	orders     []messages.Order
	orderAt    map[string]int
	positions  []messages.Position
	positionAt map[string]int
	executions []messages.Execution
	wallet     *messages.WalletBalance
}

func newStreamInbox(signal func()) *streamInbox {
	return &streamInbox{signal: signal}
}

// put adds one event of the stream and signals the venue actor when no
// signal is on its way.
func (in *streamInbox) put(ev messages.StreamEvent) {
	in.mu.Lock()
	in.putLocked(ev)
	in.signalUnlock()
}

// signalUnlock signals the venue actor when something is pending and no
// signal is on its way, and unlocks mu (the signal is sent unlocked).
func (in *streamInbox) signalUnlock() {
	send := (len(in.segs) > 0 || in.dropped > 0) && !in.signalled
	if send {
		in.signalled = true
	}
	in.mu.Unlock()
	if send {
		in.signal()
	}
}

func (in *streamInbox) putLocked(ev messages.StreamEvent) {
	switch ev.Kind {
	case messages.StreamGap:
		// The stream lost events itself: owed like the inbox's own drops.
		in.dropped += max(ev.Dropped, 1)
		if in.gapReason == "" {
			in.gapReason = ev.Reason
		}
		return
	case messages.StreamOrders, messages.StreamPositions, messages.StreamExecutions, messages.StreamWalletEvent:
		in.putDataLocked(ev)
		return
	}
	if len(in.segs) >= maxInboxSegments {
		in.dropOldestLocked()
	}
	c := ev
	in.segs = append(in.segs, &inboxSegment{conn: &c})
}

// putDataLocked coalesces a push into the data segment at the tail.
func (in *streamInbox) putDataLocked(ev messages.StreamEvent) {
	var seg *inboxSegment
	if n := len(in.segs); n > 0 && in.segs[n-1].conn == nil {
		seg = in.segs[n-1]
	} else {
		if len(in.segs) >= maxInboxSegments {
			in.dropOldestLocked()
		}
		seg = &inboxSegment{orderAt: map[string]int{}, positionAt: map[string]int{}}
		in.segs = append(in.segs, seg)
	}
	if ev.At.After(seg.at) {
		seg.at = ev.At
	}
	for _, o := range ev.Orders {
		k := string(o.Category) + ":" + o.OrderID
		if i, ok := seg.orderAt[k]; ok {
			seg.orders[i] = o // latest wins
		} else if in.roomLocked() {
			seg.orderAt[k] = len(seg.orders)
			seg.orders = append(seg.orders, o)
		}
	}
	for _, p := range ev.Positions {
		k := posKey(p.Category, p.Symbol, p.PositionIdx)
		if i, ok := seg.positionAt[k]; ok {
			seg.positions[i] = p
		} else if in.roomLocked() {
			seg.positionAt[k] = len(seg.positions)
			seg.positions = append(seg.positions, p)
		}
	}
	for _, x := range ev.Executions {
		if in.roomLocked() {
			seg.executions = append(seg.executions, x)
		}
	}
	if ev.Wallet != nil {
		seg.wallet = ev.Wallet
	}
}

// roomLocked takes room for one new row, or counts it dropped.
func (in *streamInbox) roomLocked() bool {
	if in.rows >= maxInboxRows {
		in.dropped++
		return false
	}
	in.rows++
	return true
}

func (in *streamInbox) dropOldestLocked() {
	s := in.segs[0]
	n := len(s.orders) + len(s.positions) + len(s.executions)
	in.rows -= n
	in.dropped += max(n, 1)
	in.segs[0] = nil
	in.segs = in.segs[1:]
}

// drain takes every pending event, in the order they came, each data
// segment as at most one event per kind (executions, orders, positions,
// wallet). Drops are owed as one StreamGap at the end, at most one per
// inboxGapEvery: a gap held back is signalled again when it is due.
func (in *streamInbox) drain() []messages.StreamEvent {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.signalled = false
	out := make([]messages.StreamEvent, 0, 4*len(in.segs)+1)
	for _, s := range in.segs {
		if s.conn != nil {
			out = append(out, *s.conn)
			continue
		}
		if len(s.executions) > 0 {
			out = append(out, messages.StreamEvent{Kind: messages.StreamExecutions, At: s.at, Executions: s.executions})
		}
		if len(s.orders) > 0 {
			out = append(out, messages.StreamEvent{Kind: messages.StreamOrders, At: s.at, Orders: s.orders})
		}
		if len(s.positions) > 0 {
			out = append(out, messages.StreamEvent{Kind: messages.StreamPositions, At: s.at, Positions: s.positions})
		}
		if s.wallet != nil {
			out = append(out, messages.StreamEvent{Kind: messages.StreamWalletEvent, At: s.at, Wallet: s.wallet})
		}
	}
	in.segs, in.rows = nil, 0
	if in.dropped > 0 {
		now := time.Now() // real time: it paces REST reads
		if wait := inboxGapEvery - now.Sub(in.lastGap); wait > 0 {
			if !in.retry {
				in.retry = true
				time.AfterFunc(wait, in.retryGap)
			}
		} else {
			reason := in.gapReason
			if reason == "" {
				reason = inboxOverflow
			}
			out = append(out, messages.StreamEvent{Kind: messages.StreamGap, At: now.UTC(), Reason: reason, Dropped: in.dropped})
			in.dropped, in.gapReason, in.lastGap = 0, "", now
		}
	}
	return out
}

// retryGap signals a gap that drain held back.
func (in *streamInbox) retryGap() {
	in.mu.Lock()
	in.retry = false
	in.signalUnlock()
}
