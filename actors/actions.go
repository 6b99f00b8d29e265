package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An action is one piece of a user's work that lives across several
// messages: decide → (journal the attempt) → ask the venue actor → the
// outcome comes back as a typed message → journal the outcome → answer.
// While an action waits on the venue, the user actor keeps serving the same
// user's other messages (kill switch, reads, other commands): in-flight
// work is part of the user's state, in the action table, instead of a
// queue that holds every later message. Only journal writes keep their
// strict order (serial).
//
// Today's actions are key checks (keys add, and the permission re-check
// before a trading decision). The trading path adds order actions: the
// step after decide is then the durable order_attempt record, and the
// reservation holds the order's notional and counts against the limits
// until its order_outcome is journaled.
type action struct {
	id   uint64
	kind actionKind
	step actionStep
	// reserve is what the action holds against the user's limits while it
	// is in flight (zero for key checks).
	reserve risk.Reservation
	// waiter is who waits for the answer (nil: nobody, e.g. a re-check at
	// start whose caller went away).
	waiter  *actor.PID
	origin  messages.Origin
	started time.Time
	// onKey continues the action when its key check comes back.
	onKey func(*keyChecked)
	// attempt is the open order attempt a reconcile action looks up, or
	// the one an order action wrote.
	attempt state.Attempt
	// ticket is the client order id a caller of this write is told while
	// it runs ("": the attempt's own); a leverage step names the order
	// that follows it.
	ticket string
	// claim is the idempotency claim of a trading call in flight; call
	// carries the call between the driver's steps (driver.go); complete
	// turns an order action's outcome into the tool's answer.
	claim *claim
	call  *toolCall
	// after runs once an order action's outcome is durable and answered
	// (cancel_all_orders chains its cancels with it).
	after    func()
	complete func(*orderResult, *orderWritten) any
}

// ticketID is the client order id a repeat of the call is told while
// the action runs: the order's, also during its leverage step.
func (a *action) ticketID() string {
	if a.ticket != "" {
		return a.ticket
	}
	return a.attempt.ClientOrderID
}

// claim is what a trading call in flight holds in the idempotency table.
type claim struct {
	key    string
	hash   string
	dryRun bool
}

// actionKind says what an action does.
type actionKind uint8

const (
	// actionKeyAdd checks a new key with the venue, then journals
	// credential_added or credential_rejected (keys add, keys replace).
	actionKeyAdd actionKind = iota + 1
	// actionKeyRecheck checks the stored key again and journals
	// credential_checked (at start, and before a trading decision when the
	// last check is over an hour old).
	actionKeyRecheck
	// actionReconcile looks an open attempt up on the venue and journals
	// its outcome (the recovery phase at start, recovery.go).
	actionReconcile
	// actionOrder is an order action: a write of the trading path
	// (orderexec.go).
	actionOrder
	// actionDecide is a trading call's decision waiting for the venue's
	// read (driver.go).
	actionDecide
)

func (k actionKind) String() string {
	switch k {
	case actionKeyAdd:
		return "key_add"
	case actionKeyRecheck:
		return "key_recheck"
	}
	return "unknown"
}

// actionStep is where an action is.
type actionStep uint8

const (
	// stepVenue: the venue actor has the request; its outcome comes back
	// as a message.
	stepVenue actionStep = iota + 1
	// stepJournal: the outcome is being journaled; the waiter is answered
	// once it is durable.
	stepJournal
)

// actionIDs numbers actions within the process; unique across restarts of
// a user actor, so a late outcome for an action of an earlier incarnation
// never matches a new one.
var actionIDs atomic.Uint64

// begin puts a new action in the table at its venue step.
func (u *userActor) begin(kind actionKind, waiter *actor.PID, origin messages.Origin, onKey func(*keyChecked)) *action {
	a := &action{
		id: actionIDs.Add(1), kind: kind, step: stepVenue, waiter: waiter,
		origin: origin, started: u.now(), onKey: onKey,
	}
	u.actions[a.id] = a
	return a
}

// finish removes a from the table and answers its waiter.
func (u *userActor) finish(ctx actor.Context, a *action, answer any) {
	delete(u.actions, a.id)
	u.reply(ctx, a.waiter, answer)
}

// reserved is the sum of the reservations of every action in flight.
func (u *userActor) reserved() risk.Reservation {
	var r risk.Reservation
	for _, a := range u.actions {
		r = r.Add(a.reserve)
	}
	return r
}

// onKeyChecked continues the action whose key check came back. An outcome
// for an action that is not in the table (it belonged to an incarnation
// that crashed, whose waiter was answered then) is dropped.
func (u *userActor) onKeyChecked(m *keyChecked) {
	a, ok := u.actions[m.action]
	if !ok || a.onKey == nil {
		u.logger.Warn("venue outcome for an action that is not in flight", "user", u.state.User, "action", m.action)
		return
	}
	a.step = stepJournal
	a.onKey(m)
}

// failInFlight answers everyone who waits on this incarnation (actions in
// flight, messages queued behind a journal write) with internal_error: the
// actor is being restarted and its in-memory table is lost. A key check's
// outcome arriving later is dropped; nothing it would have journaled was.
func (u *userActor) failInFlight(ctx actor.Context) {
	e := messages.Internal(errActorRestarted)
	for _, a := range u.actions {
		u.reply(ctx, a.waiter, e)
	}
	u.actions = nil
	for _, q := range u.queue {
		u.reply(ctx, q.sender, e)
	}
	u.queue = nil
}
