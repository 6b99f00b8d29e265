package actors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// cancel_all_orders through the one action path: a snapshot of the plain
// open orders (New, PartiallyFilled) it has just read, at most 20,
// cancelled one by one by id; never the venue's cancel-all endpoint, so
// nothing placed after the snapshot is touched. Orders that protect a
// position (reduce-only, D73) are left and counted. It reduces risk: the
// kill switch lets it through. The call is one parent attempt (which claims the
// idempotency key and, in its outcome, keeps the whole answer) around one
// cancel attempt per order.

const (
	toolCancelAll = "cancel_all_orders"
	// cancelAllMax is how many orders one call cancels.
	cancelAllMax = 20
)

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

// cancelAllStep carries a cancel_all_orders call between its steps.
type cancelAllStep struct {
	args messages.CancelAllArgs
	hash string
}

// openOrdersFetch asks the venue actor for the open orders of a symbol.
type openOrdersFetch struct {
	action   uint64
	category messages.Category
	symbol   string
}

// openOrdersFetched is the outcome of an openOrdersFetch.
type openOrdersFetched struct {
	action  uint64
	orders  []messages.Order
	hasMore bool
	err     *messages.Error
}

func (v *venueActor) fetchOpenOrders(ctx actor.Context, m *openOrdersFetch) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	if v.session == nil {
		err := v.noSessionError()
		ctx.Send(userPID, &openOrdersFetched{action: m.action, err: err})
		return
	}
	s := v.session
	offMailbox(ctx, v.logger, nil, v.timeout, userPID, func(c context.Context) any {
		page, err := s.OpenOrders(c, venue.OrderQuery{Category: m.category, Symbol: m.symbol, Limit: 50})
		if err != nil {
			return &openOrdersFetched{action: m.action, err: messages.AsError(err)}
		}
		return &openOrdersFetched{action: m.action, orders: page.Items, hasMore: page.NextCursor != ""}
	}, func(err *messages.Error) any { return &openOrdersFetched{action: m.action, err: err} })
}

func (u *userActor) cancelAll(ctx actor.Context, a messages.CancelAllArgs, origin messages.Origin, sender *actor.PID) {
	switch {
	case a.Category != messages.CategoryLinear && a.Category != messages.CategorySpot:
		u.reply(ctx, sender, messages.InvalidParams("category", "must be spot or linear"))
		return
	case !messages.SymbolRE.MatchString(a.Symbol):
		u.reply(ctx, sender, messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9"))
		return
	case a.IdempotencyKey != "" && !messages.IdempotencyKeyRE.MatchString(a.IdempotencyKey):
		u.reply(ctx, sender, messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"))
		return
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{toolCancelAll, string(a.Category), a.Symbol}, "|")))
	hash := hex.EncodeToString(sum[:])
	if !a.DryRun && u.repeat(ctx, toolCancelAll, a.IdempotencyKey, hash, false, origin, sender) {
		return
	}
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolCancelAll, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, toolCancelAll, a.Category, a.Symbol, a.DryRun, e, origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, origin, nil)
	act.all = &cancelAllStep{args: a, hash: hash}
	act.claim = &claim{key: a.IdempotencyKey, hash: hash, dryRun: a.DryRun}
	u.toVenue(ctx, &openOrdersFetch{action: act.id, category: a.Category, symbol: a.Symbol}, ctx.Self())
}

// onOpenOrdersFetched plans the cancels from the snapshot and runs them
// one by one.
func (u *userActor) onOpenOrdersFetched(ctx actor.Context, m *openOrdersFetched) {
	act, ok := u.actions[m.action]
	if !ok || act.all == nil {
		return
	}
	delete(u.actions, act.id)
	a := act.all.args
	if m.err != nil {
		u.reply(ctx, act.waiter, m.err)
		return
	}
	if !a.DryRun && u.repeat(ctx, toolCancelAll, a.IdempotencyKey, act.all.hash, false, act.origin, act.waiter) {
		return
	}
	e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolCancelAll, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env)
	if e != nil {
		u.refuseTool(ctx, toolCancelAll, a.Category, a.Symbol, a.DryRun, e, act.origin, act.waiter)
		return
	}
	plain, malformed, protective := cancelAllCandidates(m.orders, a.Symbol, u.shownOf(act.origin))
	if malformed > 0 {
		// The id is not logged: it is the exchange's text, of any shape.
		u.logger.Warn("cancel_all_orders: the venue listed open orders with a malformed order id; left out",
			"user", u.state.User, "symbol", a.Symbol, "count", malformed)
	}
	ans := &messages.CancelAllAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, HasMore: m.hasMore || len(plain) > cancelAllMax,
		IdempotencyKey: a.IdempotencyKey, Orders: []messages.CancelAllRow{}, ProtectiveLeft: protective}
	if len(plain) > cancelAllMax {
		plain = plain[:cancelAllMax]
	}
	for _, o := range plain {
		row := messages.CancelAllRow{OrderID: o.OrderID, Origin: u.state.OrderOrigin(o.OrderLinkID), Status: "planned"}
		if row.Origin == messages.OriginSystem {
			row.ClientOrderID = o.OrderLinkID
		} else {
			ans.ExternalCount++
		}
		ans.Orders = append(ans.Orders, row)
	}
	ans.Count = len(ans.Orders)
	ans.Fence()
	if a.DryRun {
		u.reply(ctx, act.waiter, ans)
		return
	}
	p := u.state.Effective(u.venue, u.env)
	if u.confirmGate(ctx, act, parkRequest{tool: toolCancelAll, category: a.Category, symbol: a.Symbol,
		args: a, hash: act.all.hash, key: a.IdempotencyKey, shown: messages.ShownToUser{CancelAll: ans}, confirmedBy: confirmedBy(p, toolCancelAll, decimal.Zero)}) {
		return
	}
	u.runCancelAll(ctx, act, a, plain, ans)
}

// cancelAllCandidates picks from the venue's open orders those a
// cancel-all cancels: the plain open orders of symbol (an order that
// protects a position is left and counted in protective); for an approved
// one (shown is its plan) only those the human was shown. An order whose
// id is not shaped like a venue order id (messages.VenueOrderIDRE) is left
// out and counted in malformed: its id would carry the exchange's text to
// the human's form or terminal, to the agent and back to the venue.
func cancelAllCandidates(orders []messages.Order, symbol string, shown *messages.ShownToUser) (plain []messages.Order, malformed, protective int) {
	for _, o := range orders {
		if o.Symbol != symbol || (o.Status != "New" && o.Status != "PartiallyFilled") {
			continue
		}
		if !messages.VenueOrderIDRE.MatchString(o.OrderID) {
			malformed++
			continue
		}
		if protectiveOrder(&o) {
			// Cancelling it adds risk (D73): left, like the dead-man
			// switch leaves it, so this call reduces risk only.
			protective++
			continue
		}
		// An approved cancel-all cancels exactly the orders shown.
		if shown != nil && (shown.CancelAll == nil || !slices.ContainsFunc(shown.CancelAll.Orders, func(r messages.CancelAllRow) bool { return r.OrderID == o.OrderID })) {
			continue
		}
		plain = append(plain, o)
	}
	return plain, malformed, protective
}

// runCancelAll journals the parent attempt (it claims the key), cancels
// each order with its own attempt, then journals the parent's outcome with
// the whole answer and answers.
func (u *userActor) runCancelAll(ctx actor.Context, act *action, a messages.CancelAllArgs, plain []messages.Order, ans *messages.CancelAllAnswer) {
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
	att := messages.OrderAttemptEvent{ActionID: strconv.FormatUint(parent.id, 36), ClientOrderID: id, Environment: u.env, Tool: toolCancelAll,
		Category: a.Category, Symbol: a.Symbol, At: u.now().UTC(), IdempotencyKey: a.IdempotencyKey, ArgsSHA256: act.all.hash}
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
			plan := orderPlan{tool: toolCancelAll, category: a.Category, symbol: a.Symbol, settleLinkID: o.OrderLinkID, changes: &o,
				cancel: &messages.CancelOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID}}
			child := u.execute(ctx, plan, act.origin, nil)
			var retryAfter time.Duration
			child.complete = func(r *orderResult, w *orderWritten) any {
				u.cancelPace.answered(sentAt, time.Now())
				if r.Err != nil {
					ans.Orders[i].Status = string(r.Err.Code)
					if w != nil && w.class == venue.WriteRefused && r.Err.Code == messages.CodeRateLimited {
						// Refused by the venue's rate limit: nothing applied.
						retryAfter = min(max(time.Duration(r.Err.RetryAfterS)*time.Second, cancelPaceWindow), cancelRetryMaxWait)
					}
					return nil
				}
				read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
				if e != nil {
					ans.Orders[i].Status = string(e.Code)
					return nil
				}
				ans.Orders[i].Status = string(venue.CancelResult(read).Status)
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
