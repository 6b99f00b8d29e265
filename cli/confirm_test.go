package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// confirmRuntime answers `confirm approve`: the confirmation's status,
// then the decision's answer (or error); it records the deadline the
// decision was sent with.
type confirmRuntime struct {
	fakeRuntime
	status     *messages.ConfirmationStatus
	decided    any
	decideErr  error
	deadline   time.Time
	noDeadline bool
}

func (f *confirmRuntime) DialServer(context.Context, *Globals) (ServerConn, error) {
	return fakeConn{send: f.deliverToServer}, nil
}

func (f *confirmRuntime) deliverToServer(ctx context.Context, cmd messages.Command) (any, error) {
	f.delivered = append(f.delivered, cmd)
	switch cmd.(type) {
	case *messages.ConfirmationStatusCommand:
		return f.status, nil
	case *messages.DecideConfirmationCommand:
		dl, ok := ctx.Deadline()
		f.deadline, f.noDeadline = dl, !ok
		return f.decided, f.decideErr
	}
	return nil, errors.New("unexpected command")
}

const hostileID = "abc\x1b]0;pwned\x07\x1b[2K\rALL CLEAR"

// hostileStatus is a pending cancel-all whose rows carry order ids as a
// hostile exchange could send them.
func hostileStatus() *messages.ConfirmationStatus {
	return &messages.ConfirmationStatus{ConfirmationID: "cf_0123456789abcdef01234567", User: "alice", Status: messages.ConfirmStatusPending,
		Tool: "cancel_all_orders", Channel: messages.ConfirmChannelCLI, ExpiresAt: time.Now().Add(time.Minute),
		ShownToUser: &messages.ShownToUser{Venue: "paper", Summary: "Cancel 2 open orders\u202e", CancelAll: &messages.CancelAllAnswer{
			Orders: []messages.CancelAllRow{{OrderID: hostileID, Origin: "external"}, {OrderID: "a\u009b2Jb", Origin: "system"}}}},
		Error: &messages.Error{Code: messages.CodeExchangeRejected, Message: "rejected\x1b[1A\x1b[2Kall good"}}
}

// checkTerminalSafe fails when out holds a character a terminal acts on
// (anything but printable text, spaces, tabs and line ends).
func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("%s: %U reaches the terminal: %q", what, r, out)
		}
	}
}

// The plan the human reads shows the exchange's order ids and messages
// without any character that could act on the terminal, and still shows
// them (the human can tell the rows apart and see the order is odd).
func TestPrintPlanStripsControlCharacters(t *testing.T) {
	var b bytes.Buffer
	printPlan(&b, hostileStatus())
	out := b.String()
	checkTerminalSafe(t, "plan", out)
	for _, want := range []string{"abc?]0;pwned??[2K?ALL CLEAR", "a?2Jb", "EXTERNAL (not placed by this server)", "rejected?[1A?[2Kall good"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the plan lacks %q:\n%s", want, out)
		}
	}
}

// confirm approve: the plan, the executed answer and the JSON line are
// all safe for the terminal, whatever the exchange put in the ids; the
// JSON keeps its meaning.
func TestConfirmApproveHostileAnswer(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		rt := &confirmRuntime{status: hostileStatus(),
			decided: &messages.OrderAnswer{Status: "accepted\u202e", OrderID: hostileID, ClientOrderID: "gx\x7f1"}}
		args := []string{"confirm", "approve", "cf_0123456789abcdef01234567", "--yes"}
		if asJSON {
			args = append(args, "--json")
		}
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, rt, IO{Out: &out, Err: &errb, In: strings.NewReader("")}, "test")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		checkTerminalSafe(t, "stdout", out.String())
		checkTerminalSafe(t, "stderr", errb.String())
		if !strings.Contains(out.String(), `\u001b]0;pwned`) {
			t.Fatalf("the JSON lost the order id: %s", out.String())
		}
	}
}

// An approval waits as long as the server may take to run the approved
// action, not the control socket's default minute.
func TestConfirmApproveWaitsForExecution(t *testing.T) {
	rt := &confirmRuntime{status: hostileStatus(), decided: &messages.OrderAnswer{Status: "accepted"}}
	start := time.Now()
	if code, _, stderr := runConfirm(t, rt); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if rt.noDeadline || rt.deadline.Sub(start) < messages.DecisionAnswerWait {
		t.Fatalf("the approval waits until %v (deadline set %v), less than %v", rt.deadline.Sub(start), !rt.noDeadline, messages.DecisionAnswerWait)
	}
}

// When an approval's answer does not come, or the server says the
// outcome is unknown, the CLI says the order may have gone out and how
// to check; a clear refusal says nothing of the kind.
func TestConfirmApproveUnknownOutcome(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		unknown bool
	}{
		{"timeout", errors.New("control socket: read unix ->/run/gx.sock: i/o timeout"), true},
		{"internal", messages.Internal(errors.New("ask: future: timeout")), true},
		{"outcome unknown", messages.Errorf(messages.CodeOutcomeUnknown, "the approved action did not answer in time"), true},
		{"not pending", messages.InvalidParams("confirmation_id", "confirmation_not_pending"), false},
		{"no server", Refused("no server is running"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := &confirmRuntime{status: hostileStatus(), decideErr: c.err}
			code, _, stderr := runConfirm(t, rt)
			if code != ExitRefused {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			said := strings.Contains(stderr, "NOT known") && strings.Contains(stderr, "confirm list --all")
			if said != c.unknown {
				t.Fatalf("unknown outcome said %v, want %v: %s", said, c.unknown, stderr)
			}
		})
	}
}

// A refusal's text goes to the terminal without control characters, and
// keeps its own line breaks.
func TestErrorsArePrintable(t *testing.T) {
	rt := &confirmRuntime{status: hostileStatus(), decideErr: messages.Errorf(messages.CodeExchangeRejected, "bad\x1b[2J order\nsecond line")}
	_, _, stderr := runConfirm(t, rt)
	checkTerminalSafe(t, "stderr", stderr)
	if !strings.Contains(stderr, "bad?[2J order\nsecond line") {
		t.Fatalf("stderr %q", stderr)
	}
}

func runConfirm(t *testing.T, rt *confirmRuntime) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"confirm", "approve", "cf_0123456789abcdef01234567", "--yes"}, rt,
		IO{Out: &out, Err: &errb, In: strings.NewReader("")}, "test")
	return code, out.String(), errb.String()
}
