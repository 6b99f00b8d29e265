package journal

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// health says whether the journal may still be written. Once down it
// stays down, and every channel Down returned is closed, so that every
// waiter wakes at once. All its methods are safe for concurrent use.
type health struct {
	down atomic.Bool
	once sync.Once
	// chs are all closed when the journal goes down. Waiters spread over
	// them: many goroutines selecting on one channel contend for its lock.
	chs        [healthShards]chan struct{}
	next       atomic.Uint32
	flushStart atomic.Int64  // unix nanoseconds of the flush in progress; 0 when none
	flushes    atomic.Uint64 // batches written (one fsync each)
}

const healthShards = 16

// init makes the channels Down hands out.
func (h *health) init() {
	for i := range h.chs {
		h.chs[i] = make(chan struct{})
	}
}

// MarkDown refuses every later write: a caller that waited for the journal
// longer than Timeout, or a write that failed.
func (h *health) MarkDown() { h.markDown() }

func (h *health) markDown() {
	h.once.Do(func() {
		h.down.Store(true)
		for _, ch := range h.chs {
			close(ch)
		}
	})
}

// IsDown reports whether writes are refused.
func (h *health) IsDown() bool { return h.down.Load() }

// Down returns a channel that is closed when the journal goes down.
func (h *health) Down() <-chan struct{} { return h.chs[h.next.Add(1)%healthShards] }

// watch marks the journal down when one flush has been running longer
// than Timeout (a hung disk). One goroutine for the whole journal, instead
// of a timer per write. It returns when stop is closed or the journal is
// down.
func (h *health) watch(stop <-chan struct{}, now func() time.Time, logger *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-h.chs[0]:
			return
		case <-t.C:
			if start := h.flushStart.Load(); start != 0 && now().Sub(time.Unix(0, start)) > Timeout {
				logger.Error("journal: a flush has not finished in time; refusing all further writes", "timeout", Timeout.String())
				h.markDown()
			}
		}
	}
}
