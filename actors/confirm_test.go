package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// confirmEnv is a trade user on the simulator whose server runs with the
// CLI channel on and a clock a test can move forward.
type confirmEnv struct {
	*tradeEnv
	dir    string
	offset *atomic.Int64
}

func newConfirmEnv(t *testing.T, cli bool, confirm ...string) *confirmEnv {
	t.Helper()
	dir := t.TempDir()
	offset := &atomic.Int64{}
	te := newTradeEnvWith(t, dir, func(c *Config) {
		c.ConfirmCLI = cli
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	te.tradeReady(t, messages.PolicySettings{ConfirmActions: strs(confirm...), ConfirmationTTLS: intp(60), MaxPending: intp(3)})
	return &confirmEnv{tradeEnv: te, dir: dir, offset: offset}
}

// cliOrigin is a human at the server's uid on the control socket.
var cliOrigin = messages.Origin{Role: messages.RoleUser, Channel: messages.ChannelSocket, PeerUID: 1000, PeerPID: 42}

// call sends a trading command as the agent and returns the raw answer.
func (ce *confirmEnv) call(t *testing.T, cmd messages.Command) (any, *messages.Error) {
	t.Helper()
	res, err := ce.Submit(context.Background(), cmd, agentOrigin)
	if err != nil {
		return nil, messages.AsError(err)
	}
	return res, nil
}

// park places a and expects it parked.
func (ce *confirmEnv) park(t *testing.T, a messages.PlaceOrderArgs) *messages.ConfirmationPending {
	t.Helper()
	res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: a})
	if e != nil {
		t.Fatalf("park: %v", e)
	}
	p, ok := res.(*messages.ConfirmationPending)
	if !ok {
		t.Fatalf("answer %T, want a pending confirmation", res)
	}
	return p
}

func (ce *confirmEnv) decide(id, decision string, origin messages.Origin) (any, *messages.Error) {
	res, err := ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: id, Decision: decision,
		Channel: messages.ConfirmChannelCLI}, origin)
	if err != nil {
		return nil, messages.AsError(err)
	}
	return res, nil
}

func (ce *confirmEnv) status(t *testing.T, id string) *messages.ConfirmationStatus {
	t.Helper()
	res, err := ce.Submit(context.Background(), &messages.ConfirmationStatusCommand{User: ce.user, ConfirmationID: id}, agentOrigin)
	if err != nil {
		t.Fatal(err)
	}
	return res.(*messages.ConfirmationStatus)
}

// simCount counts the simulator's orders whose client order id starts
// with prefix.
func (ce *confirmEnv) simCount(t *testing.T, prefix string) int {
	t.Helper()
	n := 0
	for _, id := range ce.simLinkIDs(t) {
		if strings.HasPrefix(id, prefix) {
			n++
		}
	}
	return n
}

func cfMarketArgs(qty, key string) messages.PlaceOrderArgs {
	return messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market",
		Qty: decimal.RequireFromString(qty), IdempotencyKey: key}
}

// recordsOf decodes the journal's records of one type.
func recordsOf[T any](t *testing.T, dir string, typ messages.RecordType) ([]T, []string) {
	t.Helper()
	var out []T
	var actors []string
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) != typ {
			continue
		}
		var v T
		if err := json.Unmarshal(r.Payload, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
		actors = append(actors, r.Actor)
	}
	return out, actors
}

// A market order that needs confirmation is parked with the server's own
// plan (qty rounded, the worst price), nothing is sent; the same key gets
// the same confirmation, other arguments under it a conflict; approved on
// the CLI it runs as a message of its own under system:executor, at the
// worst price shown, with the client order id derived from the
// confirmation id; exactly one order reaches the venue; a second approval
// finds it no longer pending; a restart rebuilds it as executed.
func TestConfirmParkApproveExecute(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, cfMarketArgs("0.0105", "k-1"))
	if !messages.ConfirmationIDRE.MatchString(p.ConfirmationID) || p.Channel != messages.ConfirmChannelCLI || p.ShownToUser == nil || p.ShownToUser.Order == nil {
		t.Fatalf("pending %+v", p)
	}
	shown := p.ShownToUser.Order
	if shown.Qty.String() != "0.01" || shown.OrderType != "Market" || !shown.Price.IsPositive() || !strings.Contains(p.ShownToUser.Summary, "worst price "+shown.Price.String()) {
		t.Fatalf("shown %+v / %q", shown, p.ShownToUser.Summary)
	}
	if ttl := time.Until(p.ExpiresAt); ttl < 50*time.Second || ttl > 61*time.Second {
		t.Fatalf("expires in %v, want confirmation_ttl_s 60", ttl)
	}
	if countRecords(t, ce.dir, messages.RecordOrderAttempt) != 0 || countRecords(t, ce.dir, messages.RecordConfirmationRequested) != 1 {
		t.Fatal("parking sent something, or was not journaled")
	}
	// The same key: the same confirmation; the same key with other
	// arguments: a conflict.
	if again := ce.park(t, cfMarketArgs("0.0105", "k-1")); again.ConfirmationID != p.ConfirmationID {
		t.Fatalf("a repeat parked a second confirmation %s", again.ConfirmationID)
	}
	if _, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: cfMarketArgs("0.02", "k-1")}); e == nil || e.Code != messages.CodeIdempotencyConflict {
		t.Fatalf("other args under the key: %v", e)
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusPending {
		t.Fatalf("status %+v", st)
	}
	// The approved order keeps the worst price shown (never worse).
	res, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	if e != nil {
		t.Fatal(e)
	}
	ans, ok := res.(*messages.OrderAnswer)
	if !ok {
		t.Fatalf("approval answer %T", res)
	}
	wantID := confirmClientOrderID(p.ConfirmationID, 1)
	if ans.ClientOrderID != wantID || ans.Price.GreaterThan(shown.Price) || !ans.Qty.Equal(shown.Qty) || ans.Status != messages.AnswerAccepted {
		t.Fatalf("executed %+v, want %s at %s", ans, wantID, shown.Price)
	}
	if n := ce.simOrders(t, wantID); n != 1 {
		t.Fatalf("%d orders on the venue", n)
	}
	if _, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil || e.Details["status"] != messages.ConfirmStatusExecuted {
		t.Fatalf("second approval: %v", e)
	}
	dec, _ := recordsOf[messages.ConfirmationDecidedEvent](t, ce.dir, messages.RecordConfirmationDecided)
	if len(dec) != 1 || dec[0].Channel != messages.ConfirmChannelCLI || dec[0].ApproverUID == nil || *dec[0].ApproverUID != 1000 {
		t.Fatalf("decided records %+v", dec)
	}
	exe, actors := recordsOf[messages.ConfirmationExecutedEvent](t, ce.dir, messages.RecordConfirmationExecuted)
	if len(exe) != 2 || exe[0].Status != messages.ConfirmStatusExecuting || exe[0].ClientOrderID != wantID || exe[1].Status != messages.ConfirmStatusExecuted ||
		actors[0] != messages.ActorExecutor {
		t.Fatalf("executed records %+v %v", exe, actors)
	}
	atts, actors := recordsOf[messages.OrderAttemptEvent](t, ce.dir, messages.RecordOrderAttempt)
	if len(atts) != 1 || !atts[0].Confirmed || actors[0] != messages.ActorExecutor {
		t.Fatalf("attempts %+v %v", atts, actors)
	}
	// After the run, the key answers the executed order.
	if res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: cfMarketArgs("0.0105", "k-1")}); e != nil || res.(*messages.OrderAnswer).ClientOrderID != wantID {
		t.Fatalf("repeat after execution: %v %v", res, e)
	}
	ce.stop()
	ce.testSystem = ce.start(t, ce.dir)
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusExecuted || st.DecidedChannel != messages.ConfirmChannelCLI || len(st.Result) == 0 {
		t.Fatalf("rebuilt %+v", st)
	}
}

// Without a channel the action is refused and journaled, nothing parked;
// more than max_pending waiting is pending_limit_reached; the agent may
// withdraw its own confirmation.
func TestConfirmChannelAndPendingLimit(t *testing.T) {
	ce := newConfirmEnv(t, false, "place_order")
	if _, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: limitArgs("0.01", "30000")}); e == nil || e.Code != messages.CodeConfirmationChannelUnavailable {
		t.Fatalf("no channel: %v", e)
	}
	if countRecords(t, ce.dir, messages.RecordConfirmationRequested) != 0 || countRecords(t, ce.dir, messages.RecordOrderRefused) != 1 {
		t.Fatal("refusal not journaled, or parked")
	}

	ce = newConfirmEnv(t, true, "place_order")
	var ids []string
	for _, p := range []string{"30000", "30000.1", "30000.2"} {
		ids = append(ids, ce.park(t, limitArgs("0.01", p)).ConfirmationID)
	}
	if _, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: limitArgs("0.01", "30000.3")}); e == nil || e.Code != messages.CodePendingLimitReached {
		t.Fatalf("over max_pending: %v", e)
	}
	res, err := ce.Submit(context.Background(), &messages.CancelConfirmationCommand{User: ce.user, ConfirmationID: ids[0]}, agentOrigin)
	if err != nil || res.(*messages.ConfirmationStatus).Status != messages.ConfirmStatusCancelled {
		t.Fatalf("cancel: %v %v", res, err)
	}
	if _, e := ce.decide(ids[0], messages.DecisionApprove, cliOrigin); e == nil || e.Details["status"] != messages.ConfirmStatusCancelled {
		t.Fatalf("approve a cancelled one: %v", e)
	}
	ce.park(t, limitArgs("0.01", "30000.3")) // room again
	if countRecords(t, ce.dir, messages.RecordOrderAttempt) != 0 {
		t.Fatal("something was sent")
	}
}

// The agent cannot decide: not on the CLI channel, not on the client's
// channel for a confirmation parked for the CLI, not with a forged
// digest; another user's confirmation is not found; nothing is sent.
func TestConfirmHostileAgentCannotDecide(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	for _, ch := range []string{messages.ConfirmChannelCLI, messages.ConfirmChannelClientUI} {
		_, err := ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID,
			Decision: messages.DecisionApprove, Channel: ch, ArgsSHA256: p.ArgsSHA256}, agentOrigin)
		if messages.CodeOf(err) != messages.CodePermissionDenied {
			t.Fatalf("agent approves on %s: %v", ch, err)
		}
	}
	// A human on the CLI may not use the client's channel either.
	if _, err := ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: ce.user, ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelClientUI}, cliOrigin); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("cli on the client channel: %v", err)
	}
	ce.must(t, &messages.CreateUserRequest{User: "other"}, messages.ActorCLIAdmin)
	if _, err := ce.Submit(context.Background(), &messages.DecideConfirmationCommand{User: "other", ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}, cliOrigin); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("another user's confirmation: %v", err)
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusPending {
		t.Fatalf("status %s", st.Status)
	}
	if countRecords(t, ce.dir, messages.RecordConfirmationDecided) != 0 || countRecords(t, ce.dir, messages.RecordOrderAttempt) != 0 {
		t.Fatal("a hostile decision was journaled or sent")
	}
}

// An approval after the TTL executes nothing (expired); an approval after
// the kill switch went on, for a risk-increasing action, is refused at
// execution (kill_switch_active) and nothing is sent.
func TestConfirmExpiryAndKillSwitch(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	ce.offset.Store(int64(2 * time.Minute))
	if _, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil || e.Details["status"] != messages.ConfirmStatusExpired {
		t.Fatalf("late approval: %v", e)
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusExpired {
		t.Fatalf("status %s", st.Status)
	}
	ce.offset.Store(0)
	q := ce.park(t, limitArgs("0.01", "30000.5"))
	ce.must(t, &messages.SetKillSwitchRequest{User: ce.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := ce.decide(q.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("approval under the kill switch: %v", e)
	}
	st := ce.status(t, q.ConfirmationID)
	if st.Status != messages.ConfirmStatusFailed || st.Error == nil || st.Error.Code != messages.CodeKillSwitchActive {
		t.Fatalf("status %+v", st)
	}
	if countRecords(t, ce.dir, messages.RecordOrderAttempt) != 0 || ce.simCount(t, "gx-cf-") != 0 {
		t.Fatal("something was sent")
	}
}

// Concurrent decisions on the CLI: exactly one is journaled, at most one
// order reaches the venue.
func TestConfirmConcurrentDecisions(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	var wg sync.WaitGroup
	var won atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d := messages.DecisionApprove
			if i%2 == 1 {
				d = messages.DecisionReject
			}
			if _, e := ce.decide(p.ConfirmationID, d, cliOrigin); e == nil {
				won.Add(1)
			} else if e.Details["status"] == nil {
				t.Errorf("decision %d: %v", i, e)
			}
		}(i)
	}
	wg.Wait()
	if won.Load() != 1 || countRecords(t, ce.dir, messages.RecordConfirmationDecided) != 1 {
		t.Fatalf("%d decisions won, %d journaled", won.Load(), countRecords(t, ce.dir, messages.RecordConfirmationDecided))
	}
	if n := ce.simCount(t, "gx-cf-"); n > 1 {
		t.Fatalf("%d orders", n)
	}
}

// Replacing the key cancels the waiting confirmations.
func TestConfirmKeyReplacedCancels(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	if _, err := ce.Handle(context.Background(), &messages.DeleteCredentialRequest{User: ce.user, Environment: "paper"}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	st := ce.status(t, p.ConfirmationID)
	if st.Status != messages.ConfirmStatusCancelled || st.Error == nil || st.Error.Details["reason"] != "key_replaced" {
		t.Fatalf("status %+v", st)
	}
	if _, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil {
		t.Fatal("approved after the key was deleted")
	}
}

// An approved cancel_all_orders cancels exactly the orders shown: one
// placed after parking survives.
func TestConfirmCancelAllExactlyShown(t *testing.T) {
	ce := newConfirmEnv(t, true, "cancel_all_orders")
	for _, p := range []string{"30000", "30000.1"} {
		if _, e := ce.place(t, limitArgs("0.01", p)); e != nil {
			t.Fatal(e)
		}
	}
	res, e := ce.call(t, &messages.CancelAllCommand{User: ce.user, Args: messages.CancelAllArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"}})
	if e != nil {
		t.Fatal(e)
	}
	p := res.(*messages.ConfirmationPending)
	shown := map[string]bool{}
	for _, r := range p.ShownToUser.CancelAll.Orders {
		shown[r.OrderID] = true
	}
	late, e := ce.place(t, limitArgs("0.01", "30000.2"))
	if e != nil {
		t.Fatal(e)
	}
	res, e = ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	if e != nil {
		t.Fatal(e)
	}
	ans := res.(*messages.CancelAllAnswer)
	if ans.Count != len(shown) {
		t.Fatalf("cancelled %d, shown %d", ans.Count, len(shown))
	}
	for _, r := range ans.Orders {
		if !shown[r.OrderID] || r.OrderID == late.OrderID {
			t.Fatalf("cancelled an order not shown: %+v", r)
		}
	}
}

// simLinkIDs lists the client order ids of every order the simulator
// ever accepted.
func (ce *confirmEnv) simLinkIDs(t *testing.T) []string {
	t.Helper()
	var all []struct {
		OrderLinkID string `json:"orderLinkId"`
	}
	ce.simGet(t, "/sim/orders", &all)
	var out []string
	for _, o := range all {
		out = append(out, o.OrderLinkID)
	}
	return out
}

// Live never trusts the client's UI, whatever the ceiling says; paper and
// demo do by default.
func TestTrustClientUIPerVenue(t *testing.T) {
	yes := true
	if !messages.Effective(messages.VenuePaper, messages.PolicySettings{}, messages.PolicySettings{}).TrustClientUI ||
		!messages.Effective(messages.VenueDemo, messages.PolicySettings{}, messages.PolicySettings{}).TrustClientUI {
		t.Fatal("paper and demo trust the client UI by default")
	}
	if messages.Effective(messages.VenueLive, messages.PolicySettings{TrustClientUI: &yes}, messages.PolicySettings{}).TrustClientUI {
		t.Fatal("live trusts the client UI")
	}
}

// Replay refuses confirmation records the live actor could not have
// written: a second human decision, an execution never approved, a
// decision on a confirmation never requested; the records it writes
// replay.
func TestReplayRefusesForgedConfirmationRecords(t *testing.T) {
	const id = "cf_0123456789abcdef01234567"
	now := time.Now().UTC()
	uid := int64(1000)
	requested := messages.ConfirmationRequestedEvent{ConfirmationID: id, Tool: "place_order", Channel: messages.ConfirmChannelCLI,
		Environment: "paper", CreatedAt: now, ExpiresAt: now.Add(time.Minute), ShownToUser: &messages.ShownToUser{Tool: "place_order"}, Args: json.RawMessage(`{}`)}
	approve := messages.ConfirmationDecidedEvent{ConfirmationID: id, Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI,
		ApproverUID: &uid, Status: messages.ConfirmStatusApproved, At: now}
	reject := approve
	reject.Decision, reject.Status = messages.DecisionReject, messages.ConfirmStatusRejected
	executing := messages.ConfirmationExecutedEvent{ConfirmationID: id, Status: messages.ConfirmStatusExecuting, ClientOrderID: "gx-cf-0123456789abcdef01234567", At: now}
	setup := func(t *testing.T) (string, *testSystem) {
		dir := t.TempDir()
		ts := startUsers(t, dir)
		ts.must(t, &messages.CreateUserRequest{User: "rae"}, messages.ActorCLIAdmin)
		return dir, ts
	}
	t.Run("written by the server", func(t *testing.T) {
		dir, ts := setup(t)
		forge(t, ts.log, messages.RecordConfirmationRequested, "rae", messages.ActorAgent, requested)
		forge(t, ts.log, messages.RecordConfirmationDecided, "rae", messages.ActorCLIUser, approve)
		forge(t, ts.log, messages.RecordConfirmationExecuted, "rae", messages.ActorExecutor, executing)
		ts.stop()
		r, err := reopen(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.states(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if c := st["rae"].Confirmations[id]; c.Status != messages.ConfirmStatusExecuting || c.DecidedChannel != messages.ConfirmChannelCLI {
			t.Fatalf("rebuilt %+v", c)
		}
	})
	t.Run("second decision", func(t *testing.T) {
		dir, ts := setup(t)
		forge(t, ts.log, messages.RecordConfirmationRequested, "rae", messages.ActorAgent, requested)
		forge(t, ts.log, messages.RecordConfirmationDecided, "rae", messages.ActorCLIUser, reject)
		seq := forge(t, ts.log, messages.RecordConfirmationDecided, "rae", messages.ActorCLIUser, approve)
		ts.stop()
		wantRefused(t, dir, seq, "confirmation_decided")
	})
	t.Run("execution never approved", func(t *testing.T) {
		dir, ts := setup(t)
		forge(t, ts.log, messages.RecordConfirmationRequested, "rae", messages.ActorAgent, requested)
		seq := forge(t, ts.log, messages.RecordConfirmationExecuted, "rae", messages.ActorExecutor, executing)
		ts.stop()
		wantRefused(t, dir, seq, "confirmation_executed")
	})
	t.Run("never requested", func(t *testing.T) {
		dir, ts := setup(t)
		seq := forge(t, ts.log, messages.RecordConfirmationDecided, "rae", messages.ActorCLIUser, approve)
		ts.stop()
		wantRefused(t, dir, seq, "confirmation_decided")
	})
	t.Run("approved by the agent on the cli channel", func(t *testing.T) {
		dir, ts := setup(t)
		forge(t, ts.log, messages.RecordConfirmationRequested, "rae", messages.ActorAgent, requested)
		seq := forge(t, ts.log, messages.RecordConfirmationDecided, "rae", messages.ActorAgent, approve)
		ts.stop()
		if _, err := reopen(t, dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("seq %d", seq)) {
			t.Fatalf("start: %v", err)
		}
	})
}

// An approval whose execution had not started when the process stopped
// runs at the next start within 30 s of the approval, and after that
// becomes expired_after_approval: nothing is sent.
func TestConfirmExpiredAfterApproval(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	uid := int64(1000)
	forge(t, ce.log, messages.RecordConfirmationDecided, ce.user, messages.ActorCLIUser, messages.ConfirmationDecidedEvent{ConfirmationID: p.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI, ApproverUID: &uid, Status: messages.ConfirmStatusApproved, At: time.Now().UTC()})
	ce.stop()
	ce.offset.Store(int64(40 * time.Second))
	ce.testSystem = ce.start(t, ce.dir)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := ce.status(t, p.ConfirmationID)
		if st.Status == messages.ConfirmStatusExpiredAfterApproval {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %s", st.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if countRecords(t, ce.dir, messages.RecordOrderAttempt) != 0 || ce.simCount(t, "gx-cf-") != 0 {
		t.Fatal("an expired approval was sent")
	}
}

// An approved action that reduced risk and would now add it is refused at
// execution with risk_direction_changed: leverage 10 → 5 was parked as a
// reduction; the leverage was lowered to 3 outside the server meanwhile,
// so 5 would now raise it. Nothing is sent. A keyless repeat of a parked
// call gets the same confirmation.
func TestConfirmRiskDirectionChanged(t *testing.T) {
	ce := newConfirmEnv(t, true, "set_leverage")
	lev := func() (any, *messages.Error) {
		return ce.call(t, &messages.SetLeverageCommand{User: ce.user, Args: messages.SetLeverageArgs{Category: messages.CategoryLinear,
			Symbol: "BTCUSDT", Leverage: decimal.NewFromInt(5)}})
	}
	res, e := lev()
	if e != nil {
		t.Fatal(e)
	}
	p, ok := res.(*messages.ConfirmationPending)
	if !ok || p.ShownToUser.Leverage == nil || p.ShownToUser.RiskIncreasing {
		t.Fatalf("parked %+v", res)
	}
	if again, _ := lev(); again.(*messages.ConfirmationPending).ConfirmationID != p.ConfirmationID {
		t.Fatal("a keyless repeat parked a second confirmation")
	}
	if _, err := ce.outside(t).SetLeverage(context.Background(), messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Leverage: decimal.NewFromInt(3)}); err != nil {
		t.Fatal(err)
	}
	_, e = ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	if e == nil || e.Details["reason"] != "risk_direction_changed" {
		t.Fatalf("approval: %v", e)
	}
	if countRecords(t, ce.dir, messages.RecordOrderAttempt) != 0 {
		t.Fatal("something was sent")
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusFailed {
		t.Fatalf("status %s", st.Status)
	}
}
