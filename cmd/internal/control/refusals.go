package control

import (
	"sync"
	"time"
)

// maxTrackedUIDs bounds the uids a tally keeps apart; refusals of further
// uids are counted together under uid -1 (which also stands for a peer
// whose uid could not be read).
const maxTrackedUIDs = 1024

// tally turns a stream of refusals into at most one report per uid per
// interval: the first refusal of a uid is reported at once (count 1), the
// ones after it are counted and reported together (with their count) when
// the interval ends. A uid quiet for a whole interval starts over. add
// never blocks on the report: reports go through a buffered queue to one
// goroutine, so a flood costs a map update per connection.
type tally struct {
	interval time.Duration
	report   func(uid int64, pid int32, count int)

	mu      sync.Mutex
	counts  map[int64]*tallyEntry
	queue   chan tallyReport
	stop    chan struct{}
	stopped bool
	wg      sync.WaitGroup
}

type tallyEntry struct {
	count   int   // refusals since the last report
	lastPID int32 // the most recent refused pid
}

type tallyReport struct {
	uid   int64
	pid   int32
	count int
}

func newTally(interval time.Duration, report func(uid int64, pid int32, count int)) *tally {
	t := &tally{interval: interval, report: report, counts: map[int64]*tallyEntry{},
		queue: make(chan tallyReport, 2*maxTrackedUIDs+2), stop: make(chan struct{})}
	t.wg.Add(2)
	go t.tick()
	go t.write()
	return t
}

// add counts one refusal of uid (-1: unknown).
func (t *tally) add(uid int64, pid int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	e, ok := t.counts[uid]
	if !ok && len(t.counts) >= maxTrackedUIDs {
		uid = -1
		e, ok = t.counts[uid]
	}
	if !ok {
		t.counts[uid] = &tallyEntry{lastPID: pid}
		t.enqueue(tallyReport{uid: uid, pid: pid, count: 1})
		return
	}
	e.count++
	e.lastPID = pid
}

// enqueue hands a report to the writer; t.mu is held. The queue holds two
// reports per tracked uid, more than one interval can produce, so a full
// queue means the writer is stuck; the report is then dropped rather than
// stall the accept loop.
func (t *tally) enqueue(r tallyReport) {
	select {
	case t.queue <- r:
	default:
	}
}

// flush reports every uid with refusals since its last report; a uid with
// none is forgotten.
func (t *tally) flush() {
	for uid, e := range t.counts {
		if e.count == 0 {
			delete(t.counts, uid)
			continue
		}
		t.enqueue(tallyReport{uid: uid, pid: e.lastPID, count: e.count})
		e.count = 0
	}
}

func (t *tally) tick() {
	defer t.wg.Done()
	tk := time.NewTicker(t.interval)
	defer tk.Stop()
	for {
		select {
		case <-tk.C:
			t.mu.Lock()
			t.flush()
			t.mu.Unlock()
		case <-t.stop:
			return
		}
	}
}

func (t *tally) write() {
	defer t.wg.Done()
	for r := range t.queue {
		t.report(r.uid, r.pid, r.count)
	}
}

// close reports what is still counted and waits for every report.
func (t *tally) close() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	close(t.stop)
	t.flush()
	close(t.queue)
	t.mu.Unlock()
	t.wg.Wait()
}
