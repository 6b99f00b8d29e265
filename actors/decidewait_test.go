package actors

import (
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An approval's answer comes after the approved action ran: the ask that
// carries it waits longer than the execution bound, so a slow execution
// answers its outcome instead of a timeout while the order goes out.
// Other commands wait for their own steps (D91): a command that only
// journals for the journal's bound, a trading call for its read, its
// write and its records, each with the margin.
func TestAskBoundCoversExecution(t *testing.T) {
	b := stepBounds{request: 10 * time.Second, settle: DefaultSettleWait, hold: DefaultRecoveryWait}
	approve := &userCommand{cmd: &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "cf_0123456789abcdef01234567",
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}}
	run := b.execution(risk.ToolCancelAll) + askMargin // the run's own wait (onConfirmExecute)
	if got := b.askBound(approve); got <= run || got < messages.DecisionAnswerWait {
		t.Fatalf("an approval waits %v; the execution may take %v", got, run)
	}
	// The CLI waits DecisionAnswerWait: it covers the longest run with
	// the server's default bounds and the record of its end.
	if messages.DecisionAnswerWait < run+journalTimeout {
		t.Fatalf("DecisionAnswerWait %v does not cover a cancel_all_orders run %v", messages.DecisionAnswerWait, run)
	}
	reject := &userCommand{cmd: &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "cf_0123456789abcdef01234567",
		Decision: messages.DecisionReject, Channel: messages.ConfirmChannelCLI}}
	for _, m := range []any{reject, &userCommand{cmd: &messages.ListConfirmationsCommand{User: "alice"}}} {
		if got := b.askBound(m); got != journalTimeout+askMargin {
			t.Fatalf("%T waits %v, want the journal's bound plus the margin", m, got)
		}
	}
	// place_order may lower the symbol's leverage before the order: two
	// writes (D111); any other trading call sends one.
	place := &userCommand{cmd: &messages.PlaceOrderCommand{}}
	want := b.hold + b.request + 2*(2*b.request+b.settle) + journalTimeout + askMargin
	if got := b.askBound(place); got != want {
		t.Fatalf("place_order waits %v, want %v", got, want)
	}
	cancel := &userCommand{cmd: &messages.CancelOrderCommand{}}
	want = b.hold + b.request + (2*b.request + b.settle) + journalTimeout + askMargin
	if got := b.askBound(cancel); got != want {
		t.Fatalf("cancel_order waits %v, want %v", got, want)
	}
	if got := b.askBound(approve); got < run+journalTimeout+askMargin {
		t.Fatalf("an approval waits %v, less than its run and the record of its end", got)
	}
}
