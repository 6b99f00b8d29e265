package actors

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// maxBatch bounds one group commit, so one fsync never carries an
// unbounded tail of requests.
const maxBatch = 4096

// AppendRequest asks the journal actor to append one record. The reply, an
// *AppendResponse, is sent only after the record's batch is durable: on
// Reply when it is set (callers outside actors, which then need no
// protoactor future), else to the sender (actors use RequestFuture and
// ReenterAfter). Reply must have room for one value.
type AppendRequest struct {
	Entry wal.Entry
	Reply chan<- *AppendResponse
	// Lazy records do not start a flush by themselves: they go out with
	// the next record that does, or when a flushRequest asks. The
	// tool_call record of a state-changing call is lazy, so that it and
	// the call's own record share one fsync (the journal is ordered: the
	// later durable record covers the earlier one).
	Lazy bool
}

// flushRequest asks the journal to flush what is pending now, lazy records
// included (a call that wrote nothing else waits for its tool_call).
type flushRequest struct{}

// AppendResponse answers AppendRequest; exactly one of Record and Err is set.
type AppendResponse struct {
	Record wal.Record
	Err    *messages.Error
}

// drainRequest asks the journal actor to answer once everything queued
// before it is durable (used by a graceful stop).
type drainRequest struct{}

type drainResponse struct{}

// journalHealth says whether the journal may still be written. Once down it
// stays down, and Down() is closed so that every waiter wakes at once. It is
// shared by the journal actor, the user actors and System; all its methods
// are safe for concurrent use.
type journalHealth struct {
	down atomic.Bool
	once sync.Once
	// chs are all closed when the journal goes down. Waiters spread over
	// them: many goroutines selecting on one channel contend for its lock.
	chs        [healthShards]chan struct{}
	next       atomic.Uint32
	flushStart atomic.Int64  // unix nanoseconds of the flush in progress; 0 when none
	flushes    atomic.Uint64 // batches written (one fsync each)
	// writing counts the flusher goroutines at work on the log: Stop
	// waits for them, so the log is never closed under a write.
	writing sync.WaitGroup
}

const healthShards = 16

func newJournalHealth() *journalHealth {
	h := &journalHealth{}
	for i := range h.chs {
		h.chs[i] = make(chan struct{})
	}
	return h
}

// markDown refuses every later write.
func (h *journalHealth) markDown() {
	h.once.Do(func() {
		h.down.Store(true)
		for _, ch := range h.chs {
			close(ch)
		}
	})
}

// isDown reports whether writes are refused.
func (h *journalHealth) isDown() bool { return h.down.Load() }

// Down returns a channel that is closed when the journal goes down.
func (h *journalHealth) Down() <-chan struct{} { return h.chs[h.next.Add(1)%healthShards] }

// watch marks the journal down when one flush has been running longer than
// journalTimeout (a hung disk): its records may still become durable, so
// the state could no longer be trusted to match the journal. One goroutine
// for the whole journal, instead of a timer per write. It returns when stop
// is closed.
func (h *journalHealth) watch(stop <-chan struct{}, now func() time.Time, logger *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-h.chs[0]:
			return
		case <-t.C:
			if start := h.flushStart.Load(); start != 0 && now().Sub(time.Unix(0, start)) > journalTimeout {
				logger.Error("journal: a flush has not finished in time; refusing all further writes", "timeout", journalTimeout.String())
				h.markDown()
			}
		}
	}
}

// flushNow starts a flush that was deferred so that concurrent writers could
// join it (see maybeFlush).
type flushNow struct{}

// joinWait is how long an idle journal waits for concurrent writers to
// join a batch smaller than the last one: a fraction of one fsync (about
// 250 µs here), and only when the last batch had more than one writer.
const joinWait = 60 * time.Microsecond

// flushDone is sent by the flusher goroutine back to the journal actor
// after it has answered the batch's writers.
type flushDone struct {
	batch []pendingAppend
	err   error
}

type pendingAppend struct {
	lazy    bool
	entry   wal.Entry
	reply   chan<- *AppendResponse
	replyTo *actor.PID // nil (and reply nil): fire-and-forget
}

// answer sends r to whoever waits for this append.
// It may be called from any goroutine (sender is the actor's context or
// the system's root context).
func (p pendingAppend) answer(sender actor.SenderContext, r *AppendResponse) {
	switch {
	case p.reply != nil:
		p.reply <- r
	case p.replyTo != nil:
		sender.Send(p.replyTo, r)
	}
}

// journalActor is the single writer of the WAL. It does group commit:
// requests that arrive while a batch is being written and fsynced queue up
// and go out together in the next batch, one fsync for all of them.
//
// The *wal.Log is touched only by the flusher goroutine, and at most one
// flush runs at a time (flushing), so the log has exactly one user at any
// moment. Write errors are sticky: after the first, every append is
// refused with internal_error.
type journalActor struct {
	log    *wal.Log
	logger *slog.Logger
	health *journalHealth // marked down when this actor stops or a write fails: writers fail fast
	// disk is the journal's free space: in the last reserve only
	// essential records are written (posturecache.go); nil: not watched.
	disk *diskWatch
	// index remembers each user's recent records (get_my_journal); the
	// flusher adds a batch once it is durable, before answering.
	index *journalIndex

	pending  []pendingAppend
	flushing bool
	deferred bool // a flushNow is on its way
	// active estimates how many writers are at work: the records of the
	// last flush plus those that queued during it, decaying slowly.
	active int
	failed error
	drains []*actor.PID
	// forced is set while lazy records must go out without waiting for an
	// eager one (a flushRequest or a drain is waiting for them).
	forced bool
}

// hasEager reports whether a pending record starts a flush by itself.
func (j *journalActor) hasEager() bool {
	if j.forced {
		return true
	}
	for _, p := range j.pending {
		if !p.lazy {
			return true
		}
	}
	return false
}

func (j *journalActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Stopping:
		j.health.markDown()
	case *AppendRequest:
		p := pendingAppend{entry: m.Entry, reply: m.Reply, replyTo: ctx.Sender()}
		if j.failed != nil {
			p.answer(ctx, &AppendResponse{Err: messages.Internal(j.failed)})
			return
		}
		if j.disk.refuses(messages.RecordType(m.Entry.Type)) {
			p.answer(ctx, &AppendResponse{Err: diskReserveRefusal()})
			return
		}
		p.lazy = m.Lazy
		j.pending = append(j.pending, p)
		if p.lazy && !j.hasEager() {
			return // waits for a record that flushes, or a flushRequest
		}
		if j.deferred && len(j.pending) >= j.active {
			j.flush(ctx) // everyone is here; the flushNow that follows finds the flush running
			return
		}
		j.maybeFlush(ctx)
	case *flushNow:
		j.deferred = false
		j.flush(ctx)
	case *flushRequest:
		// With nothing pending the record asked for is already in the
		// batch being written: forcing would only make the next lazy
		// record flush alone.
		j.forced = len(j.pending) > 0
		j.flush(ctx) // a no-op while a flush runs; flushDone starts the next
	case *flushDone:
		j.flushing = false
		j.active = max(len(m.batch)+len(j.pending), j.active*7/8)
		j.finish(ctx, m)
		j.maybeFlush(ctx)
		j.answerDrains(ctx)
	case *drainRequest:
		j.drains = append(j.drains, ctx.Sender())
		j.forced = true
		j.flush(ctx)
		j.answerDrains(ctx)
	case *crashRequest:
		panic("journal: crash requested by test")
	}
}

// maybeFlush starts a flush when none runs. Writers that wait for their
// answer all wake at the end of a flush and send their next record a few
// microseconds apart; flushing the first one alone would halve the batch
// size, and writers would split into groups that take turns. So when fewer
// records wait than writers seem active (and more than one is), the journal
// waits up to joinWait, or until that many records wait, before it
// flushes.
func (j *journalActor) maybeFlush(ctx actor.Context) {
	if j.flushing || j.deferred || len(j.pending) == 0 || j.failed != nil || !j.hasEager() {
		return
	}
	if j.active > 1 && len(j.pending) < j.active {
		j.deferred = true
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(joinWait, func() { root.Send(self, &flushNow{}) })
		return
	}
	j.flush(ctx)
}

// flush hands the pending records to one flusher goroutine.
func (j *journalActor) flush(ctx actor.Context) {
	if j.flushing || len(j.pending) == 0 || j.failed != nil {
		return
	}
	n := min(len(j.pending), maxBatch)
	batch := j.pending[:n:n]
	j.pending = j.pending[n:]
	if len(j.pending) == 0 {
		j.pending = nil
		j.forced = false
	}
	j.flushing = true
	entries := make([]wal.Entry, len(batch))
	for i, p := range batch {
		entries[i] = p.entry
	}
	self, root, log, health, index := ctx.Self(), ctx.ActorSystem().Root, j.log, j.health, j.index
	health.flushStart.Store(time.Now().UnixNano())
	health.flushes.Add(1)
	health.writing.Add(1)
	go func() {
		defer health.writing.Done()
		recs, err := log.Append(entries)
		health.flushStart.Store(0)
		if err == nil && len(recs) != len(batch) {
			err = errors.New("journal: append returned a short batch")
		}
		if err == nil {
			index.add(recs, false)
		}
		// The flusher answers the writers itself, the moment their
		// batch is durable: one hop fewer than through the mailbox. An
		// invalid entry wrote nothing; the actor sorts that batch out.
		if !errors.Is(err, wal.ErrInvalidEntry) {
			for i, p := range batch {
				if err != nil {
					p.answer(root, &AppendResponse{Err: messages.Internal(err)})
				} else {
					p.answer(root, &AppendResponse{Record: recs[i]})
				}
			}
		}
		root.Send(self, &flushDone{batch: batch, err: err})
	}()
}

func (j *journalActor) finish(ctx actor.Context, d *flushDone) {
	if errors.Is(d.err, wal.ErrInvalidEntry) {
		// Nothing was written: refuse the bad entries alone and put the
		// good ones back at the front, in order. Not a sticky failure.
		var good []pendingAppend
		for _, p := range d.batch {
			if err := wal.ValidateEntry(p.entry); err != nil {
				j.logger.Error("journal: refused an invalid entry", "err", err.Error())
				p.answer(ctx, &AppendResponse{Err: messages.Internal(err)})
				continue
			}
			good = append(good, p)
		}
		j.pending = append(good, j.pending...)
		return
	}
	// The batch's writers were answered by the flusher.
	if d.err != nil {
		j.failed = d.err
		j.health.markDown()
		j.logger.Error("journal write failed; refusing all further appends", "err", d.err.Error())
		for _, p := range j.pending {
			p.answer(ctx, &AppendResponse{Err: messages.Internal(d.err)})
		}
		j.pending = nil
	}
}

func (j *journalActor) answerDrains(ctx actor.Context) {
	if j.flushing || j.deferred || len(j.pending) > 0 {
		return
	}
	for _, d := range j.drains {
		if d != nil {
			ctx.Send(d, &drainResponse{})
		}
	}
	j.drains = nil
}
