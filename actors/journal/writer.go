package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Timeout bounds one flush: a flush still running after it marks the
// journal down (a hung disk), since its records may still become durable
// and the state could no longer be trusted to match the journal. Callers
// use it too as the bound of one wait for the journal.
const Timeout = 30 * time.Second

// maxBatch bounds one group commit, so one fsync never carries an
// unbounded tail of records.
const maxBatch = 4096

// Durability says when an appended record goes to disk and when its
// caller is answered.
type Durability uint8

const (
	// Sync starts a sync: at once when the flusher is idle, else right
	// after the sync in progress, together with everything queued
	// meanwhile (group commit). The caller is answered once the record
	// is durable.
	Sync Durability = iota
	// NoSync starts nothing: the record rides the next sync (the next
	// Sync record of any caller, a Flush or a Drain), and the caller is
	// answered once that sync is durable. The journal is ordered, so the
	// Sync record that carries it is durable only with it.
	NoSync
)

// Result answers one Append: exactly one of Record and Err is set.
type Result struct {
	Record wal.Record
	Err    *messages.Error
}

// Options configures New. The zero value is valid.
type Options struct {
	// Logger receives the writer's errors (nil: discarded).
	Logger *slog.Logger
	// Disk is the journal's free space: in the last reserve only the
	// essential records are written (nil: not watched).
	Disk *DiskWatch
	// Index is filled with each batch once it is durable, before its
	// writers are answered (nil: none).
	Index *Index
	// Now is the clock of the hung-flush watch (nil: time.Now).
	Now func() time.Time
}

// pending is one appended record waiting for its sync.
type pending struct {
	entry wal.Entry
	sync  bool
	done  func(Result)
}

// Writer is the journal's single writer, shaped like pebble's LogWriter:
// one flusher goroutine owns the *wal.Log for the life of the Writer, and
// Append only queues. While the flusher writes and fsyncs one batch, the
// records appended meanwhile queue up; it then takes all of them (up to
// maxBatch) as the next batch, one fsync for all: group commit with no
// timer and no guess of how many writers will come.
//
// Errors are sticky: after the first failed write every Append is refused
// with internal_error, and Down is closed. An entry the WAL refuses as
// invalid is refused alone. All methods are safe for concurrent use.
type Writer struct {
	log    *wal.Log
	logger *slog.Logger
	disk   *DiskWatch
	index  *Index
	health

	mu sync.Mutex
	// work wakes the flusher: a Sync record, a Flush, a Drain or Close.
	work  sync.Cond
	queue []pending
	// spare is the previous batch's slice, reused for the queue.
	spare []pending
	// syncs counts the Sync records in queue.
	syncs int
	// forced is set while the NoSync records must go out without waiting
	// for a Sync one (a Flush or a Drain asked, or Close).
	forced   bool
	flushing bool
	failed   error
	closing  bool
	// drains are closed when nothing is queued or being written.
	drains []chan struct{}

	stopWatch chan struct{}
	done      chan struct{} // closed when the flusher has returned
	closeOnce sync.Once
	// entries is the flusher's buffer for one batch.
	entries []wal.Entry

	// hookWrite replaces log.Append in tests.
	hookWrite func([]wal.Entry) ([]wal.Record, error)
}

// New starts the writer of log: its flusher and its hung-flush watch. The
// caller keeps owning log (it closes it after Close), and must not touch
// it meanwhile.
func New(log *wal.Log, o Options) *Writer {
	w := &Writer{log: log, logger: o.Logger, disk: o.Disk, index: o.Index,
		stopWatch: make(chan struct{}), done: make(chan struct{})}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	w.health.init()
	w.work.L = &w.mu
	go w.flushLoop()
	go w.watch(w.stopWatch, now, w.logger)
	return w
}

// errDown refuses a write once the journal is down.
func errDown() *messages.Error {
	return messages.Internal(errors.New("journal: the journal has failed; refusing writes"))
}

// Refusal is the error a write answers when the log refused it with err:
// a fenced log (wal.ErrFenced, a cluster shard whose lock is lost) is
// messages.ShardFenced, anything else internal_error.
func Refusal(err error) *messages.Error {
	if errors.Is(err, wal.ErrFenced) {
		return messages.ShardFenced(err)
	}
	return messages.Internal(err)
}

// DownError is the error a write answers once the journal is down:
// shard_fenced if the log was fenced, else internal_error.
func (w *Writer) DownError() *messages.Error {
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	if failed != nil {
		return Refusal(failed)
	}
	return errDown()
}

// Append queues one record with durability d, and calls done (which may
// be nil) once it is durable, or with the reason it will not be: the
// journal is down, the disk is in its last reserve and the record is not
// essential, the entry is invalid, or the write failed. done runs on the
// flusher's goroutine (or the caller's, for a refusal before queueing):
// it must return quickly and never wait for the journal.
func (w *Writer) Append(e wal.Entry, d Durability, done func(Result)) {
	if done == nil {
		done = func(Result) {}
	}
	if w.disk.Refuses(messages.RecordType(e.Type)) {
		done(Result{Err: ReserveRefusal()})
		return
	}
	w.mu.Lock()
	if w.failed != nil || w.closing || w.IsDown() {
		err := errDown()
		if w.failed != nil {
			err = Refusal(w.failed)
		}
		w.mu.Unlock()
		done(Result{Err: err})
		return
	}
	w.queue = append(w.queue, pending{entry: e, sync: d == Sync, done: done})
	wake := d == Sync || w.forced
	if d == Sync {
		w.syncs++
	}
	flushing := w.flushing
	w.mu.Unlock()
	if wake && !flushing {
		w.work.Signal()
	}
}

// Flush has the NoSync records queued now go out without waiting for a
// Sync one. With nothing queued it does nothing: a record already taken
// is in the batch being written.
func (w *Writer) Flush() {
	w.mu.Lock()
	if len(w.queue) == 0 {
		w.mu.Unlock()
		return
	}
	w.forced = true
	w.mu.Unlock()
	w.work.Signal()
}

// Drain waits, up to timeout, until everything queued is durable (NoSync
// records included) and no batch is being written. It reports whether
// that happened in time.
func (w *Writer) Drain(timeout time.Duration) bool {
	w.mu.Lock()
	if w.idle() {
		w.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	w.drains = append(w.drains, ch)
	w.forced = true
	w.mu.Unlock()
	w.work.Signal()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// Close writes what is queued, stops the flusher and the watch, and marks
// the journal down: every later Append is refused. It does not close the
// log. A second Close does nothing.
func (w *Writer) Close() {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closing, w.forced = true, true
		w.mu.Unlock()
		w.work.Broadcast()
		<-w.done
		close(w.stopWatch)
		w.markDown()
	})
}

// Flushes returns how many batches the writer has written so far, each
// one fsync: what tests and benchmarks count to prove what a call costs.
func (w *Writer) Flushes() uint64 { return w.flushes.Load() }

// idle reports whether nothing is queued or being written. w.mu is held.
func (w *Writer) idle() bool { return !w.flushing && len(w.queue) == 0 }

// due reports whether the flusher has a batch to write: a Sync record is
// queued, or the NoSync ones must go out (a Flush, a Drain still waiting,
// Close). w.mu is held.
func (w *Writer) due() bool {
	return len(w.queue) > 0 && (w.syncs > 0 || w.forced || w.closing || len(w.drains) > 0)
}

// flushLoop is the flusher: the only goroutine that touches the log.
func (w *Writer) flushLoop() {
	defer close(w.done)
	w.mu.Lock()
	for {
		for !w.closing && !w.due() {
			w.work.Wait()
		}
		if !w.due() { // closing, and everything is written
			w.answerDrains()
			w.mu.Unlock()
			return
		}
		batch := w.take()
		w.flushing = true
		w.mu.Unlock()

		recs, err := w.write(batch)
		if err == nil {
			w.index.Add(recs, false)
		}
		// The writers are answered the moment their batch is durable. An
		// invalid entry wrote nothing: the batch is sorted out below.
		if !errors.Is(err, wal.ErrInvalidEntry) {
			for i, p := range batch {
				if err != nil {
					p.done(Result{Err: Refusal(err)})
				} else {
					p.done(Result{Record: recs[i]})
				}
			}
		}

		w.gather(len(batch))
		w.mu.Lock()
		w.flushing = false
		var refused []pending
		switch {
		case errors.Is(err, wal.ErrInvalidEntry):
			refused = w.requeueValid(batch)
		case err != nil:
			w.failed = err
			w.markDown()
			if errors.Is(err, wal.ErrFenced) {
				w.logger.Warn("journal fenced: this member no longer owns the shard; refusing all further appends")
			} else {
				w.logger.Error("journal write failed; refusing all further appends", "err", err.Error())
			}
			refused, w.queue, w.syncs, w.forced = w.queue, nil, 0, false
		default:
			clear(batch)
			w.spare = batch[:0]
		}
		if len(refused) > 0 {
			w.mu.Unlock()
			for _, p := range refused {
				if err := wal.ValidateEntry(p.entry); err != nil {
					w.logger.Error("journal: refused an invalid entry", "err", err.Error())
					p.done(Result{Err: messages.Internal(err)})
				} else {
					p.done(Result{Err: Refusal(w.failed)})
				}
			}
			w.mu.Lock()
		}
		w.answerDrains()
	}
}

// take removes the next batch from the queue. w.mu is held.
func (w *Writer) take() []pending {
	n := min(len(w.queue), maxBatch)
	batch := w.queue[:n:n]
	for _, p := range batch {
		if p.sync {
			w.syncs--
		}
	}
	if n == len(w.queue) {
		w.queue, w.spare = w.spare, nil
		w.forced = false
	} else {
		w.queue = w.queue[n:]
	}
	return batch
}

// requeueValid puts the valid entries of a batch the WAL refused back at
// the front of the queue, in order, and returns the invalid ones. An
// invalid entry is not a sticky failure. w.mu is held.
func (w *Writer) requeueValid(batch []pending) (invalid []pending) {
	var good []pending
	for _, p := range batch {
		if wal.ValidateEntry(p.entry) != nil {
			invalid = append(invalid, p)
			continue
		}
		if p.sync {
			w.syncs++
		}
		good = append(good, p)
	}
	if len(good) > 0 {
		// They were due when taken: they still are.
		w.forced = true
	}
	w.queue = append(good, w.queue...)
	return invalid
}

// answerDrains wakes the drains once the writer is idle (or failed, with
// nothing left to write). w.mu is held.
func (w *Writer) answerDrains() {
	if len(w.drains) == 0 || !w.idle() {
		return
	}
	for _, ch := range w.drains {
		close(ch)
	}
	w.drains = nil
}

// write appends one batch: one WriteBatch, one fsync. A panic in the log
// is a failed write: the journal is stopped, never written again.
func (w *Writer) write(batch []pending) (recs []wal.Record, err error) {
	w.entries = w.entries[:0]
	for _, p := range batch {
		w.entries = append(w.entries, p.entry)
	}
	w.flushStart.Store(time.Now().UnixNano())
	w.flushes.Add(1)
	defer func() {
		w.flushStart.Store(0)
		clear(w.entries)
		if r := recover(); r != nil {
			recs, err = nil, fmt.Errorf("journal: the write panicked: %v", r)
		}
	}()
	if w.hookWrite != nil {
		recs, err = w.hookWrite(w.entries)
	} else {
		recs, err = w.log.Append(w.entries)
	}
	if err == nil && len(recs) != len(batch) {
		err = errors.New("journal: append returned a short batch")
	}
	return recs, err
}

// gather lets the writers just answered come back with their next record
// before the next batch is taken, so that they go out together instead of
// the first alone and the others in the batch after (writers that take
// turns halve the records per fsync). It yields to them, and again while
// each yield brought more records, up to as many as the last batch held:
// no timer, no guess of how long they take.
func (w *Writer) gather(last int) {
	prev := -1
	for {
		runtime.Gosched()
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if n >= last || n == prev {
			return
		}
		prev = n
	}
}
