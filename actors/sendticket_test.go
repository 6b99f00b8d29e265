package actors

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

var agentCall = messages.Origin{Role: messages.RoleAgent}

// A caller whose wait ends after its action committed, but before the
// committed step is durable, is answered by what that step became: a
// refused record (a failed order_attempt, a refused park) sent nothing,
// so the answer is "nothing was sent", not outcome_unknown.
func TestSendTicketAnswersWhatTheCommittedStepBecame(t *testing.T) {
	for _, sent := range []bool{false, true} {
		tk := newSendTickets()
		pid := actor.NewPID("nonhost", "ask-1")
		tk.open(pid)
		if !tk.commit(pid, agentCall, "gx-1") {
			t.Fatal("commit refused on an open ticket")
		}
		type result struct {
			committed bool
			id        string
		}
		got := make(chan result, 1)
		go func() {
			c, id := tk.abandon(pid, time.Minute)
			got <- result{c, id}
		}()
		select {
		case r := <-got:
			t.Fatalf("abandon answered %v before the committed step was decided", r)
		case <-time.After(50 * time.Millisecond):
		}
		tk.settle(pid, sent)
		r := <-got
		if r.committed != sent || r.id != "gx-1" {
			t.Fatalf("settled sent=%v: abandon says committed=%v id=%q", sent, r.committed, r.id)
		}
	}
}

// Tickets fail closed: the agent's or a human's trading call whose ticket
// is gone (dropped after its caller gave up) is not sent; the server's own
// work and an approved confirmation's run carry none and go on.
func TestSendTicketFailsClosedForACallerWithoutOne(t *testing.T) {
	tk := newSendTickets()
	pid := actor.NewPID("nonhost", "ask-gone")
	for _, o := range []messages.Origin{agentCall, {Role: messages.RoleUser}, {Role: messages.RoleAdmin}} {
		if tk.commit(pid, o, "gx-1") {
			t.Errorf("%s: a call without a ticket was let through", o.Actor())
		}
	}
	for _, o := range []messages.Origin{{ConfirmationID: "cf_0123456789abcdef01234567", Role: messages.RoleUser}, {Role: messages.RoleDeadman}, {}} {
		if !tk.commit(pid, o, "gx-1") {
			t.Errorf("%s: the server's own work was stopped", o.Actor())
		}
	}
}

// An approval whose caller stopped waiting before the user actor took it
// (still queued: refuseCancelled drops it) is answered "nothing was
// decided", never outcome_unknown; once taken, outcome_unknown with the
// confirmation id.
func TestApprovalWaitEndedSaysWhetherItWasTaken(t *testing.T) {
	s := &System{tickets: newSendTickets(), bounds: stepBounds{request: 10 * time.Second, settle: DefaultSettleWait, hold: DefaultRecoveryWait}}
	approve := &userCommand{cmd: &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "cf_0123456789abcdef01234567",
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}, origin: messages.Origin{Role: messages.RoleUser}}
	if !sendsWrite(approve) {
		t.Fatal("an approval's ask carries no ticket")
	}
	cause := errors.New("caller gone")
	queued := actor.NewPID("nonhost", "ask-queued")
	s.tickets.open(queued)
	if e := s.waitEnded(approve, queued, cause); e.Code != messages.CodeInternalError || e.Details["reason"] != "cancelled" {
		t.Fatalf("an approval given up while queued: %v", e)
	}
	if s.tickets.commit(queued, approve.origin, "") {
		t.Fatal("the given-up approval was taken afterwards")
	}
	taken := actor.NewPID("nonhost", "ask-taken")
	s.tickets.open(taken)
	s.tickets.commit(taken, approve.origin, "")
	s.tickets.settle(taken, true)
	if e := s.waitEnded(approve, taken, cause); e.Code != messages.CodeOutcomeUnknown || e.Details["confirmation_id"] != "cf_0123456789abcdef01234567" {
		t.Fatalf("an approval given up once taken: %v", e)
	}
}
