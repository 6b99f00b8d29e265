package actors

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// lookupOrderRequest asks the venue actor for one order by its client
// order id (open orders, then history), to reconcile an open attempt. Its
// outcome goes back to the user actor as *orderLookedUp.
type lookupOrderRequest struct {
	action  uint64
	attempt Attempt
}

// orderLookedUp is the outcome of a lookupOrderRequest: order is nil when
// the venue does not know the client order id.
type orderLookedUp struct {
	action uint64
	order  *messages.Order
	err    *messages.Error
}

// actionReconcile looks an open attempt up on the venue and journals its
// outcome (the recovery phase at start).
const actionReconcile actionKind = actionKeyRecheck + 1

// lookup runs on the venue actor.
func (v *venueActor) lookup(ctx actor.Context, m *lookupOrderRequest) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	if v.session == nil {
		err := v.keyErr
		if err == nil {
			err = noKeyError()
		}
		ctx.Send(userPID, &orderLookedUp{action: m.action, err: err})
		return
	}
	s, a := v.session, m.attempt
	offMailbox(ctx, v.logger, nil, v.timeout, userPID, func(c context.Context) any {
		out := &orderLookedUp{action: m.action}
		open, err := s.OpenOrders(c, venue.OrderQuery{Category: a.Category, Symbol: a.Symbol, OrderLinkID: a.ClientOrderID})
		if err != nil {
			out.err = messages.AsError(err)
			return out
		}
		if o := findOrder(open.Items, a.ClientOrderID); o != nil {
			out.order = o
			return out
		}
		hist, err := s.OrderHistory(c, venue.HistoryQuery{Category: a.Category, Symbol: a.Symbol, OrderLinkID: a.ClientOrderID})
		if err != nil {
			out.err = messages.AsError(err)
			return out
		}
		out.order = findOrder(hist.Items, a.ClientOrderID)
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

// holdsForRecovery reports whether msg waits for the recovery phase to end.
func holdsForRecovery(msg any) bool {
	switch m := msg.(type) {
	case *userCommand:
		switch c := m.cmd.(type) {
		case *messages.ShowPolicyRequest, *messages.ShowCredentialRequest, *messages.ConfirmationStatusCommand, *messages.ListConfirmationsCommand:
			return false
		case *messages.SetKillSwitchRequest:
			return !c.On
		}
		return true
	case *decideAsk, *placeAsk, *cancelAsk, *confirmExecute, *confirmSweep:
		return true
	}
	return false
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
	if m.err != nil {
		u.logger.Warn("could not reconcile an open order attempt; it stays open", "user", u.state.User, "code", string(m.err.Code))
		done()
		return
	}
	a.step = stepJournal
	ev := Event{messages.RecordOrderOutcome, messages.OrderOutcomeEvent{
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
