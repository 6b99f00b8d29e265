package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Guarantees that only hold if a check runs at the right moment: the
// order's intent is durable before it leaves, an approved action is
// decided again on the policy as it is when it runs, and the agent's
// origin never turns a kill switch off.

// The order leaves only once its order_attempt is durable: a journal
// that refuses the attempt fails the call, and nothing reaches the venue.
func TestNothingIsSentWhenTheAttemptIsNotDurable(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	// The journal fails: every later write, the attempt first, is
	// refused.
	te.journal.MarkDown()
	res, err := te.askUser(context.Background(), te.user, &tradingAsk{ctx: context.Background(), tool: placeOrderTool, args: limitArgs("0.01", "30000"), origin: agentOrigin})
	if err == nil {
		t.Fatalf("place_order answered %+v while the journal refused its attempt", res)
	}
	if c := messages.CodeOf(err); c != messages.CodeInternalError {
		t.Fatalf("place_order with the attempt refused: %v, want internal_error", err)
	}
	// An order sent anyway would reach the loopback venue within
	// milliseconds; a second is a generous bound.
	ce := &confirmEnv{tradeEnv: te}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := ce.simCount(t, "gx-"); n != 0 {
			t.Fatalf("%d orders reached the venue although their attempt was never durable", n)
		}
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 0 {
		t.Fatalf("%d attempts journaled", n)
	}
}

// An approved place_order is decided again when it runs, on the policy
// as it is then: a per-order notional limit, a daily cap or an allowlist
// tightened while the confirmation waited refuses it, and nothing is
// sent.
func TestApprovedOrderIsDecidedOnThePolicyAsItIsWhenItRuns(t *testing.T) {
	cases := []struct {
		name    string
		tighten messages.PolicySettings
		code    messages.Code
		limit   string
	}{
		{"max_order_notional_usdt", messages.PolicySettings{MaxOrderNotionalUSDT: dec("100")}, messages.CodeLimitExceeded, "max_order_notional_usdt"},
		{"daily_notional_cap_usdt", messages.PolicySettings{DailyNotionalCapUSDT: dec("250")}, messages.CodeLimitExceeded, "daily_notional_cap_usdt"},
		{"allow", messages.PolicySettings{Allow: strs("spot:BTCUSDT")}, messages.CodePermissionDenied, "allow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce := newConfirmEnv(t, true, "place_order")
			p := ce.park(t, limitArgs("0.01", "30000")) // 300 USDT
			ce.must(t, &messages.TightenPolicyRequest{User: ce.user, Settings: c.tighten}, messages.ActorCLIUser)
			_, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
			if e == nil || e.Code != c.code || e.Details["limit"] != c.limit {
				t.Fatalf("approved after %s was tightened: %v, want %s naming %s", c.name, e, c.code, c.limit)
			}
			wantNothingSent(t, ce, p.ConfirmationID)
		})
	}
}

// The allowlist is checked again by the decision itself, after the
// market read: an allowlist tightened while the approved order's market
// read is at the venue refuses it, and nothing is sent.
func TestApprovedOrderAllowlistTightenedDuringTheMarketRead(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	ce.simPost(t, "/sim/faults", `{"kind":"delay","path":"/v5/position/list","count":1,"delay_ms":1500}`)
	type answer struct{ e *messages.Error }
	done := make(chan answer, 1)
	go func() {
		_, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
		done <- answer{e}
	}()
	// Tighten once the market read is held at the venue.
	deadline := time.Now().Add(10 * time.Second)
	for !positionReadHeld(t, ce) {
		if time.Now().After(deadline) {
			t.Fatal("the approved order's market read never reached the venue")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ce.must(t, &messages.TightenPolicyRequest{User: ce.user, Settings: messages.PolicySettings{Allow: strs("spot:BTCUSDT")}}, messages.ActorCLIUser)
	a := <-done
	if a.e == nil || a.e.Code != messages.CodePermissionDenied || a.e.Details["limit"] != "allow" {
		t.Fatalf("approved while the allowlist was tightened during its market read: %v", a.e)
	}
	wantNothingSent(t, ce, p.ConfirmationID)
}

// positionReadHeld reports whether the delay fault on the position read
// has fired: the request is at the venue, held.
func positionReadHeld(t *testing.T, ce *confirmEnv) bool {
	t.Helper()
	var faults []struct {
		Path  string `json:"path"`
		Fired int    `json:"fired"`
	}
	ce.simGet(t, "/sim/faults", &faults)
	for _, f := range faults {
		if f.Path == "/v5/position/list" && f.Fired > 0 {
			return true
		}
	}
	return false
}

// wantNothingSent checks that no order reached the venue, no attempt was
// journaled, and the confirmation ended failed.
func wantNothingSent(t *testing.T, ce *confirmEnv, id string) {
	t.Helper()
	if n := ce.simCount(t, "gx-"); n != 0 {
		t.Fatalf("%d orders reached the venue", n)
	}
	if n := countRecords(t, ce.dir, messages.RecordOrderAttempt); n != 0 {
		t.Fatalf("%d attempts journaled", n)
	}
	if st := ce.status(t, id); st.Status != messages.ConfirmStatusFailed {
		t.Fatalf("confirmation %s, want failed", st.Status)
	}
}

// The agent's origin never journals a kill_switch_off, at the user's
// level either: the user actor refuses it live, even when a bug hands it
// the command past the permission check, and a record of it appended to
// the journal refuses start.
func TestAgentCannotTurnOffTheUserKillSwitch(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "wes"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetKillSwitchRequest{User: "wes", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	// Live, past messages.Permit: straight to the user actor.
	_, err := ts.askUser(context.Background(), "wes", &userCommand{ctx: context.Background(),
		cmd: &messages.SetKillSwitchRequest{User: "wes", On: false, Level: messages.KillSwitchUser}, origin: agentOrigin})
	if messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("the agent's origin turned off the user's kill switch: %v", err)
	}
	if v := ts.must(t, &messages.ShowPolicyRequest{User: "wes"}, messages.ActorCLIUser); v.KillSwitch != messages.KillSwitchUser {
		t.Fatalf("kill switch %q, want user", v.KillSwitch)
	}
	// Forged: kill_switch_off {user -> none} as mcp:agent, a record
	// that follows from the switch before it.
	seq := forge(t, ts.log, messages.RecordKillSwitchOff, "wes", messages.ActorAgent,
		messages.KillSwitchEvent{Before: messages.KillSwitchUser, After: messages.KillSwitchNone})
	ts.stop()
	_, err = reopen(t, dir)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("seq %d:", seq)) || !strings.Contains(err.Error(), "kill_switch_off") ||
		!strings.Contains(err.Error(), messages.ActorAgent) {
		t.Fatalf("a forged user-level kill_switch_off by the agent did not refuse start: %v", err)
	}
}
