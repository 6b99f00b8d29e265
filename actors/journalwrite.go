package actors

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/journal"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// journalTimeout bounds one wait for the journal (journal.Timeout).
const journalTimeout = journal.Timeout

// DefaultDiskFloor is the journal's last reserve (journal.DefaultDiskFloor).
const DefaultDiskFloor = journal.DefaultDiskFloor

// appendFuture hands e to the journal writer with durability d and
// returns a future that the writer answers with a *journal.Result once
// the record is durable (or refused): an actor waits for it with
// ReenterAfter, off its mailbox. The future's own timeout is
// journalTimeout; journalAnswer reads it.
func appendFuture(ctx actor.Context, w *journal.Writer, e wal.Entry, d journal.Durability) *actor.Future {
	f := actor.NewFuture(ctx.ActorSystem(), journalTimeout)
	pid, root := f.PID(), ctx.ActorSystem().Root
	w.Append(e, d, func(r journal.Result) { root.Send(pid, &r) })
	return f
}

// journalAnswer reads an appendFuture's answer. A journal that did not
// answer within journalTimeout is treated as failed for everyone: the
// write may still become durable, and the state could no longer be
// trusted to match the journal.
func journalAnswer(w *journal.Writer, logger *slog.Logger, res any, ferr error) (wal.Record, error) {
	if ferr != nil {
		w.MarkDown()
		logger.Error("journal did not answer; refusing all further writes", "err", ferr.Error())
		return wal.Record{}, messages.Internal(fmt.Errorf("journal: %w", ferr))
	}
	r := res.(*journal.Result)
	if r.Err != nil {
		return wal.Record{}, r.Err
	}
	return r.Record, nil
}

// errJournalDown refuses a write once the journal has failed: internal_error,
// or shard_fenced when a cluster shard's journal lost its lock
// (journal.Writer.DownError).
func errJournalDown(w *journal.Writer) *messages.Error {
	return w.DownError()
}

// writeTwo journals two records in one sync: first NoSync, then second,
// Sync, right behind it (the journal is ordered: when second is durable,
// so is first). then runs once both are answered, on the actor's
// goroutine, with each one's outcome; like write, it applies nothing
// itself, and messages arriving meanwhile are queued. If this incarnation
// was replaced meanwhile, the durable records are handed to the new one.
func (u *userActor) writeTwo(ctx actor.Context, first, second state.Event, o messages.Origin, then func(rec1 wal.Record, err1, err2 error)) {
	origin := o.Actor()
	var entries [2]wal.Entry
	for i, ev := range [2]state.Event{first, second} {
		if !state.OriginAllowed(ev, origin) {
			then(wal.Record{}, state.RefuseOrigin(ev, origin), nil)
			return
		}
		payload, err := json.Marshal(ev.Payload)
		if err != nil {
			then(wal.Record{}, messages.Internal(err), nil)
			return
		}
		entries[i] = wal.Entry{Time: u.now().UTC(), Type: uint16(ev.Type), User: u.state.User, Actor: origin, Channel: o.ChannelText(), Payload: payload}
	}
	if u.journal.IsDown() {
		then(wal.Record{}, errJournalDown(u.journal), nil)
		return
	}
	u.busy = true
	f1 := appendFuture(ctx, u.journal, entries[0], journal.NoSync)
	f2 := appendFuture(ctx, u.journal, entries[1], journal.Sync)
	ctx.ReenterAfter(f1, func(r1 any, ferr1 error) {
		rec1, err1 := journalAnswer(u.journal, u.logger, r1, ferr1)
		ctx.ReenterAfter(f2, func(r2 any, ferr2 error) {
			rec2, err2 := journalAnswer(u.journal, u.logger, r2, ferr2)
			if u.replaced {
				for _, r := range []struct {
					rec wal.Record
					err error
				}{{rec1, err1}, {rec2, err2}} {
					if r.err == nil {
						ctx.Send(ctx.Self(), &lateRecord{rec: r.rec})
					}
				}
				return
			}
			u.busy = false
			then(rec1, err1, err2)
			u.drain(ctx)
		})
	})
}
