package actors

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// cancel_all_orders' chain (its descriptor: tool_cancelall.go): a snapshot of the plain
// open orders (New, PartiallyFilled) it has just read, at most 20,
// cancelled one by one by id; never the venue's cancel-all endpoint, so
// nothing placed after the snapshot is touched. Orders that protect a
// position (reduce-only, D73) are left and counted. It reduces risk: the
// kill switch lets it through. The call is one parent attempt (which claims the
// idempotency key and, in its outcome, keeps the whole answer) around one
// cancel attempt per order.

// Pacing (D64). The venue limits cancels per key: Bybit's default is 10 a
// second on linear (20 on spot), in a rolling window; the 11th is refused
// with 10006 and not applied. A user's cancel_all_orders calls send at
// most cancelPaceCount cancels per cancelPaceWindow (a little over a
// second, for the clocks' granularity); a cancel the venue still refuses
// for its rate limit (another client shares the key's limit) applied
// nothing, so it is sent again once the window has moved, at most
// cancelRetries times per order and for cancelRetryBudget in all per call.
// A cancel whose outcome is unknown is never sent again.
const (
	cancelPaceCount   = 10
	cancelPaceWindow  = time.Second + 50*time.Millisecond
	cancelRetries     = 3
	cancelRetryBudget = 5 * time.Second
	// cancelRetryMaxWait bounds one wait on a refusal's retry_after_s.
	cancelRetryMaxWait = 2 * time.Second
)

// cancelPacer remembers when the user's last cancels of cancel_all_orders
// were sent (wall clock: the venue's window is real time). Owned by the
// user actor.
type cancelPacer struct{ sent []time.Time }

// delay is how long to wait at now before the next cancel may go.
func (p *cancelPacer) delay(now time.Time) time.Duration {
	if len(p.sent) < cancelPaceCount {
		return 0
	}
	return max(p.sent[len(p.sent)-cancelPaceCount].Add(cancelPaceWindow).Sub(now), 0)
}

// note records a cancel sent at now.
func (p *cancelPacer) note(now time.Time) {
	p.sent = append(p.sent, now)
	if len(p.sent) > cancelPaceCount {
		p.sent = append(p.sent[:0], p.sent[len(p.sent)-cancelPaceCount:]...)
	}
}

// answered moves the cancel sent at sent to now, when its answer came: the
// venue counted it somewhere in between, so pacing from the answer keeps
// the window even when a busy host delays requests on their way out.
func (p *cancelPacer) answered(sent, now time.Time) {
	for i := len(p.sent) - 1; i >= 0; i-- {
		if p.sent[i].Equal(sent) {
			p.sent[i] = now
			return
		}
	}
}

// cancelAllResume continues a cancel_all_orders call after a pacing wait.
// It runs only if the call is still in flight in this incarnation of the
// user actor (a restart answers it and reconciles its attempts instead).
type cancelAllResume struct {
	parent *action
	run    func()
}

// later sends run back to this actor after d, as part of parent.
func (u *userActor) later(ctx actor.Context, parent *action, d time.Duration, run func()) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(d, func() { root.Send(self, &cancelAllResume{parent: parent, run: run}) })
}

func (u *userActor) onCancelAllResume(m *cancelAllResume) {
	if a, ok := u.actions[m.parent.id]; ok && a == m.parent {
		m.run()
	}
}

// runCancelAll journals the parent attempt (it claims the key), cancels
// each order with its own attempt, then journals the parent's outcome with
// the whole answer and answers.
func (u *userActor) runCancelAll(ctx actor.Context, act *action, d *risk.Decision) {
	a := act.call.args.(messages.CancelAllArgs)
	plain, ans := d.Orders, d.Planned.(*messages.CancelAllAnswer)
	complete := act.call.tool.complete
	parent := u.begin(actionOrder, act.waiter, act.origin, nil)
	parent.claim = act.claim
	parent.step = stepJournal
	id := u.linkID(parent, act.origin)
	if !u.tickets.commit(act.waiter, act.origin, id) {
		// The caller stopped waiting before anything was sent and was
		// told nothing would be (askbound.go).
		u.finish(ctx, parent, callerGone())
		return
	}
	att := messages.OrderAttemptEvent{ActionID: strconv.FormatUint(parent.id, 36), ClientOrderID: id, Environment: u.env, Tool: risk.ToolCancelAll,
		Category: a.Category, Symbol: a.Symbol, At: u.now().UTC(), IdempotencyKey: a.IdempotencyKey, ArgsSHA256: act.call.hash}
	ev := state.Event{Type: messages.RecordOrderAttempt, Payload: att}
	u.write(ctx, ev, act.origin, func(_ wal.Record, err error) {
		u.tickets.settle(act.waiter, err == nil)
		if err != nil {
			u.finish(ctx, parent, messages.AsError(err))
			return
		}
		u.commit(ev)
		parent.attempt = u.state.Attempts[id]
		ans.Status, ans.ResultSource = "done", messages.ResultSourceVenue
		var waited time.Duration
		var next func(i, tries int)
		next = func(i, tries int) {
			if i == len(plain) {
				u.closeCancelAll(ctx, parent, ans)
				return
			}
			if d := u.cancelPace.delay(time.Now()); d > 0 {
				u.later(ctx, parent, d, func() { next(i, tries) })
				return
			}
			sentAt := time.Now()
			u.cancelPace.note(sentAt)
			o := plain[i]
			plan := risk.Plan{Tool: risk.ToolCancelAll, Category: a.Category, Symbol: a.Symbol, SettleLinkID: o.OrderLinkID, Changes: &o,
				Cancel: &messages.CancelOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID}}
			child := u.execute(ctx, plan, act.origin, nil)
			var retryAfter time.Duration
			child.complete = func(r *orderResult, w *orderWritten) any {
				u.cancelPace.answered(sentAt, time.Now())
				if r.Err != nil && w != nil && w.class == venue.WriteRefused && r.Err.Code == messages.CodeRateLimited {
					// Refused by the venue's rate limit: nothing applied.
					retryAfter = min(max(time.Duration(r.Err.RetryAfterS)*time.Second, cancelPaceWindow), cancelRetryMaxWait)
				}
				ans.Orders[i].Status = complete(&risk.Decision{Plan: plan}, r, w).(string)
				return nil
			}
			child.after = func() {
				if retryAfter > 0 && tries < cancelRetries && waited+retryAfter <= cancelRetryBudget {
					waited += retryAfter
					u.later(ctx, parent, retryAfter, func() { next(i, tries+1) })
					return
				}
				next(i+1, 0)
			}
		}
		next(0, 0)
	})
}

// closeCancelAll journals the parent's outcome with the whole answer, then
// answers.
func (u *userActor) closeCancelAll(ctx actor.Context, parent *action, ans *messages.CancelAllAnswer) {
	raw, _ := json.Marshal(ans)
	ev := state.Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{ActionID: parent.attempt.ActionID, ClientOrderID: parent.attempt.ClientOrderID,
		At: u.now().UTC(), Status: messages.OutcomeAccepted, ResultSource: messages.ResultSourceVenue, Answer: raw}}

	u.write(ctx, ev, parent.origin, func(_ wal.Record, err error) {
		if err != nil {
			u.finish(ctx, parent, messages.AsError(err))
			return
		}
		u.commit(ev)
		u.finish(ctx, parent, ans)
	})
}
