package actors

import (
	"errors"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// maxBatch bounds one group commit, so one fsync never carries an
// unbounded tail of requests.
const maxBatch = 4096

// AppendRequest asks the journal actor to append one record. The reply, an
// *AppendResponse, is sent only after the record's batch is durable.
type AppendRequest struct {
	Entry wal.Entry
}

// AppendResponse answers AppendRequest; exactly one of Record and Err is set.
type AppendResponse struct {
	Record wal.Record
	Err    *messages.Error
}

// drainRequest asks the journal actor to answer once everything queued
// before it is durable (used by a graceful stop).
type drainRequest struct{}

type drainResponse struct{}

// flushDone is sent by the flusher goroutine back to the journal actor.
type flushDone struct {
	batch   []pendingAppend
	records []wal.Record
	err     error
}

type pendingAppend struct {
	entry   wal.Entry
	replyTo *actor.PID // nil: fire-and-forget
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

	pending  []pendingAppend
	flushing bool
	failed   error
	drains   []*actor.PID
}

func (j *journalActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *AppendRequest:
		if j.failed != nil {
			if s := ctx.Sender(); s != nil {
				ctx.Respond(&AppendResponse{Err: messages.Internal(j.failed)})
			}
			return
		}
		j.pending = append(j.pending, pendingAppend{entry: m.Entry, replyTo: ctx.Sender()})
		j.maybeFlush(ctx)
	case *flushDone:
		j.flushing = false
		j.finish(ctx, m)
		j.maybeFlush(ctx)
		j.answerDrains(ctx)
	case *drainRequest:
		j.drains = append(j.drains, ctx.Sender())
		j.answerDrains(ctx)
	case *crashRequest:
		panic("journal: crash requested by test")
	}
}

func (j *journalActor) maybeFlush(ctx actor.Context) {
	if j.flushing || len(j.pending) == 0 || j.failed != nil {
		return
	}
	n := min(len(j.pending), maxBatch)
	batch := j.pending[:n:n]
	j.pending = j.pending[n:]
	if len(j.pending) == 0 {
		j.pending = nil
	}
	j.flushing = true
	entries := make([]wal.Entry, len(batch))
	for i, p := range batch {
		entries[i] = p.entry
	}
	self, root, log := ctx.Self(), ctx.ActorSystem().Root, j.log
	go func() {
		recs, err := log.Append(entries)
		root.Send(self, &flushDone{batch: batch, records: recs, err: err})
	}()
}

func (j *journalActor) finish(ctx actor.Context, d *flushDone) {
	if d.err == nil && len(d.records) != len(d.batch) {
		d.err = errors.New("journal: append returned a short batch")
	}
	if d.err != nil {
		j.failed = d.err
		j.logger.Error("journal write failed; refusing all further appends", "err", d.err.Error())
	}
	for i, p := range d.batch {
		if p.replyTo == nil {
			continue
		}
		if d.err != nil {
			ctx.Send(p.replyTo, &AppendResponse{Err: messages.Internal(d.err)})
			continue
		}
		ctx.Send(p.replyTo, &AppendResponse{Record: d.records[i]})
	}
	if d.err != nil {
		for _, p := range j.pending {
			if p.replyTo != nil {
				ctx.Send(p.replyTo, &AppendResponse{Err: messages.Internal(d.err)})
			}
		}
		j.pending = nil
	}
}

func (j *journalActor) answerDrains(ctx actor.Context) {
	if j.flushing || len(j.pending) > 0 {
		return
	}
	for _, d := range j.drains {
		if d != nil {
			ctx.Send(d, &drainResponse{})
		}
	}
	j.drains = nil
}
