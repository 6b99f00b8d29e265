package state

import (
	"container/heap"
	"time"

	"github.com/shopspring/decimal"
)

// The running sums behind RollingCounters.Window (D144). Each window (the
// 24 h notional, the unconfirmed attempts of the hour, the attempts of the
// minute) keeps the marks it counts, oldest first, and their sums per
// venue: an attempt is added once when it is applied and taken out once
// when it leaves the window or is pruned, so a decision costs O(1)
// amortized whatever the day holds. The result is the full re-sum's
// (TestWindowSumsEqualFullResum): a mark counts when now − its time is
// below the window's width, on the wall clock (the journal's).
//
// Marks come in journal order, nearly in time order: a mark older than
// the newest one in its window (a clock step back, a payload's time
// leading the journal's) waits in a small heap instead of the queue. A
// query earlier than the last one (the clock stepped back) re-sums once
// from the marks.

// The windows, by index in windowSums.spans.
const (
	spanDay    = iota // risk-increasing notional, 24 h
	spanHour          // rated and unconfirmed attempts, 1 h
	spanMinute        // rated attempts, 1 min
	numSpans
)

var spanWidths = [numSpans]time.Duration{spanDay: notionalWindow, spanHour: time.Hour, spanMinute: time.Minute}

// counts reports whether mark m counts in the window k (its fields as
// they are now: a rejected order stops counting in the daily notional).
func counts(k int, m *OrderMark) bool {
	switch k {
	case spanDay:
		return m.RiskIncreasing
	case spanHour:
		return m.Rated && !m.Confirmed
	}
	return m.Rated
}

// windowSums is the bookkeeping of one RollingCounters. It covers the
// marks it was told about: n marks, the first at first, whose ordinal
// (position in the order they were applied, pruned ones included) is
// base. Any other Orders (a list built or changed by hand, a copy of the
// value) is found out by valid and the sums are rebuilt from the marks.
type windowSums struct {
	n     int
	first *OrderMark
	base  int
	// at is the time the windows were last brought to; started says
	// they hold the marks counting as of at.
	at      time.Time
	started bool
	spans   [numSpans]span
	// ids counts the marks by client order id, for OrderOrigin (nil
	// until asked).
	ids map[string]int32
}

// span is one window: the marks it counts as of windowSums.at, by
// ordinal, and their sums per venue.
type span struct {
	// queue holds ordinals in order, their times non-decreasing, from
	// head on; late is a min-heap by time of those that came out of
	// order.
	queue []int
	head  int
	late  lateMarks
	sums  []venueSum
}

// venueSum is a window's sum over the marks of one venue ("" for marks
// that name none, which count on every venue, D100).
type venueSum struct {
	env      string
	count    int
	notional decimalSum
}

type lateMark struct {
	ord int
	at  time.Time
}

type lateMarks []lateMark

func (h lateMarks) Len() int           { return len(h) }
func (h lateMarks) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h lateMarks) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }

// Push and Pop are container/heap's.
func (h *lateMarks) Push(x any) { *h = append(*h, x.(lateMark)) }
func (h *lateMarks) Pop() any {
	old := *h
	m := old[len(old)-1]
	*h = old[:len(old)-1]
	return m
}

// valid reports whether w covers exactly the marks of orders.
func (w *windowSums) valid(orders []OrderMark) bool {
	return w != nil && len(orders) == w.n && (w.n == 0 || &orders[0] == w.first)
}

// sums returns the bookkeeping of c, new when c's marks are not the ones
// it covers.
func (c *RollingCounters) sums() *windowSums {
	if !c.w.valid(c.Orders) {
		c.w = &windowSums{n: len(c.Orders)}
		if len(c.Orders) > 0 {
			c.w.first = &c.Orders[0]
		}
	}
	return c.w
}

// advance brings the windows to now: re-summed from the marks the first
// time and when now is before the last time; else the marks that left
// each window since are taken out.
func (c *RollingCounters) advance(now time.Time) *windowSums {
	now = now.Round(0) // the wall clock, as the marks' times
	w := c.sums()
	if !w.started || now.Before(w.at) {
		w.at, w.started = now, true
		for k := range w.spans {
			w.spans[k] = span{sums: w.spans[k].sums[:0]}
		}
		for i := range c.Orders {
			c.enter(w, w.base+i, &c.Orders[i])
		}
		return w
	}
	w.at = now
	for k := range w.spans {
		c.expire(w, k)
	}
	return w
}

// enter adds the mark m (ordinal ord) to the windows it counts in as of
// w.at.
func (c *RollingCounters) enter(w *windowSums, ord int, m *OrderMark) {
	for k := range w.spans {
		if !counts(k, m) || w.at.Sub(m.At) >= spanWidths[k] {
			continue
		}
		sp := &w.spans[k]
		if sp.head < len(sp.queue) && m.At.Before(c.Orders[sp.queue[len(sp.queue)-1]-w.base].At) {
			heap.Push(&sp.late, lateMark{ord: ord, at: m.At})
		} else {
			sp.queue = append(sp.queue, ord)
		}
		sp.add(k, m, false)
	}
}

// expire takes out of window k the marks that have left it as of w.at.
// A mark pruned before it left was taken out by prune.
func (c *RollingCounters) expire(w *windowSums, k int) {
	sp, width := &w.spans[k], spanWidths[k]
	for sp.head < len(sp.queue) {
		m := &c.Orders[sp.queue[sp.head]-w.base]
		if w.at.Sub(m.At) < width {
			break
		}
		if counts(k, m) {
			sp.add(k, m, true)
		}
		sp.head++
	}
	if sp.head == len(sp.queue) {
		sp.queue, sp.head = sp.queue[:0], 0
	} else if sp.head > 64 && sp.head*2 > len(sp.queue) {
		n := copy(sp.queue, sp.queue[sp.head:])
		sp.queue, sp.head = sp.queue[:n], 0
	}
	for len(sp.late) > 0 && w.at.Sub(sp.late[0].at) >= width {
		lm := heap.Pop(&sp.late).(lateMark)
		if lm.ord < w.base {
			continue // pruned, and taken out then
		}
		if m := &c.Orders[lm.ord-w.base]; counts(k, m) {
			sp.add(k, m, true)
		}
	}
}

// add adds m's part to window k's sum of its venue, or with out takes it
// out.
func (sp *span) add(k int, m *OrderMark, out bool) {
	var vs *venueSum
	for i := range sp.sums {
		if sp.sums[i].env == m.Environment {
			vs = &sp.sums[i]
			break
		}
	}
	if vs == nil {
		sp.sums = append(sp.sums, venueSum{env: m.Environment})
		vs = &sp.sums[len(sp.sums)-1]
	}
	switch {
	case k == spanDay && out:
		vs.notional.sub(m.NotionalUSDT)
	case k == spanDay:
		vs.notional.add(m.NotionalUSDT)
	case out:
		vs.count--
	default:
		vs.count++
	}
}

// live reports whether m (counting in window k) is in it as of w.at.
func (w *windowSums) live(k int, m *OrderMark) bool {
	return w.started && counts(k, m) && w.at.Sub(m.At) < spanWidths[k]
}

// add appends the mark m to c.Orders and to the windows it counts in.
func (c *RollingCounters) add(m OrderMark) {
	w := c.w
	if !w.valid(c.Orders) {
		w, c.w = nil, nil // re-summed when next asked
	}
	c.Orders = append(c.Orders, m)
	if w == nil {
		return
	}
	n := len(c.Orders)
	w.n, w.first = n, &c.Orders[0] // the append may have moved the marks
	added := &c.Orders[n-1]
	if w.ids != nil {
		w.ids[added.ClientOrderID]++
	}
	if w.started {
		c.enter(w, w.base+n-1, added)
	}
}

// unrisk marks Orders[i] as not risk-increasing (its order was rejected:
// nothing was placed), taking its notional out of the daily sum.
func (c *RollingCounters) unrisk(i int) {
	m := &c.Orders[i]
	if c.w.valid(c.Orders) && c.w.live(spanDay, m) {
		c.w.spans[spanDay].add(spanDay, m, true)
	}
	m.RiskIncreasing = false
}

// dropFront prunes the first i marks, taking those still in a window out
// of it.
func (c *RollingCounters) dropFront(i int) {
	w := c.w
	if !w.valid(c.Orders) {
		c.w = nil
		c.Orders = c.Orders[i:]
		return
	}
	for j := range i {
		m := &c.Orders[j]
		for k := range w.spans {
			if w.live(k, m) {
				w.spans[k].add(k, m, true)
			}
		}
		if w.ids != nil {
			if w.ids[m.ClientOrderID]--; w.ids[m.ClientOrderID] <= 0 {
				delete(w.ids, m.ClientOrderID)
			}
		}
	}
	w.base += i
	for k := range w.spans {
		sp := &w.spans[k]
		for sp.head < len(sp.queue) && sp.queue[sp.head] < w.base {
			sp.head++
		}
	}
	c.Orders = c.Orders[i:]
	w.n = len(c.Orders)
	w.first = nil
	if w.n > 0 {
		w.first = &c.Orders[0]
	}
}

// has reports whether a mark of the last 24 h has the client order id.
func (c *RollingCounters) has(clientOrderID string) bool {
	w := c.sums()
	if w.ids == nil {
		w.ids = make(map[string]int32, len(c.Orders))
		for i := range c.Orders {
			w.ids[c.Orders[i].ClientOrderID]++
		}
	}
	return w.ids[clientOrderID] > 0
}

// total is window k's sum for venue env: its own marks and those that
// name no venue.
func (sp *span) total(env string) (count int, notional decimal.Decimal) {
	var sum decimalSum
	for i := range sp.sums {
		if vs := &sp.sums[i]; vs.env == env || vs.env == "" {
			count += vs.count
			sum.add(vs.notional.value())
		}
	}
	return count, sum.value()
}
