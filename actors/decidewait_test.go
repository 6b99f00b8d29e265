package actors

import (
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An approval's answer comes after the approved action ran: the ask that
// carries it waits longer than the execution bound, so a slow execution
// answers its outcome instead of a timeout while the order goes out.
// Other commands keep the request timeout.
func TestAskBoundCoversExecution(t *testing.T) {
	approve := &userCommand{cmd: &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "cf_0123456789abcdef01234567",
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}}
	if got := askBound(10*time.Second, approve); got <= executeTimeout || got < messages.DecisionAnswerWait {
		t.Fatalf("an approval waits %v; the execution may take %v", got, executeTimeout)
	}
	if messages.DecisionAnswerWait <= executeTimeout {
		t.Fatalf("DecisionAnswerWait %v does not cover executeTimeout %v", messages.DecisionAnswerWait, executeTimeout)
	}
	reject := &userCommand{cmd: &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "cf_0123456789abcdef01234567",
		Decision: messages.DecisionReject, Channel: messages.ConfirmChannelCLI}}
	for _, m := range []any{reject, &userCommand{cmd: &messages.ListConfirmationsCommand{User: "alice"}}, &ensureUserRequest{user: "alice"}} {
		if got := askBound(10*time.Second, m); got != 15*time.Second {
			t.Fatalf("%T waits %v, want the request timeout plus its margin", m, got)
		}
	}
	if got := askBound(5*time.Minute, approve); got != 5*time.Minute+5*time.Second {
		t.Fatalf("a longer request timeout is shortened: %v", got)
	}
}
