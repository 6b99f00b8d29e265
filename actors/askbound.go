package actors

import (
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// How long a caller waits for an actor's answer (decision D91). Every
// ask waits as long as its action's own steps may take, each bounded where
// it runs, plus askMargin; it ends earlier only when the caller's context
// ends. This file is the one place that adds the steps up: a step whose
// bound changes changes it here.

// askMargin is what an ask waits beyond its action's steps: the hops
// between actors and a turn in the user's queue behind other writes.
const askMargin = 5 * time.Second

// stepBounds are the bounds of the steps an action may take, from the
// system's configuration.
type stepBounds struct {
	// request bounds one venue call, or one read step of several calls
	// under one deadline (the market read of a decision).
	request time.Duration
	// settle bounds the private stream's wait for an unknown outcome.
	settle time.Duration
	// hold bounds a write's wait behind the recovery phase or a key
	// re-check (exchange_unavailable, reason reconciling, after it).
	hold time.Duration
}

// venueWrite bounds one write step in the venue actor (venueActor.write):
// the request, then the read-back, or for an unknown outcome the stream's
// wait and one REST look-up.
func (b stepBounds) venueWrite() time.Duration { return 2*b.request + b.settle }

// trade is the steps of one trading call that sends one write: held
// behind reconciliation, the market or order read its decision needs,
// the write, and its records (the attempt and the outcome). The journal
// counts once: a flush that hangs for journalTimeout marks the journal
// failed, and every later write of the call then fails at once.
func (b stepBounds) trade(writes int) time.Duration {
	return b.hold + b.request + time.Duration(writes)*b.venueWrite() + journalTimeout
}

// cancelAll is cancel_all_orders: up to risk.CancelAllMax cancels one after
// another, paced (D64), with their retries on the venue's rate limit.
func (b stepBounds) cancelAll() time.Duration {
	pacing := time.Duration((risk.CancelAllMax+cancelPaceCount-1)/cancelPaceCount) * cancelPaceWindow
	return b.trade(risk.CancelAllMax) + pacing + cancelRetryBudget + cancelRetries*cancelRetryMaxWait
}

// execution is the bound of an approved action's run (the tool's own
// path, as the agent's call of it would take).
func (b stepBounds) execution(tool string) time.Duration {
	if d := toolOf(tool); d != nil {
		return d.bound(b)
	}
	return b.trade(1)
}

// longestExecution is the bound of the longest approved action's run:
// cancel_all_orders.
func (b stepBounds) longestExecution() time.Duration { return b.cancelAll() }

// askBound is how long an ask waits for the answer to msg when the
// caller's context sets no shorter deadline.
func (b stepBounds) askBound(msg any) time.Duration {
	var steps time.Duration
	switch m := msg.(type) {
	case *userCommand:
		steps = b.commandSteps(m.cmd)
	case *tradingAsk:
		steps = m.tool.bound(b)
	case *accountAsk:
		steps = b.request
	case *decideAsk:
		steps = journalTimeout // order_refused
	case *ensureUserRequest:
		steps = askMargin // spawning, behind other users' starts
	}
	return steps + askMargin
}

// commandSteps is the bound of one command's steps in the user actor.
func (b stepBounds) commandSteps(cmd messages.Command) time.Duration {
	if d, _, _ := toolOfCommand(cmd); d != nil {
		return d.bound(b) // the tool's own steps (its descriptor)
	}
	switch c := cmd.(type) {
	case *messages.DecideConfirmationCommand:
		if c.Decision == messages.DecisionApprove {
			// The approved action runs before the decision answers,
			// within its own bound (then it answers outcome_unknown),
			// and its end is journaled.
			return max(messages.DecisionAnswerWait, b.longestExecution()+askMargin+journalTimeout)
		}
	case *messages.AddCredentialRequest, *messages.RecheckCredentialRequest:
		return b.request + journalTimeout // the key's check on the venue
	}
	return journalTimeout
}

// sendsWrite reports whether msg is a trading command whose action may
// send a write (or park one for a human), or an approval (whose approved
// action may then run): its ask carries a send ticket.
func sendsWrite(msg any) bool {
	if approvalOf(msg) != "" {
		return true
	}
	switch m := msg.(type) {
	case *tradingAsk:
		return true
	case *userCommand:
		d, _, _ := toolOfCommand(m.cmd)
		return d != nil
	}
	return false
}

// sendTickets tie a trading call's ask to its action, by the ask's reply
// PID (the action's waiter). Exactly one of two things happens first: the
// action commits (its order_attempt is about to be journaled, it is
// about to be parked for a human, or an approval is about to be taken),
// or the caller stops waiting. A caller that stopped first is answered
// "nothing was sent" and the action, when it reaches that point, stops
// without sending. A caller that stops after the commit waits for the
// committed step to be decided (settle): made durable, it is answered
// outcome_unknown with the client order id; refused (the record failed),
// "nothing was sent". A trading call of the agent or a human whose
// ticket is gone (its caller gave up long ago) is never sent: tickets
// fail closed. Safe for concurrent use.
type sendTickets struct {
	mu sync.Mutex
	m  map[string]*sendTicket
}

// sendTicket is one trading call's ticket.
type sendTicket struct {
	committed, abandoned bool
	// clientOrderID names the first write the action sent ("" when it
	// was parked for a human instead).
	clientOrderID string
	// keepUntil is how long an abandoned ticket is kept for its action
	// to find: the action's own bound from the abandonment.
	keepUntil time.Time
	// decided is closed by settle once the committed step is decided;
	// refused says it was refused and nothing was sent.
	decided chan struct{}
	refused bool
}

func newSendTickets() *sendTickets { return &sendTickets{m: map[string]*sendTicket{}} }

// open gives the ask replying to pid a ticket, and drops the abandoned
// tickets whose actions are past their bound.
func (t *sendTickets) open(pid *actor.PID) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, k := range t.m {
		if k.abandoned && now.After(k.keepUntil) {
			delete(t.m, id)
		}
	}
	t.m[pid.Id] = &sendTicket{}
}

// done drops the ticket of pid once its ask returned, unless it was
// abandoned: then the action has yet to see it, perhaps more than once
// (open drops it once it is past keepUntil).
func (t *sendTickets) done(pid *actor.PID) {
	t.mu.Lock()
	if k, ok := t.m[pid.Id]; ok && !k.abandoned {
		delete(t.m, pid.Id)
	}
	t.mu.Unlock()
}

// commit is asked by the user actor before its action journals a write
// (clientOrderID), parks it for a human or takes an approval (""); it
// then settles the ticket once that record is durable or refused. false
// means the caller has stopped waiting and was told nothing would be
// sent, so the action must stop. A waiter without a ticket goes on only
// for the server's own work and an approved confirmation's run: the
// agent's or a human's call without one (dropped after its caller gave
// up) stops.
func (t *sendTickets) commit(waiter *actor.PID, origin messages.Origin, clientOrderID string) bool {
	if t == nil || waiter == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.m[waiter.Id]
	if !ok {
		return !callersOrigin(origin)
	}
	if k.abandoned {
		return false
	}
	if !k.committed {
		k.committed, k.clientOrderID, k.decided = true, clientOrderID, make(chan struct{})
	}
	return true
}

// callersOrigin reports whether origin is a call of the agent or a
// human, which always comes with a ticket (System.ask), rather than the
// server's own work or an approved confirmation's run.
func callersOrigin(o messages.Origin) bool {
	if o.ConfirmationID != "" {
		return false
	}
	switch o.Role {
	case messages.RoleAgent, messages.RoleUser, messages.RoleApprover, messages.RoleAdmin:
		return true
	}
	return false
}

// settle says the committed step of waiter's action is decided: durable
// (sent: the write may leave, the action is parked, the approval taken)
// or refused (nothing was sent). A caller that stopped waiting after the
// commit is answered by it.
func (t *sendTickets) settle(waiter *actor.PID, sent bool) {
	if t == nil || waiter == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.m[waiter.Id]
	if !ok || !k.committed {
		return
	}
	select {
	case <-k.decided:
	default:
		k.refused = !sent
		close(k.decided)
	}
}

// abandon is asked by the caller whose wait ended before the answer. It
// reports whether the action got past its commit (and the client order
// id it committed): when the action has committed, it first waits (at
// most the journal's bound) for the committed step to be decided, and a
// refused one did not get past it. When it has not committed, the ticket
// is abandoned and enforces that nothing is sent.
func (t *sendTickets) abandon(pid *actor.PID, keep time.Duration) (committed bool, clientOrderID string) {
	t.mu.Lock()
	k, ok := t.m[pid.Id]
	if !ok {
		t.mu.Unlock()
		return false, ""
	}
	if !k.committed {
		k.abandoned, k.keepUntil = true, time.Now().Add(keep)
		t.mu.Unlock()
		return false, ""
	}
	decided, id := k.decided, k.clientOrderID
	t.mu.Unlock()
	select {
	case <-decided:
	case <-time.After(journalTimeout + askMargin):
		return true, id // undecided: it may still go out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return !k.refused, id
}

// waitEnded is the answer of an ask whose caller stopped waiting before
// the answer (ticket: the ask carried a send ticket): outcome_unknown once
// its action committed, else a refusal that promises (and the ticket
// enforces) that nothing is sent; an approval's, once taken, names the
// confirmation.
func (s *System) waitEnded(msg any, pid *actor.PID, cause error) *messages.Error {
	committed, clientOrderID := s.tickets.abandon(pid, s.bounds.askBound(msg))
	approval := approvalOf(msg)
	switch {
	case committed && approval != "":
		return approvalWaitEnded(approval, cause)
	case committed:
		return waitEndedUnknown(clientOrderID)
	case approval != "":
		return &messages.Error{Code: messages.CodeInternalError,
			Message:  "the call ended before the approval was taken; nothing was decided and nothing will be",
			NextStep: "check the confirmation with `guarded-exchange confirm list` and approve it again if it is still wanted",
			Details:  map[string]any{"reason": "cancelled"}, Err: cause}
	}
	return &messages.Error{Code: messages.CodeInternalError,
		Message:  "the call ended before its action was sent; nothing was sent and nothing will be",
		NextStep: "check get_open_orders before calling it again",
		Details:  map[string]any{"reason": "cancelled"}, Err: cause}
}

// waitEndedUnknown is the answer of a trading call whose caller stopped
// waiting after its write may have left: the outcome is settled by the
// server (stream, then REST), never by sending it again.
func waitEndedUnknown(clientOrderID string) *messages.Error {
	if clientOrderID == "" {
		return &messages.Error{Code: messages.CodeOutcomeUnknown,
			Message:  "the call ended before its answer; the action may be waiting for a human's confirmation",
			NextStep: "do not call it again; a human may be asked to confirm it (`guarded-exchange confirm list`)",
			Details:  map[string]any{"reason": "wait_ended"}, Err: errWaitEnded}
	}
	return &messages.Error{Code: messages.CodeOutcomeUnknown,
		Message:  "the call ended before its answer; the order may have reached the exchange and is being reconciled, never resent",
		NextStep: "do not send it again; check get_open_orders and get_order_history for client_order_id in a little while",
		Details:  map[string]any{"reason": "wait_ended", "client_order_id": clientOrderID}, Err: errWaitEnded}
}

// errWaitEnded is the cause of a waitEndedUnknown answer.
var errWaitEnded = errors.New("the caller's wait ended after the action committed")

// callerGone is the user actor's answer to an action whose caller stopped
// waiting before it committed (nobody reads it: the caller was answered
// by its ticket).
func callerGone() *messages.Error {
	return &messages.Error{Code: messages.CodeInternalError, Message: "the caller stopped waiting before the action was sent; nothing was sent",
		Details: map[string]any{"reason": "cancelled"}}
}

// approvalOf is the confirmation id of an approval's ask ("" for any
// other message).
func approvalOf(msg any) string {
	if uc, ok := msg.(*userCommand); ok {
		if d, ok := uc.cmd.(*messages.DecideConfirmationCommand); ok && d.Decision == messages.DecisionApprove {
			return d.ConfirmationID
		}
	}
	return ""
}

// approvalWaitEnded is the answer of an approval whose caller stopped
// waiting: once the user actor took the approval, the approved action
// runs whatever the caller does, and its outcome is the confirmation's.
func approvalWaitEnded(confirmationID string, cause error) *messages.Error {
	return &messages.Error{Code: messages.CodeOutcomeUnknown,
		Message:  "the approval's answer was not awaited; the approved action may be running and is never resent",
		NextStep: "check get_confirmation_status (or `guarded-exchange confirm list --all`) for what it did; do not call the tool again",
		Details:  map[string]any{"reason": "wait_ended", "confirmation_id": confirmationID}, Err: cause}
}
