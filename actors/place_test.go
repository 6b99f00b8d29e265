package actors

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// tradeReady lets the user trade BTCUSDT on linear and spot without
// confirmation, with the limits given.
func (te *tradeEnv) tradeReady(t testing.TB, extra messages.PolicySettings) {
	t.Helper()
	base := messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT", "spot:BTCUSDT"),
		ConfirmActions: strs(), VenueCeiling: venueLevel(messages.VenuePaper)}
	te.must(t, &messages.SetCeilingRequest{User: te.user, Settings: base.Merge(extra)}, messages.ActorCLIAdmin)
}

func venueLevel(v messages.VenueLevel) *messages.VenueLevel { return &v }

func (te *tradeEnv) place(t testing.TB, a messages.PlaceOrderArgs) (*messages.OrderAnswer, *messages.Error) {
	t.Helper()
	res, err := te.askUser(context.Background(), te.user, &tradingAsk{ctx: context.Background(), tool: placeOrderTool, args: a, origin: agentOrigin})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("place: %v", err)
		}
		return nil, e
	}
	ans, ok := res.(*messages.OrderAnswer)
	if !ok {
		t.Fatalf("answer %T", res)
	}
	return ans, nil
}

func limitArgs(qty, price string) messages.PlaceOrderArgs {
	return messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit",
		Qty: decimal.RequireFromString(qty), Price: decimal.NewNullDecimal(decimal.RequireFromString(price))}
}

// countRecords counts the journal's records of a type.
func countRecords(t testing.TB, dir string, typ messages.RecordType) int {
	n := 0
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) == typ {
			n++
		}
	}
	return n
}

// The default policy confirms every trading action; until a confirmation
// channel exists, such an action is refused and nothing is sent.
func TestPlaceNeedsConfirmationRefusedWithoutChannel(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.must(t, &messages.SetCeilingRequest{User: te.user, Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade),
		Allow: strs("linear:BTCUSDT"), VenueCeiling: venueLevel(messages.VenuePaper)}}, messages.ActorCLIAdmin)
	_, e := te.place(t, limitArgs("0.01", "30000"))
	if e == nil || e.Code != messages.CodeConfirmationChannelUnavailable {
		t.Fatalf("refusal %v", e)
	}
	if countRecords(t, dir, messages.RecordOrderAttempt) != 0 || countRecords(t, dir, messages.RecordOrderRefused) != 1 {
		t.Fatal("an action needing confirmation was attempted, or its refusal not journaled")
	}
}

// A limit order: qty rounded down to the step (both shown), sent once,
// journaled attempt → outcome → answer, filled qty read back.
func TestPlaceLimitOrder(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	ans, e := te.place(t, limitArgs("0.0105", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	if ans.Status != messages.AnswerAccepted || ans.RequestedQty.String() != "0.0105" || ans.Qty.String() != "0.01" ||
		ans.SentAs != "Limit GTC" || ans.OrderID == "" || ans.OrderStatus != "New" || ans.FilledQty.String() != "0" ||
		ans.ResultSource != "venue" || ans.Origin != "system" || !ans.NotionalUSDT.Equal(decimal.NewFromInt(300)) {
		t.Fatalf("answer %+v", ans)
	}
	if te.simOrders(t, ans.ClientOrderID) != 1 {
		t.Fatal("not exactly one order on the venue")
	}
	// The stored answer is in the outcome record.
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) == messages.RecordOrderOutcome {
			var o messages.OrderOutcomeEvent
			json.Unmarshal(r.Payload, &o)
			if !strings.Contains(string(o.Answer), ans.ClientOrderID) {
				t.Fatalf("outcome answer %s", o.Answer)
			}
		}
	}
}

// Instrument rules: an off-tick price names the two nearest valid
// prices; a qty below the minimum and a price outside the band are
// refused; every refusal is journaled, nothing is sent.
func TestPlaceInstrumentRules(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	_, e := te.place(t, limitArgs("0.01", "30000.05"))
	if e == nil || e.Code != messages.CodeInstrumentRuleViolation || e.Details["rule"] != "tick_size" {
		t.Fatalf("off tick: %v", e)
	}
	near, _ := e.Details["nearest_prices"].([]string)
	if len(near) != 2 || near[0] != "30000" || near[1] != "30000.1" {
		t.Fatalf("nearest prices %v", e.Details["nearest_prices"])
	}
	if _, e := te.place(t, limitArgs("0.0001", "30000")); e == nil || e.Details["rule"] != "min_qty" {
		t.Fatalf("below min qty: %v", e)
	}
	if _, e := te.place(t, limitArgs("0.001", "900000")); e == nil || e.Code != messages.CodeInstrumentRuleViolation {
		t.Fatalf("above the band: %v", e)
	}
	if n := countRecords(t, dir, messages.RecordOrderRefused); n != 3 {
		t.Fatalf("%d refusals journaled, want 3", n)
	}
	if countRecords(t, dir, messages.RecordOrderAttempt) != 0 {
		t.Fatal("a refused order was attempted")
	}
}

// A market order goes out as Limit IOC at the best ask + slippage_pct,
// rounded down to the tick, valued at that price, and fills.
func TestPlaceMarketOrderIsBoundedIOC(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{SlippagePct: dec("0.5")})
	ans, e := te.place(t, messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market",
		Qty: decimal.RequireFromString("0.002")})
	if e != nil {
		t.Fatal(e)
	}
	if ans.SentAs != "Limit IOC" || !ans.NotionalUSDT.Equal(ans.Price.Mul(ans.Qty)) || ans.Price.Mod(decimal.RequireFromString("0.1")).Sign() != 0 {
		t.Fatalf("answer %+v", ans)
	}
	if ans.OrderStatus != "Filled" || ans.FilledQty.String() != "0.002" {
		t.Fatalf("market order not filled: %+v", ans)
	}
}

// The kill switch blocks risk-increasing orders; a reduce-only order
// passes it (the venue then decides: there is no position to reduce).
func TestPlaceKillSwitchByRiskDirection(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	long, e := te.place(t, marketArgs("Buy", "0.002"))
	if e != nil || long.FilledQty.String() != "0.002" {
		t.Fatalf("open a long: %+v %v", long, e)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := te.place(t, limitArgs("0.01", "30000")); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("risk-increasing under the kill switch: %v", e)
	}
	reduce := limitArgs("0.01", "90000")
	reduce.Side, reduce.ReduceOnly = "Sell", true
	ans, e := te.place(t, reduce)
	if e != nil || ans.Qty.String() != "0.002" || ans.RequestedQty.String() != "0.01" || ans.RiskIncreasing {
		t.Fatalf("reduce-only under the kill switch, cut to the position: %+v %v", ans, e)
	}
	wrongSide := reduce
	wrongSide.Side = "Buy"
	wrongSide.Price = decimal.NewNullDecimal(decimal.RequireFromString("30000"))
	if _, e := te.place(t, wrongSide); e == nil || e.Details["reason"] != "position_not_found" {
		t.Fatalf("reduce-only on the side of the position: %v", e)
	}
	spot := reduce
	spot.Category = messages.CategorySpot
	if _, e := te.place(t, spot); e == nil || e.Code != messages.CodeInvalidParams || e.Details["reason"] != "linear_only" {
		t.Fatalf("spot reduce-only: %v", e)
	}
}

func marketArgs(side, qty string) messages.PlaceOrderArgs {
	return messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: side, OrderType: "Market", Qty: decimal.RequireFromString(qty)}
}

// Splitting a large order into small ones hits the rolling daily cap; the
// refusal names the limit and the allowed value. The per-order limit and
// the per-minute rate are enforced the same way.
func TestPlaceLimitsHoldAgainstSplitting(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	// The symbol's leverage on the venue (10) is above max_leverage, and
	// a position is open (so the order does not lower it first, D111).
	te.openOutside(t, "0.001")
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	if _, e := te.place(t, limitArgs("0.01", "30000")); e == nil || e.Details["limit"] != "max_leverage" || e.Details["allowed"] != "5" {
		t.Fatalf("order at a leverage above max_leverage: %v", e)
	}
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("10"), DailyNotionalCapUSDT: dec("1000"), MaxOrderNotionalUSDT: dec("400"), MaxOrdersPerMinute: intp(5)})
	if _, e := te.place(t, limitArgs("0.02", "30000")); e == nil || e.Details["limit"] != "max_order_notional_usdt" || e.Details["allowed"] != "400" {
		t.Fatalf("one large order: %v", e)
	}
	long, e := te.place(t, marketArgs("Buy", "0.002"))
	if e != nil {
		t.Fatal(e)
	}
	for i, p := range []string{"30000", "30000.1"} {
		if _, e := te.place(t, limitArgs("0.01", p)); e != nil {
			t.Fatalf("split order %d: %v", i, e)
		}
	}
	_, e = te.place(t, limitArgs("0.01", "30000.3"))
	if e == nil || e.Code != messages.CodeLimitExceeded || e.Details["limit"] != "daily_notional_cap_usdt" || e.Details["allowed"] != "1000" {
		t.Fatalf("third split order after %s of market buy: %v", long.NotionalUSDT, e)
	}
	// Reduce-only orders do not count against the daily cap nor the
	// rates, and are not limited by them (D51).
	reduce := limitArgs("0.001", "90000")
	reduce.Side, reduce.ReduceOnly = "Sell", true
	if _, e := te.place(t, reduce); e != nil {
		t.Fatalf("reduce-only after the daily cap: %v", e)
	}
	reduce.Price = decimal.NewNullDecimal(decimal.RequireFromString("90000.1"))
	if _, e := te.place(t, reduce); e != nil {
		t.Fatalf("second reduce-only: %v", e)
	}
	reduce.Price = decimal.NewNullDecimal(decimal.RequireFromString("90000.2"))
	if _, e = te.place(t, reduce); e != nil {
		t.Fatalf("sixth order in a minute, reduce-only: %v", e)
	}
	daily, perMinute, _ := te.snapshot(t).Counters.Window(time.Now(), "paper")
	if perMinute != 3 || !daily.IsPositive() {
		t.Fatalf("rate window after 3 risk-increasing and 3 reduce-only orders: %d", perMinute)
	}
}

// Idempotency: the same key and arguments (in another decimal spelling)
// get the first answer as a replay and send nothing; other arguments are
// a conflict; a dry run claims no key; claims survive a restart.
func TestPlaceIdempotency(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	dry := limitArgs("0.01", "30000")
	dry.IdempotencyKey, dry.DryRun = "k-1", true
	prev, e := te.place(t, dry)
	if e != nil || prev.Status != messages.AnswerPreview || prev.ClientOrderID != "" {
		t.Fatalf("dry run: %+v %v", prev, e)
	}
	if countRecords(t, dir, messages.RecordOrderAttempt) != 0 {
		t.Fatal("a dry run journaled an attempt")
	}
	a := limitArgs("0.01", "30000")
	a.IdempotencyKey = "k-1"
	first, e := te.place(t, a)
	if e != nil || first.ResultSource != "venue" {
		t.Fatalf("first: %+v %v", first, e)
	}
	again := limitArgs("0.0100", "30000.00")
	again.IdempotencyKey = "k-1"
	rep, e := te.place(t, again)
	if e != nil || rep.ResultSource != messages.ResultSourceReplay || rep.ClientOrderID != first.ClientOrderID || rep.OrderID != first.OrderID {
		t.Fatalf("replay: %+v %v", rep, e)
	}
	other := limitArgs("0.02", "30000")
	other.IdempotencyKey = "k-1"
	if _, e := te.place(t, other); e == nil || e.Code != messages.CodeIdempotencyConflict {
		t.Fatalf("other arguments: %v", e)
	}
	if te.simOrders(t, first.ClientOrderID) != 1 || countRecords(t, dir, messages.RecordOrderAttempt) != 1 || countRecords(t, dir, messages.RecordOrderRepeat) != 2 {
		t.Fatal("a repeat was sent, or not journaled as order_repeat")
	}
	te.stop()
	te.testSystem = te.start(t, dir)
	rep2, e := te.place(t, again)
	if e != nil || rep2.ResultSource != messages.ResultSourceReplay || rep2.ClientOrderID != first.ClientOrderID {
		t.Fatalf("replay after restart: %+v %v", rep2, e)
	}
}

// Without a key, an identical risk-increasing order (after rounding)
// within 30 s is a repeat; a reduce-only one is not deduplicated; a different one goes.
func TestPlaceSafetyNet(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	first, e := te.place(t, limitArgs("0.01", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	rep, e := te.place(t, limitArgs("0.010", "30000"))
	if e != nil || rep.ResultSource != messages.ResultSourceReplay || rep.ClientOrderID != first.ClientOrderID {
		t.Fatalf("identical order: %+v %v", rep, e)
	}
	// Another spelling that rounds to the same planned qty is the same
	// order (D55).
	rep, e = te.place(t, limitArgs("0.0109", "30000"))
	if e != nil || rep.ResultSource != messages.ResultSourceReplay || rep.ClientOrderID != first.ClientOrderID {
		t.Fatalf("an order whose qty rounds to the same: %+v %v", rep, e)
	}
	if _, e := te.place(t, limitArgs("0.01", "30000.1")); e != nil {
		t.Fatalf("a different order: %v", e)
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}
	// Reduce-only orders are never deduplicated without a key.
	if _, e := te.place(t, marketArgs("Buy", "0.002")); e != nil {
		t.Fatal(e)
	}
	reduce := limitArgs("0.001", "90000")
	reduce.Side, reduce.ReduceOnly = "Sell", true
	r1, e1 := te.place(t, reduce)
	r2, e2 := te.place(t, reduce)
	if e1 != nil || e2 != nil || r2.ResultSource == messages.ResultSourceReplay || r1.ClientOrderID == r2.ClientOrderID {
		t.Fatalf("identical reduce-only orders: %+v %v / %+v %v", r1, e1, r2, e2)
	}
}

// While the first call with a key is at the venue, the same call is
// outcome_unknown "in_progress" and sends nothing; a venue rate limit
// decides nothing, so it frees the key and the same call may go again.
func TestPlaceInProgressAndReleasedKey(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	te.simPost(t, "/sim/faults", `{"kind":"delay","path":"/v5/order/create","count":1,"delay_ms":600}`)
	a := limitArgs("0.01", "30000")
	a.IdempotencyKey = "slow"
	done := make(chan *messages.OrderAnswer, 1)
	go func() {
		ans, _ := te.place(t, a)
		done <- ans
	}()
	var e *messages.Error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if countRecords(t, dir, messages.RecordOrderAttempt) == 1 {
			_, e = te.place(t, a)
			break
		}
	}
	if e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["reason"] != "in_progress" {
		t.Fatalf("second call while the first runs: %v", e)
	}
	first := <-done
	if first == nil || te.simOrders(t, first.ClientOrderID) != 1 {
		t.Fatalf("first call: %+v", first)
	}

	te.fault(t, "rate_limit", "/v5/order/create")
	b := limitArgs("0.01", "30000.5")
	b.IdempotencyKey = "limited"
	if _, e := te.place(t, b); e == nil || e.Code != messages.CodeRateLimited {
		t.Fatalf("rate limited: %v", e)
	}
	ok, e := te.place(t, b)
	if e != nil || ok.ResultSource != "venue" || te.simOrders(t, ok.ClientOrderID) != 1 {
		t.Fatalf("retry after a released key: %+v %v", ok, e)
	}
}

// An order whose outcome stayed unknown (the look-up failed too) blocks
// an identical one without a key until it is reconciled.
func TestPlaceSafetyNetHoldsOpenUnknown(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	te.fault(t, "http_5xx", "/v5/order/create")
	te.simPost(t, "/sim/faults", `{"kind":"http_5xx","path":"/v5/order/realtime","count":50}`)
	if _, e := te.place(t, limitArgs("0.01", "30000")); e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["reconnaissance"] != "failed" {
		t.Fatalf("unknown outcome: %v", e)
	}
	te.clearFaults(t)
	_, e := te.place(t, limitArgs("0.01", "30000"))
	if e == nil || e.Details["reason"] != "in_progress" {
		t.Fatalf("identical order while the first is unknown: %v", e)
	}
	if n := countRecords(t, dir, messages.RecordOrderAttempt); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

// BenchmarkPlaceOrder measures one place_order through the whole path
// (market read, decision, attempt fsync, venue write and read-back over
// loopback, outcome fsync) against the simulator. Each b.N starts a new
// server and journal, so the day's orders are the run's own (0 to b.N);
// the decision must not depend on them (D144): p50-late-over-early is the
// p50 of the last quarter of calls over the first quarter's, about 1 when
// flat. Each order is cancelled again with the timer stopped: the venue's
// funds check visits every open order (as Bybit's 500 open orders per
// symbol bound them), and resting orders piling up to b.N would make the
// venue, not the server, grow with the iteration count (D147).
func BenchmarkPlaceOrder(b *testing.B) {
	te := newTradeEnv(b, b.TempDir())
	te.tradeReady(b, messages.PolicySettings{MaxOrdersPerMinute: intp(100000), MaxUnconfirmedActionsPerHour: intp(100000),
		DailyNotionalCapUSDT: dec("1000000000")})
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := decimal.NewFromInt(20000).Add(decimal.New(int64(i%10000), -1))
		d, ans := placeUnlimited(b, te, limitArgs("0.001", p.String()))
		ds = append(ds, d)
		b.StopTimer()
		if _, e := te.cancel(b, cancelArgs(ans.OrderID)); e != nil && e.Code != messages.CodeRateLimited {
			b.Fatal(e)
		}
		b.StartTimer()
	}
	b.StopTimer()
	reportP50(b, ds)
}

// reportP50 reports the median of ds, and the median of its last quarter
// over its first quarter's (p50-late-over-early): whether a call got
// slower as the run went on.
func reportP50(b *testing.B, ds []time.Duration) {
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	if len(ds) == 0 {
		return
	}
	b.ReportMetric(float64(med(ds).Nanoseconds())/1000, "p50-µs")
	if q := len(ds) / 4; q > 0 {
		b.ReportMetric(float64(med(ds[len(ds)-q:]))/float64(max(med(ds[:q]), 1)), "p50-late-over-early")
	}
}

// placeUnlimited places a, waiting out the simulator's per-key rate
// limits (Bybit's) with the benchmark timer stopped, so that the number
// measures the server's path, not the venue's limit. It returns the time
// the call that went through took, and its answer.
func placeUnlimited(b *testing.B, te *tradeEnv, a messages.PlaceOrderArgs) (time.Duration, *messages.OrderAnswer) {
	for {
		start := time.Now()
		ans, e := te.place(b, a)
		if e == nil {
			return time.Since(start), ans
		}
		if e.Code != messages.CodeRateLimited {
			b.Fatal(e)
		}
		b.StopTimer()
		time.Sleep(200 * time.Millisecond)
		b.StartTimer()
	}
}

// BenchmarkPlaceOrderDryRun measures a preview: market read and decision,
// nothing journaled or sent.
func BenchmarkPlaceOrderDryRun(b *testing.B) {
	te := newTradeEnv(b, b.TempDir())
	te.tradeReady(b, messages.PolicySettings{})
	a := limitArgs("0.001", "30000")
	a.DryRun = true
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		placeUnlimited(b, te, a)
	}
}

// The limits are in USDT: an instrument quoted or settled in another coin
// is refused for risk-increasing orders (fails closed); a reduce-only
// order on it is still decided.
func TestPlaceRefusesNonUSDTQuote(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	c := te.outside(t)
	ctx := context.Background()
	in, err := c.Instrument(ctx, messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := c.Ticker(ctx, messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	pos := &messages.Position{Symbol: "BTCUSDT", Side: "Buy", Size: decimal.RequireFromString("0.01"), Leverage: decimal.NewFromInt(1)}
	st := te.snapshot(t)
	// tradeReady's empty confirm_actions is a nil slice, journaled as
	// null: the replayed state has the default list again.
	none := []string{}
	st.Ceiling.ConfirmActions = &none
	decide := func(in *messages.Instrument, a messages.PlaceOrderArgs) *messages.Error {
		m := risk.Market{Instrument: in, Ticker: tk, Position: pos, PositionRead: true}
		_, _, e := risk.DecidePlace(st, risk.ToolPlaceOrder, a, messages.VenuePaper, "paper", m, risk.Reservation{}, time.Now())
		return e
	}
	buy := limitArgs("0.001", "30000")
	if e := decide(in, buy); e != nil {
		t.Fatalf("a USDT instrument: %v", e)
	}
	for _, coins := range [][2]string{{"USDC", "USDC"}, {"USDT", "USDC"}, {"", ""}} {
		other := *in
		other.QuoteCoin, other.SettleCoin = coins[0], coins[1]
		if e := decide(&other, buy); e == nil || e.Code != messages.CodeInstrumentRuleViolation || e.Details["rule"] != "quote_coin" {
			t.Fatalf("quote %q settle %q: %v", coins[0], coins[1], e)
		}
		reduce := limitArgs("0.001", "90000")
		reduce.Side, reduce.ReduceOnly = "Sell", true
		if e := decide(&other, reduce); e != nil {
			t.Fatalf("reduce-only on quote %q: %v", coins[0], e)
		}
	}
}
