package actors

import (
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// Every trading tool is a descriptor with every part: the driver and the
// rest of the user actor look tools up in the registry, so a part left
// out would only show at run time (a repeat that cannot decode its
// answer, an approval that cannot run, a call not held during a key
// re-check). The registry and messages.TradingTools name the same tools.
func TestEveryToolDescriptorIsComplete(t *testing.T) {
	for _, name := range messages.TradingTools {
		if toolOf(name) == nil {
			t.Errorf("trading tool %s has no descriptor", name)
		}
	}
	for name, d := range tradingTools {
		if !slices.Contains(messages.TradingTools, name) {
			t.Errorf("descriptor %s is not in messages.TradingTools", name)
		}
		if d.name != name {
			t.Errorf("descriptor registered as %s is named %s", name, d.name)
		}
		for _, missing := range missingParts(d) {
			t.Errorf("descriptor %s lacks its %s", name, missing)
		}
	}
}

// missingParts names the fields of d that are not set: a nil function,
// an empty name, no read, or a tool a key re-check does not hold (every
// trading call waits for it, D63). The parts typed on the arguments
// (argParts) are checked one by one. It runs on the registered
// descriptors: the optional parts have their defaults by then
// (register), so only a required part can be missing.
func missingParts(d *toolDescriptor) []string {
	return unsetFields(reflect.ValueOf(d).Elem())
}

// unsetFields names the fields of the struct v that are not set, the
// fields of an embedded struct included.
func unsetFields(v reflect.Value) []string {
	var missing []string
	for i := range v.NumField() {
		f, field := v.Field(i), v.Type().Field(i)
		switch f.Kind() {
		case reflect.Func:
			if f.IsNil() {
				missing = append(missing, field.Name)
			}
		case reflect.String, reflect.Uint8, reflect.Bool:
			if f.IsZero() {
				missing = append(missing, field.Name)
			}
		case reflect.Struct:
			if field.Anonymous {
				missing = append(missing, unsetFields(f)...)
				continue
			}
			fallthrough
		default:
			missing = append(missing, field.Name+" (a kind of part this test does not check)")
		}
	}
	return missing
}

// Each descriptor recognises its own command and only its own, and gives
// back the command's arguments and ClientUI.
func TestToolDescriptorsKnowTheirCommands(t *testing.T) {
	cmds := map[string]messages.Command{
		toolPlaceOrder:    &messages.PlaceOrderCommand{Args: messages.PlaceOrderArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		toolCancelOrder:   &messages.CancelOrderCommand{Args: messages.CancelOrderArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		toolAmendOrder:    &messages.AmendOrderCommand{Args: messages.AmendOrderArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		toolCancelAll:     &messages.CancelAllCommand{Args: messages.CancelAllArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		toolClosePosition: &messages.ClosePositionCommand{Args: messages.ClosePositionArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		toolLeverage:      &messages.SetLeverageCommand{Args: messages.SetLeverageArgs{Symbol: "BTCUSDT"}, ClientUI: true},
		toolTradingStop:   &messages.TradingStopCommand{Args: messages.TradingStopArgs{Symbol: "BTCUSDT"}, ClientUI: true},
	}
	if len(cmds) != len(tradingTools) {
		t.Fatalf("the test knows %d commands, the registry %d tools", len(cmds), len(tradingTools))
	}
	for name, cmd := range cmds {
		d, args, clientUI := toolOfCommand(cmd)
		if d == nil || d.name != name {
			t.Errorf("%s: command %T found descriptor %v", name, cmd, d)
			continue
		}
		if !clientUI || d.base(args).symbol != "BTCUSDT" {
			t.Errorf("%s: ClientUI %v, arguments %+v", name, clientUI, args)
		}
	}
	if d, _, _ := toolOfCommand(&messages.ShowPolicyRequest{}); d != nil {
		t.Errorf("a command of no trading tool found descriptor %s", d.name)
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
		toolPlaceOrder:    {args: messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		toolCancelOrder:   {args: messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true, OrderID: "o-1"}, orderID: "o-1"},
		toolAmendOrder:    {args: messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true, OrderID: "o-2"}, orderID: "o-2"},
		toolCancelAll:     {args: messages.CancelAllArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		toolClosePosition: {args: messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		toolLeverage:      {args: messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
		toolTradingStop:   {args: messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", IdempotencyKey: "k", DryRun: true}},
	}
	if len(cases) != len(tradingTools) {
		t.Fatalf("the test knows %d tools, the registry %d", len(cases), len(tradingTools))
	}
	for name, c := range cases {
		want := callBase{category: lin, symbol: "BTCUSDT", idempotencyKey: "k", dryRun: true, orderID: c.orderID}
		if got := toolOf(name).base(c.args); got != want {
			t.Errorf("%s: base %+v, want %+v", name, got, want)
		}
	}
}

// A trading call's arguments are validated once, where the call enters
// the driver: an approved confirmation's run trusts the arguments it
// parked (they were validated before they were parked).
func TestToolArgumentsValidatedOnce(t *testing.T) {
	var calls atomic.Int32
	validate := placeOrderTool.validate
	placeOrderTool.validate = func(args any) *messages.Error {
		calls.Add(1)
		return validate(args)
	}
	t.Cleanup(func() { placeOrderTool.validate = validate })
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, cfMarketArgs("0.0105", "k-once"))
	if n := calls.Load(); n != 1 {
		t.Fatalf("parking validated the arguments %d times, want 1", n)
	}
	res, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	if e != nil {
		t.Fatal(e)
	}
	if ans, ok := res.(*messages.OrderAnswer); !ok || ans.Status != messages.AnswerAccepted {
		t.Fatalf("approved run answered %+v", res)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the call and its approved run validated the arguments %d times, want 1", n)
	}
}

// Each tool's validate, run without actors: the first bad field, named
// with the same words as before the descriptors existed.
func TestToolValidationTable(t *testing.T) {
	d := decimal.RequireFromString
	nd := func(s string) decimal.NullDecimal { return decimal.NewNullDecimal(d(s)) }
	const lin, spot = messages.CategoryLinear, messages.CategorySpot
	cases := []struct {
		tool string
		args any
		want string // the message; "" when valid
	}{
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, ""},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: "inverse", Symbol: "x", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, "invalid category: must be spot or linear"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "btc", Side: "Buy", OrderType: "Market", Qty: d("0.01")}, "invalid symbol: must be 2-30 of A-Z and 0-9"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "buy", OrderType: "Market", Qty: d("0.01")}, "invalid side: must be Buy or Sell"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Stop", Qty: d("0.01")}, "invalid order_type: must be Limit or Market"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", Qty: d("0")}, "invalid qty: must be a positive decimal string"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Limit", Qty: d("1")}, "invalid price: a Limit order needs a positive price"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("1"), Price: nd("1")}, "invalid price: a Market order takes no price; the server sets the worst price from slippage_pct"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: lin, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("1"), IdempotencyKey: "a b"}, "invalid idempotency_key: must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"},
		{toolPlaceOrder, messages.PlaceOrderArgs{Category: spot, Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: d("1"), ReduceOnly: true}, "invalid reduce_only: reduce-only orders exist on linear only"},
		{toolCancelOrder, messages.CancelOrderArgs{Category: spot, Symbol: "BTCUSDT", OrderID: "abc-1"}, ""},
		{toolCancelOrder, messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "../x"}, "invalid order_id: must be the venue's order id (1-64 of A-Z, a-z, 0-9 and '-')"},
		{toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc"}, "invalid qty: give qty, price or both"},
		{toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc", Qty: nd("0")}, "invalid qty: must be a positive decimal string"},
		{toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc", Price: nd("0")}, "invalid price: must be a positive decimal string"},
		{toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "abc", Price: nd("1")}, ""},
		{toolCancelAll, messages.CancelAllArgs{Category: lin, Symbol: "BTC USDT"}, "invalid symbol: must be 2-30 of A-Z and 0-9"},
		{toolCancelAll, messages.CancelAllArgs{Category: spot, Symbol: "BTCUSDT"}, ""},
		{toolClosePosition, messages.ClosePositionArgs{Category: spot, Symbol: "BTCUSDT"}, "invalid category: positions exist on linear only"},
		{toolClosePosition, messages.ClosePositionArgs{Category: "x", Symbol: "BTCUSDT"}, "invalid category: must be spot or linear"},
		{toolClosePosition, messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT", Qty: d("-1")}, "invalid qty: must be a positive decimal string"},
		{toolClosePosition, messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT"}, ""},
		{toolLeverage, messages.SetLeverageArgs{Category: spot, Symbol: "BTCUSDT", Leverage: d("2")}, "invalid category: leverage exists on linear only"},
		{toolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT"}, "invalid leverage: must be a positive decimal string"},
		{toolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2")}, ""},
		{toolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT"}, "invalid take_profit: give take_profit, stop_loss or both"},
		{toolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", TakeProfit: nd("0")}, "invalid take_profit: must be a positive price"},
		{toolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("0")}, "invalid stop_loss: must be a positive price"},
		{toolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("1"), IdempotencyKey: "k/1"}, "invalid idempotency_key: must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'"},
		{toolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("1")}, ""},
	}
	for i, c := range cases {
		e := toolOf(c.tool).validate(c.args)
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
		read   toolRead
		code   messages.Code
		detail string // a details value the refusal carries ("" for none)
	}{
		{"leverage without instrument", toolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2")}, toolRead{}, messages.CodeInstrumentRuleViolation, "leverage"},
		{"leverage out of range", toolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("200")}, toolRead{market: placeMarket{instrument: inst}}, messages.CodeInstrumentRuleViolation, "leverage_range"},
		{"leverage off step", toolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2.3")}, toolRead{market: placeMarket{instrument: inst}}, messages.CodeInstrumentRuleViolation, "leverage_step"},
		{"leverage reaches the gate", toolLeverage, messages.SetLeverageArgs{Category: lin, Symbol: "BTCUSDT", Leverage: d("2")}, toolRead{market: placeMarket{instrument: inst, position: long}}, messages.CodeNotFound, ""},
		{"stop on an unreadable position", toolTradingStop, messages.TradingStopArgs{Category: lin, Symbol: "BTCUSDT", StopLoss: nd("90")},
			toolRead{market: placeMarket{instrument: inst, position: &messages.Position{Symbol: "BTCUSDT", Side: "Up", Size: d("1")}}}, messages.CodeExchangeUnavailable, string(venue.FailMalformedResult)},
		{"amend of no open order", toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Qty: nd("2")}, toolRead{market: placeMarket{instrument: inst}}, messages.CodeNotFound, ""},
		{"amend of an unreadable side", toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Qty: nd("2")}, toolRead{order: &odd, market: placeMarket{instrument: inst}}, messages.CodeExchangeUnavailable, string(venue.FailMalformedResult)},
		{"amend off the tick", toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Price: nd("100.05")}, toolRead{order: order, market: placeMarket{instrument: inst}}, messages.CodeInstrumentRuleViolation, "tick_size"},
		{"amend without rules", toolAmendOrder, messages.AmendOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1", Price: nd("101")}, toolRead{order: order}, messages.CodeInstrumentRuleViolation, "status"},
		{"cancel reaches the gate first", toolCancelOrder, messages.CancelOrderArgs{Category: lin, Symbol: "BTCUSDT", OrderID: "o-1"}, toolRead{}, messages.CodeNotFound, ""},
		{"close without a position", toolClosePosition, messages.ClosePositionArgs{Category: lin, Symbol: "BTCUSDT"}, toolRead{market: placeMarket{instrument: inst}}, messages.CodeNotFound, "position_not_found"},
	}
	for _, c := range cases {
		desc := toolOf(c.tool)
		in := &decideIn{tool: c.tool, args: c.args, hash: desc.hash(c.args), state: &state.User{User: "pure"}, venue: messages.VenuePaper,
			env: "paper", now: time.Unix(1_700_000_000, 0), read: c.read}
		e := desc.prepare(in)
		if e == nil {
			e = desc.decide(in).refusal
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
	in := &decideIn{tool: toolClosePosition, args: messages.ClosePositionArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"},
		state: &state.User{}, read: toolRead{market: placeMarket{position: short}}}
	if e := prepareClose(in); e != nil {
		t.Fatal(e)
	}
	if a := in.args.(messages.PlaceOrderArgs); a.Side != "Buy" || !a.Qty.Equal(d("0.3")) || !a.ReduceOnly || a.OrderType != "Market" {
		t.Fatalf("close of a short planned %+v", a)
	}
	shown := &messages.ShownToUser{Order: &messages.OrderAnswer{Side: "Sell", Qty: d("0.3")}}
	in = &decideIn{tool: toolClosePosition, args: messages.ClosePositionArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"},
		state: &state.User{}, shown: shown, approved: true, read: toolRead{market: placeMarket{position: short}}}
	if e := prepareClose(in); e == nil || e.Details["reason"] != "risk_direction_changed" {
		t.Fatalf("an approved close whose side changed: %v", e)
	}
}
