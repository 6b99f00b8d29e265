package actors

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// lookupOrderRequest asks the venue actor for one order by its client
// order id (open orders, then history), to reconcile an open attempt. Its
// outcome goes back to the user actor as *orderLookedUp.
type lookupOrderRequest struct {
	action  uint64
	attempt state.Attempt
}

// orderLookedUp is the outcome of a lookupOrderRequest: order is nil when
// the venue does not know the client order id.
type orderLookedUp struct {
	action uint64
	order  *messages.Order
	err    *messages.Error
	// mismatch is set when the venue showed an order for the client
	// order id that does not match the attempt: it settles nothing (err
	// is set too, and the attempt stays open).
	mismatch *venue.Mismatch
	// reused is set when the order found is under an order id the server
	// knows under another client order id: it settles nothing either.
	reused *orderIDsReused
}

// lookup runs on the venue actor.
func (v *venueActor) lookup(ctx actor.Context, m *lookupOrderRequest) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	if v.session == nil {
		err := v.noSessionError()
		ctx.Send(userPID, &orderLookedUp{action: m.action, err: err})
		return
	}
	s, a, ids := v.session, m.attempt, v.ids
	offMailbox(ctx, v.logger, nil, v.timeout, userPID, func(c context.Context) any {
		out := &orderLookedUp{action: m.action}
		open, err := s.OpenOrders(c, venue.OrderQuery{Category: a.Category, Symbol: a.Symbol, OrderLinkID: a.ClientOrderID})
		if err != nil {
			out.err = messages.AsError(err)
			return out
		}
		o := findOrder(open.Items, a.ClientOrderID)
		if o == nil {
			hist, err := s.OrderHistory(c, venue.HistoryQuery{Category: a.Category, Symbol: a.Symbol, OrderLinkID: a.ClientOrderID})
			if err != nil {
				out.err = messages.AsError(err)
				return out
			}
			o = findOrder(hist.Items, a.ClientOrderID)
		}
		expect := a.Expectation()
		if f := expect.Mismatch(o); o != nil && f != "" {
			// Another order under the attempt's id: the outcome stays
			// unknown (the attempt open), as when the venue cannot be read.
			out.mismatch = &venue.Mismatch{Source: messages.AnomalySourceREST, Field: f}
			out.err = &messages.Error{Code: messages.CodeOutcomeUnknown, Message: "the venue showed an order under the attempt's client order id that does not match it",
				Details: map[string]any{"client_order_id": a.ClientOrderID, "reconnaissance": "mismatch"}}
			return out
		}
		if o != nil {
			if out.reused = ids.refused(messages.AnomalySourceREST, o.Category, o.Symbol, o.OrderID, o.OrderLinkID); out.reused != nil {
				out.err = reusedOrderIDError(a.ClientOrderID)
				return out
			}
		}
		out.order = o
		return out
	}, func(err *messages.Error) any { return &orderLookedUp{action: m.action, err: err} })
}

func findOrder(items []messages.Order, clientOrderID string) *messages.Order {
	for i := range items {
		if items[i].OrderLinkID == clientOrderID {
			return &items[i]
		}
	}
	return nil
}

// startRecovery begins the recovery phase when the state holds open
// attempts (an order_attempt without an order_outcome): each is looked up
// on the venue, and until every lookup has come back the actor takes no
// new writes (holdsForRecovery), so nothing is decided on limits that an
// unreconciled order may still change. Reads, and turning the kill switch
// on, are served meanwhile.
func (u *userActor) startRecovery(ctx actor.Context) {
	for _, att := range u.state.Attempts {
		if u.ownsAttempt(att.ClientOrderID) {
			continue // its write or an earlier reconcile is under way
		}
		if att.Environment != "" && att.Environment != u.env {
			// Sent to another venue: looking it up here would find
			// nothing and close an order that may be live there. It stays
			// open (and its reservation counts) until a process of that
			// venue reconciles it.
			if !u.foreignAttemptsLogged {
				u.foreignAttemptsLogged = true
				u.logger.Warn("open order attempts of another venue stay open until a server of that venue starts",
					"user", u.state.User, "venue", att.Environment)
			}
			continue
		}
		a := u.begin(actionReconcile, nil, systemOrigin, nil)
		a.attempt = att
		u.recovering++
		u.toVenue(ctx, &lookupOrderRequest{action: a.id, attempt: att}, ctx.Self())
	}
}

// DefaultRecoveryWait is how long a write waits for the recovery phase
// before it is answered that the server is still reconciling.
const DefaultRecoveryWait = 5 * time.Second

// recoveryHoldExpired says that msg has waited recoveryWait for the
// recovery phase.
type recoveryHoldExpired struct{ msg any }

// boundRecoveryHold arms the bound of a write held for the recovery phase
// (D63): start-up never waits on the network, so the lookups of open
// attempts run in the background and a trading call that comes meanwhile
// waits for them, but never longer than recoveryWait.
func (u *userActor) boundRecoveryHold(ctx actor.Context, msg any) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(u.recoveryWait, func() { root.Send(self, &recoveryHoldExpired{msg: msg}) })
}

// held reports whether msg must wait now: for the recovery phase (every
// write), or for a key re-check in flight (trading calls: the check at
// start may block trading, D63).
func (u *userActor) held(msg any) bool {
	return (u.recovering > 0 && holdsForRecovery(msg)) || (u.rechecking > 0 && isTradingCall(msg))
}

// isTradingCall reports whether msg is a trading tool's call that waits
// for a key re-check (its descriptor's heldOnRecheck).
func isTradingCall(msg any) bool {
	switch m := msg.(type) {
	case *tradingAsk:
		return m.tool.heldOnRecheck
	case *userCommand:
		d, _, _ := toolOfCommand(m.cmd)
		return d != nil && d.heldOnRecheck
	}
	return false
}

// systemCommand reports whether msg is a command the server sent itself
// (the key re-check at start): it waits for the recovery phase without a
// bound, as nobody is waiting for a prompt answer.
func systemCommand(msg any) bool {
	c, ok := msg.(*userCommand)
	return ok && c.origin.Actor() == messages.ActorSystem
}

// onRecoveryHoldExpired answers a call still held for the recovery phase
// or a key re-check: nothing was decided or sent, and the caller may call
// again. A message held only behind a journal write runs as usual.
func (u *userActor) onRecoveryHoldExpired(ctx actor.Context, m *recoveryHoldExpired) {
	if !u.held(m.msg) {
		return
	}
	i := slices.IndexFunc(u.queue, func(q queued) bool { return q.msg == m.msg })
	if i < 0 {
		return
	}
	q := u.queue[i]
	u.queue = slices.Delete(u.queue, i, i+1)
	secs := max(int((u.recoveryWait+time.Second-1)/time.Second), 1)
	if u.recovering == 0 {
		u.reply(ctx, q.sender, &messages.Error{
			Code: messages.CodeExchangeUnavailable,
			Message: "the server is still re-checking the exchange key's permissions with the venue, " +
				"and waited for it as long as it may; nothing was decided or sent",
			NextStep:    "call again after retry_after_s",
			RetryAfterS: secs,
			Details:     map[string]any{"reason": "checking_key"},
		})
		return
	}
	u.reply(ctx, q.sender, &messages.Error{
		Code: messages.CodeExchangeUnavailable,
		Message: "the server is still reconciling open orders with the venue (after start or a stream reconnect), " +
			"and waited for it as long as it may; nothing was decided or sent",
		NextStep:    "call again after retry_after_s; get_my_journal shows the open attempts' outcomes once they are settled",
		RetryAfterS: secs,
		Details:     map[string]any{"reason": "reconciling", "open_attempts": u.recovering},
	})
}

// holdsForRecovery reports whether msg waits for the recovery phase to end.
func holdsForRecovery(msg any) bool {
	switch m := msg.(type) {
	case *userCommand:
		switch c := m.cmd.(type) {
		case *messages.ShowPolicyRequest, *messages.ShowCredentialRequest, *messages.ShowPostureRequest, *messages.ConfirmationStatusCommand, *messages.ListConfirmationsCommand:
			return false
		case *messages.SetPostureRequest:
			return !c.Reduce
		case *messages.SetKillSwitchRequest:
			return !c.On
		}
		return true
	case *decideAsk, *tradingAsk, *cancelAllResume, *confirmExecute, *confirmSweep:
		return true
	}
	return false
}

// LateSendSkew is the clock skew allowed between this server and the
// exchange when deciding that a write already sent can no longer land
// (D199): Bybit accepts a timestamp up to 1 s ahead of its clock, and
// this covers as much behind.
const LateSendSkew = time.Second

// attemptRelook looks an open attempt up again once a not_found could not
// be concluded yet (notFoundFrom).
type attemptRelook struct{ action uint64 }

// notFoundFrom is the moment from which a reconcile may conclude that an
// order not found on the venue will never be there (D199). Every request
// of an attempt left before the later of this System's start (a
// restarted process, or a shard's new owner: the old owner's writes stop
// with its lock, docs/cluster.md, and the lock is taken before the
// System starts) and the end of the user's last venue write in this
// System (now while one is in flight, whichever incarnation of the
// user's actors sent it); a write carries a timestamp from before it
// left and a recv_window of at most venue.WriteRecvWindow, so the
// exchange refuses it past that window (and LateSendSkew for the clocks).
func (u *userActor) notFoundFrom() time.Time {
	from := u.sendsFrom
	if until := u.sends.of(u.state.User).sendsUntil(); until.After(from) {
		from = until
	}
	return from.Add(venue.WriteRecvWindow + LateSendSkew)
}

// sendClocks are the users' sendClock, one per user that wrote to the
// venue in this System; they outlive the users' actors.
type sendClocks struct {
	mu sync.Mutex
	m  map[string]*sendClock
}

// of returns user's clock.
func (s *sendClocks) of(user string) *sendClock {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*sendClock{}
	}
	c := s.m[user]
	if c == nil {
		c = &sendClock{}
		s.m[user] = c
	}
	return c
}

// sendClock counts one user's venue writes in flight and notes when the
// last one ended.
type sendClock struct {
	mu       sync.Mutex
	inflight int
	lastEnd  time.Time
}

// begin notes a write starting; the function it returns ends it, once no
// request of the write can leave any more.
func (c *sendClock) begin() func() {
	c.mu.Lock()
	c.inflight++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.inflight--
		c.lastEnd = time.Now()
		c.mu.Unlock()
	}
}

// sendsUntil is the latest moment a write of the user may have left: now
// while one is in flight, else when the last one ended (zero: none).
func (c *sendClock) sendsUntil() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight > 0 {
		return time.Now()
	}
	return c.lastEnd
}

// onAttemptRelook looks an attempt of the recovery phase up again.
func (u *userActor) onAttemptRelook(ctx actor.Context, m *attemptRelook) {
	a, ok := u.actions[m.action]
	if !ok || a.kind != actionReconcile {
		return
	}
	u.toVenue(ctx, &lookupOrderRequest{action: a.id, attempt: a.attempt}, ctx.Self())
}

// onOrderLookedUp journals the reconciled outcome of one open attempt. A
// lookup that failed (venue down) journals nothing: the attempt stays open
// (its reservation still counts) and is reconciled at the next start.
func (u *userActor) onOrderLookedUp(ctx actor.Context, m *orderLookedUp) {
	a, ok := u.actions[m.action]
	if !ok {
		return
	}
	done := func() {
		delete(u.actions, a.id)
		u.recovering--
		if u.recovering == 0 {
			u.drain(ctx)
		}
	}
	if m.mismatch != nil {
		u.noteAnomalies(ctx, a.attempt, []venue.Mismatch{*m.mismatch})
	}
	if m.reused != nil {
		u.noteReused(ctx, m.reused)
	}
	if m.err != nil {
		u.logger.Warn("could not reconcile an open order attempt; it stays open", "user", u.state.User, "code", string(m.err.Code))
		done()
		return
	}
	if m.order == nil {
		if wait := time.Until(u.notFoundFrom()); wait > 0 {
			// A request of this attempt may still be on its way: the
			// attempt stays open (and counts) and is looked up again once
			// it can no longer land (D199).
			self, root, id := ctx.Self(), ctx.ActorSystem().Root, a.id
			time.AfterFunc(wait, func() { root.Send(self, &attemptRelook{action: id}) })
			return
		}
	}
	a.step = stepJournal
	ev := state.Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{
		ActionID: a.attempt.ActionID, ClientOrderID: a.attempt.ClientOrderID, At: u.now().UTC(), Status: messages.OutcomeNotFound, ResultSource: "reconnaissance",
	}}

	if m.order != nil {
		p := ev.Payload.(messages.OrderOutcomeEvent)
		p.Status, p.VenueStatus = messages.OutcomeFound, m.order.Status
		ev.Payload = p
	}
	u.write(ctx, ev, systemOrigin, func(_ wal.Record, err error) {
		if err == nil {
			u.commit(ev)
		} else {
			u.logger.Error("could not journal a reconciled outcome", "user", u.state.User, "err", err.Error())
		}
		done()
	})
}
