package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// delayFault makes the simulator hold its next answer on path for ms
// milliseconds (after applying the request).
func (te *tradeEnv) delayFault(t testing.TB, path string, ms int) {
	t.Helper()
	te.simPost(t, "/sim/faults", fmt.Sprintf(`{"kind":"delay","path":%q,"count":1,"delay_ms":%d}`, path, ms))
}

// faultSeen is how many requests on path the simulator's faults saw.
func (te *tradeEnv) faultSeen(t testing.TB, path string) (seen, fired int) {
	t.Helper()
	var all []struct {
		Path  string `json:"path"`
		Seen  int    `json:"seen"`
		Fired int    `json:"fired"`
	}
	te.simGet(t, "/sim/faults", &all)
	for _, f := range all {
		if f.Path == path {
			seen, fired = seen+f.Seen, fired+f.Fired
		}
	}
	return seen, fired
}

// cancelWhenSeen cancels once the simulator has seen a request on path
// (the call is then at that step).
func (te *tradeEnv) cancelWhenSeen(t testing.TB, path string, cancel context.CancelFunc) {
	go func() {
		defer cancel()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if seen, _ := te.faultSeen(t, path); seen > 0 {
				return
			}
		}
	}()
}

// attemptsJournaled lists the client order ids of the order_attempt
// records in dir's journal.
func attemptsJournaled(t testing.TB, dir string) []string {
	var ids []string
	for _, g := range journalOf(t, dir) {
		if id, ok := strings.CutPrefix(g, "order_attempt:"); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// givenUpAt sends cmd as the agent while the venue holds its answer on
// path for ms milliseconds, and gives the call up once the venue has seen
// that request; it returns the call's answer, an error.
func (te *tradeEnv) givenUpAt(t testing.TB, path string, ms int, cmd messages.Command) *messages.Error {
	t.Helper()
	te.delayFault(t, path, ms)
	ctx, cancel := context.WithCancel(context.Background())
	te.cancelWhenSeen(t, path, cancel)
	res, err := te.Handle(ctx, cmd, messages.ActorAgent)
	if err == nil {
		t.Fatalf("a call given up answered %#v", res)
	}
	return messages.AsError(err)
}

// placeGivenUpAt places a while the venue holds its answer on path for
// ms milliseconds, and gives the call up once the venue has seen that
// request; it returns the call's answer, an error.
func (te *tradeEnv) placeGivenUpAt(t testing.TB, path string, ms int, a messages.PlaceOrderArgs) *messages.Error {
	t.Helper()
	return te.givenUpAt(t, path, ms, &messages.PlaceOrderCommand{User: te.user, Args: a})
}

// onlyALaterCallSends checks, once the delayed read of a call given up
// has come back (the 1.2 s delay is inside the request timeout), that
// the call sent nothing: a later call on the same actor is the only
// attempt in the journal.
func (te *tradeEnv) onlyALaterCallSends(t *testing.T, dir string) {
	t.Helper()
	time.Sleep(1500 * time.Millisecond)
	if _, e := te.place(t, limitArgs("0.010", "30001")); e != nil {
		t.Fatalf("a later call: %+v", e)
	}
	if ids := attemptsJournaled(t, dir); len(ids) != 1 {
		t.Fatalf("attempts journaled: %v, want only the later call's", ids)
	}
}

// submitPlace sends place_order as the MCP layer does (System.Submit).
func (te *tradeEnv) submitPlace(ctx context.Context, a messages.PlaceOrderArgs) (any, *messages.Error) {
	res, err := te.Handle(ctx, &messages.PlaceOrderCommand{User: te.user, Args: a}, messages.ActorAgent)
	if err != nil {
		return nil, messages.AsError(err)
	}
	return res, nil
}

// The measured case of a slow venue (B2): the market read, the create and
// the read-back are each slow but inside their own bound, together longer
// than the request timeout plus a margin. The call answers what the venue
// did, not internal_error while the order goes out.
func TestSlowVenueInsideItsBoundsAnswers(t *testing.T) {
	dir := t.TempDir()
	// The create's order is read back by REST (D161), so that the
	// read-back is one of the slow steps.
	te := newTradeEnvWith(t, dir, func(c *Config) { c.RequestTimeout = 4 * time.Second })
	te.tradeReady(t, messages.PolicySettings{})
	for _, p := range []string{venue.PathTickers, venue.PathOrderCreate, venue.PathOrderRealtime} {
		te.delayFault(t, p, 3600)
	}
	res, e := te.submitPlace(context.Background(), limitArgs("0.010", "30000"))
	if e != nil {
		t.Fatalf("a slow venue inside its bounds: %s %s (%v)", e.Code, e.Message, e.Err)
	}
	ans, ok := res.(*messages.OrderAnswer)
	if !ok || ans.Status != messages.AnswerAccepted || ans.OrderID == "" {
		t.Fatalf("answer %#v", res)
	}
	for _, p := range []string{venue.PathTickers, venue.PathOrderCreate, venue.PathOrderRealtime} {
		if _, fired := te.faultSeen(t, p); fired != 1 {
			t.Fatalf("the delay on %s fired %d times", p, fired)
		}
	}
	if n := te.simOrders(t, ans.ClientOrderID); n != 1 {
		t.Fatalf("%d orders on the venue", n)
	}
}

// A caller that stops waiting after the create left (here: the venue
// holds the create's answer past every bound) is answered
// outcome_unknown with the client order id and the next step, never
// internal_error; nothing is sent twice afterwards: not by a repeat with
// the same idempotency key, not by the settlement.
func TestWaitEndedAfterSendIsOutcomeUnknown(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	a := limitArgs("0.010", "30000")
	a.IdempotencyKey = "slow-create-1"
	e := te.placeGivenUpAt(t, venue.PathOrderCreate, 15000, a)
	if e == nil || e.Code != messages.CodeOutcomeUnknown {
		t.Fatalf("answer %+v, want outcome_unknown", e)
	}
	id, _ := e.Details["client_order_id"].(string)
	if !strings.HasPrefix(id, "gx-") || e.NextStep == "" || e.RetryAfterS != 0 || !strings.Contains(e.NextStep, "do not send it again") {
		t.Fatalf("outcome_unknown without the client order id or the next step: %+v", e)
	}
	// A repeat while the first still runs, or after it settled, sends
	// nothing.
	if _, again := te.submitPlace(context.Background(), a); again == nil || again.Code != messages.CodeOutcomeUnknown {
		t.Fatalf("repeat while in flight: %+v", again)
	}
	waitJournal(t, dir, "order_outcome:"+id+":found:reconnaissance")
	res, again := te.submitPlace(context.Background(), a)
	ans, ok := res.(*messages.OrderAnswer)
	if again != nil || !ok || ans.ClientOrderID != id || ans.ResultSource != messages.ResultSourceReplay {
		t.Fatalf("repeat after the settlement: %#v %+v", res, again)
	}
	if n := te.simOrders(t, id); n != 1 {
		t.Fatalf("%d orders on the venue for %s", n, id)
	}
	if ids := attemptsJournaled(t, dir); len(ids) != 1 {
		t.Fatalf("attempts journaled: %v", ids)
	}
}

// A caller that stops waiting before anything was sent (the market read
// is slow) is told nothing was sent, and the action keeps that promise:
// when the read comes back, no attempt is journaled and nothing reaches
// the venue.
func TestWaitEndedBeforeSendSendsNothing(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	e := te.placeGivenUpAt(t, venue.PathTickers, 1200, limitArgs("0.010", "30000"))
	if e == nil || e.Code != messages.CodeInternalError || e.Details["reason"] != "cancelled" || !strings.Contains(e.Message, "nothing was sent") {
		t.Fatalf("answer %+v", e)
	}
	te.onlyALaterCallSends(t, dir)
}

// An approval whose caller stops waiting while the approved order is on
// its way (the venue holds the create's answer) is answered
// outcome_unknown with the confirmation id, never internal_error; the
// order goes out once.
func TestApprovalWaitEndedIsOutcomeUnknown(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.010", "30000"))
	ce.delayFault(t, venue.PathOrderCreate, 15000)
	ctx, cancel := context.WithCancel(context.Background())
	ce.cancelWhenSeen(t, venue.PathOrderCreate, cancel)
	_, err := ce.Submit(ctx, &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}, cliOrigin)
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["confirmation_id"] != p.ConfirmationID || e.NextStep == "" {
		t.Fatalf("answer %+v", e)
	}
	deadline := time.Now().Add(20 * time.Second)
	for ce.status(t, p.ConfirmationID).Status != messages.ConfirmStatusExecuted {
		if time.Now().After(deadline) {
			t.Fatalf("confirmation %+v", ce.status(t, p.ConfirmationID))
		}
		time.Sleep(20 * time.Millisecond)
	}
	ids := attemptsJournaled(t, ce.dir)
	if len(ids) != 1 || ce.simOrders(t, ids[0]) != 1 {
		t.Fatalf("attempts journaled %v, or not one order for it", ids)
	}
}

// cancel_all_orders given up while it reads the open orders sends no
// cancel: its parent attempt is where it commits.
func TestCancelAllGivenUpBeforeSendSendsNothing(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	e := te.givenUpAt(t, venue.PathOrderRealtime, 1200, &messages.CancelAllCommand{User: te.user,
		Args: messages.CancelAllArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"}})
	if e.Code != messages.CodeInternalError || e.Details["reason"] != "cancelled" {
		t.Fatalf("answer %+v", e)
	}
	te.onlyALaterCallSends(t, dir)
}
