package actors

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// venueLeverage is the symbol's leverage as the venue shows it to a
// client that is not this server.
func (te *tradeEnv) venueLeverage(t testing.TB) (lev, size decimal.Decimal) {
	t.Helper()
	page, err := te.outside(t).Positions(context.Background(), venue.PositionQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range page.Items {
		if p.Symbol == "BTCUSDT" {
			return p.Leverage, p.Size
		}
	}
	t.Fatal("the venue shows no BTCUSDT position row")
	return
}

// openOutside opens a long of qty on the account by hand (an order this
// server did not place), at the account's leverage.
func (te *tradeEnv) openOutside(t testing.TB, qty string) {
	t.Helper()
	if _, err := te.outside(t).CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Market", Qty: decimal.RequireFromString(qty), OrderLinkID: "by-hand-" + strings.ReplaceAll(qty, ".", "")}); err != nil {
		t.Fatal(err)
	}
	if _, size := te.venueLeverage(t); !size.IsPositive() {
		t.Fatal("the order by hand opened no position")
	}
}

// attemptsOf decodes the journal's order_attempt records.
func attemptsOf(t *testing.T, dir string) []messages.OrderAttemptEvent {
	t.Helper()
	atts, _ := recordsOf[messages.OrderAttemptEvent](t, dir, messages.RecordOrderAttempt)
	return atts
}

// The leverage trap (issue: a new paper account shows 10x, the policy
// allows 5): the first market order's plan lowers the leverage to 5 first,
// the dry run shows it and sends nothing, and the order then places and
// fills at 5. The journal holds the step's set_leverage attempt (step_of
// place_order, not risk-increasing) and outcome before the order's
// attempt, which names the step; the step counts against no rate.
func TestFirstOrderLowersLeverageToThePolicy(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("a new account shows leverage %s, want the venue's 10", lev)
	}
	dry := marketArgs("Buy", "0.001")
	dry.DryRun = true
	plan, e := te.place(t, dry)
	if e != nil || plan.LowersLeverage == nil || plan.LowersLeverage.From.String() != "10" || plan.LowersLeverage.To.String() != "5" {
		t.Fatalf("the plan does not show the leverage step: %+v %v", plan, e)
	}
	if n := len(attemptsOf(t, dir)); n != 0 {
		t.Fatalf("a dry run journaled %d attempts", n)
	}
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("a dry run changed the leverage to %s", lev)
	}
	ans, e := te.place(t, marketArgs("Buy", "0.001"))
	if e != nil {
		t.Fatalf("the first market order: %v", e)
	}
	if ans.Status != messages.AnswerAccepted || ans.OrderStatus != "Filled" || ans.FilledQty.String() != "0.001" ||
		ans.LowersLeverage == nil || ans.LowersLeverage.To.String() != "5" {
		t.Fatalf("answer %+v", ans)
	}
	lev, size := te.venueLeverage(t)
	if !lev.Equal(decimal.NewFromInt(5)) || size.String() != "0.001" {
		t.Fatalf("position at leverage %s, size %s; want 5 and 0.001", lev, size)
	}
	atts := attemptsOf(t, dir)
	if len(atts) != 2 {
		t.Fatalf("attempts %+v, want the step and the order", atts)
	}
	step, order := atts[0], atts[1]
	if step.Tool != risk.ToolLeverage || step.StepOf != risk.ToolPlaceOrder || step.RiskIncreasing || step.IdempotencyKey != "" || step.AfterStep != "" {
		t.Fatalf("the step's attempt %+v", step)
	}
	if order.Tool != risk.ToolPlaceOrder || order.AfterStep != step.ClientOrderID || order.StepOf != "" || !order.RiskIncreasing || order.ClientOrderID != ans.ClientOrderID {
		t.Fatalf("the order's attempt %+v (step %s)", order, step.ClientOrderID)
	}
	j := journalOf(t, dir)
	stepOut, orderAtt := -1, -1
	for i, g := range j {
		if strings.HasPrefix(g, "order_outcome:"+step.ClientOrderID+":accepted") {
			stepOut = i
		}
		if g == "order_attempt:"+order.ClientOrderID {
			orderAtt = i
		}
	}
	if stepOut < 0 || orderAtt < stepOut {
		t.Fatalf("the order's attempt is not after the step's outcome: %v", j)
	}
	if _, perMinute, _ := te.snapshot(t).Counters.Window(time.Now(), "paper"); perMinute != 1 {
		t.Fatalf("%d risk-increasing actions counted, want only the order", perMinute)
	}
	// The next order needs no step: the leverage is 5 now.
	next, e := te.place(t, marketArgs("Buy", "0.002"))
	if e != nil || next.LowersLeverage != nil || next.ResultSource != messages.ResultSourceVenue {
		t.Fatalf("the second order: %+v %v", next, e)
	}
}

// With a position open the leverage is never changed for the agent: the
// order is refused naming set_leverage and the value to use, nothing is
// sent, and the position keeps its leverage. A reduce-only order and a
// close take no step either.
func TestLeverageStepNeverWithAPositionOpen(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.openOutside(t, "0.002")
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	_, e := te.place(t, marketArgs("Buy", "0.001"))
	if e == nil || e.Code != messages.CodeLimitExceeded || e.Details["limit"] != "max_leverage" || e.Details["allowed"] != "5" || e.Details["leverage"] != "10" {
		t.Fatalf("an order on a symbol with a position at 10x: %v", e)
	}
	if e.Message != "the symbol's current leverage (10x) exceeds max_leverage (5x); with a position open it is not lowered automatically" ||
		e.NextStep != "lower it first with set_leverage to 5, then place the order again" ||
		e.Details["fix"] != `set_leverage {"category":"linear","symbol":"BTCUSDT","leverage":"5"}` {
		t.Fatalf("the refusal does not name set_leverage and 5: %q / %q / %v", e.Message, e.NextStep, e.Details["fix"])
	}
	dry := marketArgs("Buy", "0.001")
	dry.DryRun = true
	if _, e := te.place(t, dry); e == nil || e.Details["limit"] != "max_leverage" {
		t.Fatalf("a dry run with a position open: %v", e)
	}
	reduce := marketArgs("Sell", "0.001")
	reduce.ReduceOnly = true
	if ans, e := te.place(t, reduce); e != nil || ans.LowersLeverage != nil {
		t.Fatalf("a reduce-only order: %+v %v", ans, e)
	}
	if ans, e := te.closePos(t, messages.CategoryLinear, ""); e != nil || ans.LowersLeverage != nil {
		t.Fatalf("a close: %+v %v", ans, e)
	}
	for _, a := range attemptsOf(t, dir) {
		if a.Tool == risk.ToolLeverage {
			t.Fatalf("the leverage was changed for the agent: %+v", a)
		}
	}
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("leverage %s, want the 10 the human set", lev)
	}
}

// The step only ever lowers, only what the order needs, and never under
// the kill switch: a leverage already within the policy is kept (an order
// at 3x under a max of 5 stays at 3x), and an order the kill switch
// refuses changes nothing.
func TestLeverageStepNeverRaisesNorBypassesTheKillSwitch(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := te.place(t, marketArgs("Buy", "0.001")); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("under the kill switch: %v", e)
	}
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) || len(attemptsOf(t, dir)) != 0 {
		t.Fatalf("an order the kill switch refused changed the leverage to %s", lev)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser)
	if _, e := te.leverage(t, "3", ""); e != nil {
		t.Fatal(e)
	}
	ans, e := te.place(t, marketArgs("Buy", "0.001"))
	if e != nil || ans.LowersLeverage != nil {
		t.Fatalf("an order at 3x under a max of 5: %+v %v", ans, e)
	}
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(3)) {
		t.Fatalf("leverage %s, want the 3 set before", lev)
	}
	if n := len(attemptsOf(t, dir)); n != 2 {
		t.Fatalf("%d attempts, want the set_leverage and the order", n)
	}
}

// A step whose outcome is not the lower leverage does not send the order:
// a 5xx the venue did not apply answers outcome_unknown naming the step
// (order_sent false) and nothing else is journaled or sent; an answer
// lost after the venue applied the change is settled by the position
// read after it (reconnaissance), and only then is the order sent.
func TestLeverageStepUnknownOutcomeSendsNoOrder(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	te.fault(t, "http_5xx", "/v5/position/set-leverage")
	_, e := te.place(t, marketArgs("Buy", "0.001"))
	if e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["step"] != risk.ToolLeverage || e.Details["order_sent"] != false ||
		e.Details["reconnaissance"] != "not_found" || !strings.HasPrefix(e.Message, "the order was not sent: lowering the leverage from 10x to 5x first did not complete") {
		t.Fatalf("a step that failed: %v", e)
	}
	atts := attemptsOf(t, dir)
	if len(atts) != 1 || atts[0].Tool != risk.ToolLeverage {
		t.Fatalf("attempts %+v, want the step's only", atts)
	}
	if lev, size := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) || !size.IsZero() {
		t.Fatalf("leverage %s, size %s after a failed step", lev, size)
	}
	te.fault(t, "drop_response", "/v5/position/set-leverage")
	ans, e := te.place(t, marketArgs("Buy", "0.001"))
	if e != nil || ans.OrderStatus != "Filled" || ans.LowersLeverage == nil {
		t.Fatalf("after a lost answer of an applied step: %+v %v", ans, e)
	}
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(5)) {
		t.Fatalf("leverage %s, want 5", lev)
	}
	var found bool
	for _, g := range journalOf(t, dir) {
		found = found || strings.HasSuffix(g, ":found:"+messages.ResultSourceReconnaissance)
	}
	if !found {
		t.Fatalf("the lost answer was not settled by reconnaissance: %v", journalOf(t, dir))
	}
}

// The process stops while the step is at the venue: its attempt is
// durable, the order's is not, so the order was never sent; at the next
// start the step is reconciled and nothing sends the order behind the
// agent's back.
func TestLeverageStepCrashNeverSendsTheOrder(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	te.delayFault(t, "/v5/position/set-leverage", 1500)
	done := make(chan *messages.Error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, err := te.askUser(ctx, te.user, &tradingAsk{ctx: ctx, tool: placeOrderTool, args: marketArgs("Buy", "0.001"), origin: agentOrigin})
		done <- messages.AsError(err)
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if seen, _ := te.faultSeen(t, "/v5/position/set-leverage"); seen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step never reached the venue")
		}
	}
	te.stop()
	cancel() // the stopped server answers nobody: the caller gives up
	if e := <-done; e == nil {
		t.Fatal("a call whose server stopped answered success")
	}
	atts := attemptsOf(t, dir)
	if len(atts) != 1 || atts[0].Tool != risk.ToolLeverage || atts[0].StepOf != risk.ToolPlaceOrder {
		t.Fatalf("attempts at the stop %+v, want the step's only", atts)
	}
	te.testSystem = te.start(t, dir)
	waitJournal(t, dir, "order_outcome:"+atts[0].ClientOrderID+":"+messages.OutcomeNotFound+":"+messages.ResultSourceReconnaissance)
	if _, size := te.venueLeverage(t); !size.IsZero() {
		t.Fatalf("a position of %s exists: the order was sent", size)
	}
	// The venue applied the step before the stop: a new call needs no
	// step, and its order is the only one ever sent.
	ans, e := te.place(t, marketArgs("Buy", "0.001"))
	if e != nil || ans.LowersLeverage != nil {
		t.Fatalf("a new call after the restart: %+v %v", ans, e)
	}
	if atts := attemptsOf(t, dir); len(atts) != 2 || atts[1].ClientOrderID != ans.ClientOrderID {
		t.Fatalf("attempts after the restart %+v, want the step's and the new call's", atts)
	}
	if _, size := te.venueLeverage(t); size.String() != "0.001" {
		t.Fatalf("position %s, want the new call's 0.001 only", size)
	}
}

// The human sees the step and approves both at once: the parked plan and
// its summary show the leverage lowered, nothing is sent until the
// approval, and the run lowers the leverage and places the order under
// the confirmation's ids (the order keeps the first, the step takes the
// next), the confirmation ends executed with the order's answer.
func TestLeverageStepShownAndApprovedWithTheOrder(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	ce.tradeReady(t, messages.PolicySettings{ConfirmActions: strs("place_order"), ConfirmationTTLS: intp(60), MaxPending: intp(3), MaxLeverage: dec("5")})
	p := ce.park(t, cfMarketArgs("0.001", "first-trade"))
	shown := p.ShownToUser.Order
	if shown.LowersLeverage == nil || shown.LowersLeverage.From.String() != "10" || shown.LowersLeverage.To.String() != "5" ||
		!strings.HasSuffix(p.ShownToUser.Summary, ", after lowering the leverage from 10x to 5x") {
		t.Fatalf("the plan shown %+v / %q", shown, p.ShownToUser.Summary)
	}
	if n := len(attemptsOf(t, ce.dir)); n != 0 {
		t.Fatalf("parking sent %d writes", n)
	}
	if lev, _ := ce.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("parking changed the leverage to %s", lev)
	}
	res, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	if e != nil {
		t.Fatal(e)
	}
	ans := res.(*messages.OrderAnswer)
	orderID, stepID := confirmClientOrderID(p.ConfirmationID, 1), confirmClientOrderID(p.ConfirmationID, 2)
	if ans.ClientOrderID != orderID || ans.OrderStatus != "Filled" || ans.LowersLeverage == nil {
		t.Fatalf("the approved run %+v, want the order under %s", ans, orderID)
	}
	atts := attemptsOf(t, ce.dir)
	if len(atts) != 2 || atts[0].ClientOrderID != stepID || atts[0].StepOf != risk.ToolPlaceOrder || !atts[0].Confirmed ||
		atts[1].ClientOrderID != orderID || atts[1].AfterStep != stepID || atts[1].IdempotencyKey != "first-trade" {
		t.Fatalf("attempts %+v", atts)
	}
	if lev, _ := ce.venueLeverage(t); !lev.Equal(decimal.NewFromInt(5)) {
		t.Fatalf("leverage %s after the approved run", lev)
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusExecuted || !strings.Contains(string(st.Result), orderID) {
		t.Fatalf("status %+v", st)
	}
	// The key answers the order, not the step.
	if res, e := ce.call(t, &messages.PlaceOrderCommand{User: ce.user, Args: cfMarketArgs("0.001", "first-trade")}); e != nil ||
		res.(*messages.OrderAnswer).ClientOrderID != orderID {
		t.Fatalf("a repeat of the key: %v %v", res, e)
	}
}

// An amend that adds risk never lowers the leverage for the agent: with
// the symbol's leverage above max_leverage it is refused naming
// set_leverage and the value to use.
func TestAmendAboveMaxLeverageNamesSetLeverage(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("10")})
	placed, e := te.place(t, limitArgs("0.001", "30000"))
	if e != nil || placed.LowersLeverage != nil {
		t.Fatalf("a resting order at 10x under a max of 10: %+v %v", placed, e)
	}
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	_, e = te.amend(t, placed.OrderID, "0.002", "")
	if e == nil || e.Code != messages.CodeLimitExceeded || e.Details["limit"] != "max_leverage" || e.Details["allowed"] != "5" ||
		e.Message != "the symbol's current leverage (10x) exceeds max_leverage (5x)" ||
		e.NextStep != "lower it first with set_leverage to 5, then amend the order again" ||
		e.Details["fix"] != `set_leverage {"category":"linear","symbol":"BTCUSDT","leverage":"5"}` {
		t.Fatalf("an amend up at 10x under a max of 5: %v %q %v", e, e.NextStep, e.Details)
	}
	for _, a := range attemptsOf(t, dir) {
		if a.Tool == risk.ToolLeverage {
			t.Fatalf("an amend changed the leverage: %+v", a)
		}
	}
}

// The order is decided again once the step is done: a kill switch turned
// on while the step is at the venue stops the order (the lower leverage,
// which only reduces risk, stays).
func TestLeverageStepThenKillSwitchSendsNoOrder(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	te.delayFault(t, "/v5/position/set-leverage", 800)
	done := make(chan *messages.Error, 1)
	go func() {
		_, e := te.place(t, marketArgs("Buy", "0.001"))
		done <- e
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if seen, _ := te.faultSeen(t, "/v5/position/set-leverage"); seen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step never reached the venue")
		}
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if e := <-done; e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("the order after the kill switch went on: %v", e)
	}
	if atts := attemptsOf(t, dir); len(atts) != 1 || atts[0].Tool != risk.ToolLeverage {
		t.Fatalf("attempts %+v, want the step's only", atts)
	}
	if lev, size := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(5)) || !size.IsZero() {
		t.Fatalf("leverage %s, size %s", lev, size)
	}
}

// An approved run lowers the leverage exactly as the human saw it, or not
// at all: a plan shown lowering 10x to 5x does not run at 8x after the
// ceiling was raised to 8, and a plan shown with no step (the account at
// 3x) does not run behind a step the human never saw after someone raised
// the leverage to 10x by hand. Both are refused with nothing sent; the
// leverage stays as the venue shows it.
func TestApprovedRunLowersLeverageOnlyAsShown(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	settings := messages.PolicySettings{ConfirmActions: strs("place_order"), ConfirmationTTLS: intp(60), MaxPending: intp(3), MaxLeverage: dec("5")}
	ce.tradeReady(t, settings)
	p := ce.park(t, cfMarketArgs("0.001", "shown-5"))
	if l := p.ShownToUser.Order.LowersLeverage; l == nil || l.To.String() != "5" {
		t.Fatalf("the plan shown %+v", p.ShownToUser.Order)
	}
	settings.MaxLeverage = dec("8")
	ce.tradeReady(t, settings)
	if _, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil || e.Details["reason"] != "leverage_changed" {
		t.Fatalf("an approved run whose step is no longer the one shown: %v", e)
	}
	if lev, size := ce.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) || !size.IsZero() {
		t.Fatalf("leverage %s, size %s after a run refused", lev, size)
	}

	if _, err := ce.outside(t).SetLeverage(context.Background(), messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Leverage: decimal.NewFromInt(3)}); err != nil {
		t.Fatal(err)
	}
	q := ce.park(t, cfMarketArgs("0.001", "shown-none"))
	if q.ShownToUser.Order.LowersLeverage != nil {
		t.Fatalf("a plan at 3x under a max of 8 shows a step: %+v", q.ShownToUser.Order)
	}
	if _, err := ce.outside(t).SetLeverage(context.Background(), messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Leverage: decimal.NewFromInt(10)}); err != nil {
		t.Fatal(err)
	}
	if _, e := ce.decide(q.ConfirmationID, messages.DecisionApprove, cliOrigin); e == nil || e.Details["reason"] != "leverage_changed" {
		t.Fatalf("an approved run with a step the human never saw: %v", e)
	}
	if lev, size := ce.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) || !size.IsZero() {
		t.Fatalf("leverage %s, size %s after a run refused", lev, size)
	}
	for _, a := range attemptsOf(t, ce.dir) {
		t.Fatalf("a refused run sent %+v", a)
	}
}
