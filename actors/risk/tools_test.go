package risk

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// Every trading tool has its pure half with every part, and the registry
// and messages.TradingTools name the same tools (actors' completeness test
// checks both halves of each descriptor).
func TestEveryToolIsComplete(t *testing.T) {
	for _, name := range messages.TradingTools {
		if Of(name) == nil {
			t.Errorf("trading tool %s has no pure half", name)
		}
	}
	for name, tl := range tools {
		if !slices.Contains(messages.TradingTools, name) {
			t.Errorf("tool %s is not in messages.TradingTools", name)
		}
		if tl.Name != name {
			t.Errorf("tool registered as %s is named %s", name, tl.Name)
		}
		for _, missing := range MissingParts(tl) {
			t.Errorf("tool %s lacks its %s", name, missing)
		}
	}
}

// Each descriptor recognises its own command and only its own, and gives
// back the command's arguments and ClientUI.
func TestToolDescriptorsKnowTheirCommands(t *testing.T) {
	cmds := map[string]messages.Command{
		ToolPlaceOrder:    &messages.PlaceOrderCommand{Args: messages.PlaceOrderArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		ToolCancelOrder:   &messages.CancelOrderCommand{Args: messages.CancelOrderArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		ToolAmendOrder:    &messages.AmendOrderCommand{Args: messages.AmendOrderArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		ToolCancelAll:     &messages.CancelAllCommand{Args: messages.CancelAllArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		ToolClosePosition: &messages.ClosePositionCommand{Args: messages.ClosePositionArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		ToolLeverage:      &messages.SetLeverageCommand{Args: messages.SetLeverageArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		ToolTradingStop:   &messages.TradingStopCommand{Args: messages.TradingStopArgs{Symbol: "BTCUSDT"}, ClientUI: true},
	}
	if len(cmds) != len(tools) {
		t.Fatalf("the test knows %d commands, the registry %d tools", len(cmds), len(tools))
	}
	for name, cmd := range cmds {
		d, args, clientUI := OfCommand(cmd)
		if d == nil || d.Name != name {
			t.Errorf("%s: command %T found descriptor %v", name, cmd, d)
			continue
		}
		if !clientUI || d.Base(args).Symbol != "BTCUSDT" {
			t.Errorf("%s: ClientUI %v, arguments %+v", name, clientUI, args)
		}
	}
	if d, _, _ := OfCommand(&messages.ShowPolicyRequest{}); d != nil {
		t.Errorf("a command of no trading tool found descriptor %s", d.Name)
	}
}

// Each descriptor's base (argsOf) gives back what every trading call has:
// the instrument, the key and the dry run, and the order id of the tools
// that name an order.
func TestToolBaseOfEveryTool(t *testing.T) {
	const lin = messages.CategoryLinear
	cases := map[string]struct {
		args    any
		orderID string
	}{
		ToolPlaceOrder:    {args: messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		ToolCancelOrder:   {args: messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true, OrderID: "o-1"}, orderID: "o-1"},
		ToolAmendOrder:    {args: messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true, OrderID: "o-2"}, orderID: "o-2"},
		ToolCancelAll:     {args: messages.CancelAllArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		ToolClosePosition: {args: messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		ToolLeverage:      {args: messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		ToolTradingStop:   {args: messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
	}
	if len(cases) != len(tools) {
		t.Fatalf("the test knows %d tools, the registry %d", len(cases), len(tools))
	}
	for name, c := range cases {
		want := CallBase{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true, OrderID: c.orderID}
		if got := Of(name).Base(c.args); got != want {
			t.Errorf("%s: base %+v, want %+v", name, got, want)
		}
	}
}

// Each tool's validate, run without actors: the first bad field, named
// with the words the agent has always been told (those of the MCP parse,
// which now only decodes: D140). Each field's own form is checked first,
// in the order the fields are listed, then the tool's rules, so that of
// several faults the one named is the one the agent was always told.
func TestToolValidationTable(t *testing.T) {
	d := decimal.RequireFromString
	nd := func(s string) decimal.NullDecimal { return decimal.NewNullDecimal(d(s)) }
	const lin, spot = messages.CategoryLinear, messages.CategorySpot
	cases := []struct {
		tool string
		args any
		want string // the message; "" when valid
	}{
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, ""},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: "inverse", Symbol: "x", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, "invalid symbol: must match ^[A-Z0-9]{2,30}$ (uppercase, e.g. BTCUSDT)"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: "inverse", Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, "invalid category: must be one of \"spot\", \"linear\""},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "btc", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, "invalid symbol: must match ^[A-Z0-9]{2,30}$ (uppercase, e.g. BTCUSDT)"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "buy", OrderType: "Market", Qty: d("0.01")}, "invalid side: must be one of \"Buy\", \"Sell\""},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Stop", Qty: d("0.01")}, "invalid order_type: must be one of \"Limit\", \"Market\""},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", Qty: d("0")}, "invalid qty: must be a positive decimal string"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", Qty: d("1")}, "invalid price: a Limit order needs a positive price"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("1"), Price: nd("1")}, "invalid price: a Market order takes no price; the server sets the worst price from slippage_pct"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("1"), IdempotencyKey: "a b"}, "invalid idempotency_key: must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: spot, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("1"), ReduceOnly: true}, "invalid reduce_only: reduce-only orders exist on linear only"},
		{ToolCancelOrder, messages.CancelOrderArgs{Category: spot, Symbol: "BTCUSDT", OrderID: "abc-1"}, ""},
		{ToolCancelOrder, messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "../x"}, "invalid order_id: must be the order_id of get_open_orders"},
		{ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc"}, "invalid qty: give qty, price or both"},
		{ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc", Qty: nd("0")}, "invalid qty: must be a positive decimal string"},
		{ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc", Price: nd("0")}, "invalid price: must be a positive decimal string"},
		{ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc", Price: nd("1")}, ""},
		{ToolCancelAll, messages.CancelAllArgs{Category: lin, Symbol: "BTC USDT"}, "invalid symbol: must match ^[A-Z0-9]{2,30}$ (uppercase, e.g. BTCUSDT)"},
		{ToolCancelAll, messages.CancelAllArgs{Category: spot, Symbol: "BTCUSDT"}, ""},
		{ToolClosePosition, messages.ClosePositionArgs{Category: spot, Symbol: "BTCUSDT"}, "invalid category: positions exist on linear only"},
		{ToolClosePosition, messages.ClosePositionArgs{Category: "x", Symbol: "BTCUSDT"}, "invalid category: must be one of \"spot\", \"linear\""},
		{ToolClosePosition, messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT", Qty: d("-1")}, "invalid qty: must be a positive decimal string"},
		{ToolClosePosition, messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT"}, ""},
		{ToolLeverage, messages.SetLeverageArgs{Category: spot, Symbol: "BTCUSDT", Leverage: d("2")}, "invalid category: leverage exists on linear only"},
		{ToolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT"}, "invalid leverage: must be a positive decimal string"},
		{ToolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2")}, ""},
		{ToolLeverage, messages.SetLeverageArgs{Category: spot, Symbol: "BTCUSDT", IdempotencyKey: "a b"}, "invalid idempotency_key: must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"},
		{ToolPlaceOrder, messages.PlaceOrderArgs{Category: spot, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", ReduceOnly: true, IdempotencyKey: "a b"}, "invalid idempotency_key: must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"},
		{ToolCancelOrder, messages.CancelOrderArgs{Category: "x", Symbol: "BTCUSDT", OrderID: "../x", IdempotencyKey: "a b"}, "invalid category: must be one of \"spot\", \"linear\""},
		{ToolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT"}, "invalid take_profit: give take_profit, stop_loss or both"},
		{ToolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", TakeProfit: nd("0")}, "invalid take_profit: must be a positive price"},
		{ToolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("0")}, "invalid stop_loss: must be a positive price"},
		{ToolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("1"), IdempotencyKey: "k/1"}, "invalid idempotency_key: must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"},
		{ToolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("1")}, ""},
	}
	for i, c := range cases {
		e := Of(c.tool).Validate(c.args)
		switch {
		case c.want == "" && e != nil:
			t.Errorf("%d %s: refused valid arguments: %s", i, c.tool, e.Message)
		case c.want != "" && (e == nil || e.Code != messages.CodeInvalidParams || e.Message != c.want):
			t.Errorf("%d %s: got %v, want %q", i, c.tool, e, c.want)
		case e != nil && strings.Contains(c.want, "linear only") && e.Details["reason"] != "linear_only":
			t.Errorf("%d %s: reason %v, want linear_only", i, c.tool, e.Details["reason"])
		}
	}
}

// The tools' decisions are pure: run here without actors, journal or
// venue, on what a read would have shown. These are the refusals that
// come from the read alone (the user's state is empty, so a decision
// that reaches the gate is refused with not_found "no such user").
func TestToolDecisionsWithoutActors(t *testing.T) {
	d := decimal.RequireFromString
	nd := func(s string) decimal.NullDecimal { return decimal.NewNullDecimal(d(s)) }
	const lin = messages.CategoryLinear
	inst := &messages.Instrument{Symbol: "BTCUSDT", Status: "Trading", HasLeverage: true, MinLeverage: d("1"), MaxLeverage: d("100"),
		LeverageStep: d("0.5"), TickSize: d("0.1"), QtyStep: d("0.001"), MinOrderQty: d("0.001")}
	long := &messages.Position{Symbol: "BTCUSDT", Side: "Buy", Size: d("0.5"), Leverage: d("5")}
	order := &messages.Order{OrderID: "o-1", Symbol: "BTCUSDT", Side: "Buy", Qty: d("1"), Price: d("100"), Status: "New"}
	odd := *order
	odd.Side = "Sideways"
	cases := []struct {
		name   string
		tool   string
		args   any
		read   VenueRead
		code   messages.Code
		detail string // a details value the refusal carries ("" for none)
	}{
		{"leverage without instrument", ToolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2")}, VenueRead{}, messages.CodeInstrumentRuleViolation, "leverage"},
		{"leverage out of range", ToolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("200")}, VenueRead{Market: Market{Instrument: inst}}, messages.CodeInstrumentRuleViolation, "leverage_range"},
		{"leverage off step", ToolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2.3")}, VenueRead{Market: Market{Instrument: inst}}, messages.CodeInstrumentRuleViolation, "leverage_step"},
		{"leverage reaches the gate", ToolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2")}, VenueRead{Market: Market{Instrument: inst, Position: long}}, messages.CodeNotFound, ""},
		{"stop on an unreadable position", ToolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("90")},
			VenueRead{Market: Market{Instrument: inst, Position: &messages.Position{Symbol: "BTCUSDT", Side: "Up", Size: d("1")}}}, messages.CodeExchangeUnavailable, messages.ReasonMalformedResult},
		{"amend of no open order", ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Qty: nd("2")}, VenueRead{Market: Market{Instrument: inst}}, messages.CodeNotFound, ""},
		{"amend of an unreadable side", ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Qty: nd("2")}, VenueRead{Order: &odd, Market: Market{Instrument: inst}}, messages.CodeExchangeUnavailable, messages.ReasonMalformedResult},
		{"amend off the tick", ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Price: nd("100.05")}, VenueRead{Order: order, Market: Market{Instrument: inst}}, messages.CodeInstrumentRuleViolation, "tick_size"},
		{"amend without rules", ToolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Price: nd("101")}, VenueRead{Order: order}, messages.CodeInstrumentRuleViolation, "status"},
		{"cancel reaches the gate first", ToolCancelOrder, messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1"}, VenueRead{}, messages.CodeNotFound, ""},
		{"close without a position", ToolClosePosition, messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT"}, VenueRead{Market: Market{Instrument: inst}}, messages.CodeNotFound, "position_not_found"},
	}
	for _, c := range cases {
		desc := Of(c.tool)
		in := &Input{Tool: c.tool, Args: c.args, Hash: desc.Hash(c.args), State: &state.User{User: "pure"}, Venue: messages.VenuePaper,
			Env: "paper", Now: time.Unix(1_700_000_000, 0), Read: c.read}
		e := desc.Prepare(in)
		if e == nil {
			e = desc.Decide(in).Refusal
		}
		if e == nil || e.Code != c.code {
			t.Errorf("%s: refusal %v, want %s", c.name, e, c.code)
			continue
		}
		if c.detail != "" && e.Details["rule"] != c.detail && e.Details["reason"] != c.detail {
			t.Errorf("%s: details %v, want %s", c.name, e.Details, c.detail)
		}
	}
}

// close_position's order comes from the position: the opposite side, all
// of it unless a qty is given; an approved order whose side changed since
// the human saw it is refused.
func TestPrepareOrderFromPositionAndPlanShown(t *testing.T) {
	d := decimal.RequireFromString
	short := &messages.Position{Symbol: "BTCUSDT", Side: "Sell", Size: d("0.3"), Leverage: d("5")}
	in := &Input{Tool: ToolClosePosition, Args: messages.ClosePositionArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"},
		State: &state.User{}, Read: VenueRead{Market: Market{Position: short}}}
	if e := prepareClose(in); e != nil {
		t.Fatal(e)
	}
	if a := in.Args.(messages.PlaceOrderArgs); a.Side != "Buy" || !a.Qty.Equal(d("0.3")) || !a.ReduceOnly || a.OrderType != "Market" {
		t.Fatalf("close of a short planned %+v", a)
	}
	shown := &messages.ShownToUser{Order: &messages.OrderAnswer{Side: "Sell", Qty: d("0.3")}}
	in = &Input{Tool: ToolClosePosition, Args: messages.ClosePositionArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"},
		State: &state.User{}, Shown: shown, Approved: true, Read: VenueRead{Market: Market{Position: short}}}
	if e := prepareClose(in); e == nil || e.Details["reason"] != "risk_direction_changed" {
		t.Fatalf("an approved close whose side changed: %v", e)
	}
}

// The decision of the step over many shapes of the market and policy: a
// step exists only for a new linear order with no position open and a
// leverage above max_leverage, and it always sets a value below the one
// shown, at or below max_leverage, on the instrument's step and within
// its range.
func TestLeverageStepOfOnlyLowers(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	pick := func(vals ...string) decimal.Decimal { return decimal.RequireFromString(vals[rng.IntN(len(vals))]) }
	for i := range 20000 {
		in := &messages.Instrument{LeverageStep: pick("0", "0.01", "0.5", "1", "3"), MinLeverage: pick("0", "1", "2", "6"), MaxLeverage: pick("0", "4", "25", "100")}
		pos := &messages.Position{Symbol: "BTCUSDT", Leverage: pick("0", "1", "2.5", "5", "5.01", "10", "100"), Size: pick("0", "0", "0.001", "-0.001")}
		p := messages.Policy{MaxLeverage: pick("1", "2.75", "5", "10", "150")}
		a := messages.PlaceOrderArgs{Symbol: "BTCUSDT", Side: []string{"Buy", "Sell"}[rng.IntN(2)], OrderType: "Market", Qty: decimal.RequireFromString("0.001")}
		a.ReduceOnly = rng.IntN(4) == 0
		a.Category = []messages.Category{messages.CategoryLinear, messages.CategoryLinear, messages.CategorySpot}[rng.IntN(3)]
		tool := []string{ToolPlaceOrder, ToolPlaceOrder, ToolClosePosition}[rng.IntN(3)]
		m := Market{Instrument: in, Position: pos, PositionRead: rng.IntN(5) > 0, PushedOpen: rng.IntN(8) == 0}
		if rng.IntN(10) == 0 {
			m.Position = nil
		}
		step := leverageStepOf(tool, a, p, m)
		if step == nil {
			continue
		}
		switch {
		case tool != ToolPlaceOrder || a.ReduceOnly || a.Category != messages.CategoryLinear || !m.PositionRead:
			t.Fatalf("case %d: a step for %s reduce_only=%v %s read=%v", i, tool, a.ReduceOnly, a.Category, m.PositionRead)
		case !pos.Size.IsZero() || m.PushedOpen:
			t.Fatalf("case %d: a step with a position open (size %s, pushed %v)", i, pos.Size, m.PushedOpen)
		case !step.From.Equal(pos.Leverage) || !step.To.LessThan(step.From) || !step.To.IsPositive():
			t.Fatalf("case %d: the step %s -> %s does not lower", i, step.From, step.To)
		case step.To.GreaterThan(p.MaxLeverage):
			t.Fatalf("case %d: the step sets %s above max_leverage %s", i, step.To, p.MaxLeverage)
		case in.LeverageStep.IsPositive() && !step.To.Mod(in.LeverageStep).IsZero(),
			in.MinLeverage.IsPositive() && step.To.LessThan(in.MinLeverage),
			in.MaxLeverage.IsPositive() && step.To.GreaterThan(in.MaxLeverage):
			t.Fatalf("case %d: the step sets %s outside the instrument's rules %+v", i, step.To, in)
		}
	}
}

// The first risk gate decides on the user's state alone, in the risk
// direction the tool knows from its arguments: the kill switch stops a
// new order and lets a reduce-only one, a cancel and a close through; an
// instrument off the allowlist is refused either way.
func TestGateUsesTheToolsRiskDirection(t *testing.T) {
	const lin = messages.CategoryLinear
	open := state.NewFixture("ada").Trading("linear:BTCUSDT").WithKey("paper").Build()
	killed := state.NewFixture("ada").Trading("linear:BTCUSDT").WithKey("paper").WithKillSwitch(messages.KillSwitchUser).Build()
	buy := messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: decimal.RequireFromString("0.01")}
	reduce := buy
	reduce.ReduceOnly = true
	other := buy
	other.Symbol = "ETHUSDT"
	cancel := messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1"}
	closeAll := messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT"}
	cases := []struct {
		name string
		s    *state.User
		tool *Tool
		args any
		code messages.Code // "" when the gate lets it through
	}{
		{"a new order", open, PlaceOrder, buy, ""},
		{"a new order under the kill switch", killed, PlaceOrder, buy, messages.CodeKillSwitchActive},
		{"a reduce-only order under the kill switch", killed, PlaceOrder, reduce, ""},
		{"a cancel under the kill switch", killed, CancelOrder, cancel, ""},
		{"a close under the kill switch", killed, ClosePosition, closeAll, ""},
		{"a new order off the allowlist", open, PlaceOrder, other, messages.CodePermissionDenied},
	}
	for _, c := range cases {
		e := c.tool.Gate(c.s, messages.VenuePaper, "paper", c.args)
		switch {
		case c.code == "" && e != nil:
			t.Errorf("%s: refused %v", c.name, e)
		case c.code != "" && (e == nil || e.Code != c.code):
			t.Errorf("%s: %v, want %s", c.name, e, c.code)
		}
	}
}
