package actors

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Every trading tool is a descriptor with every part: the driver and the
// rest of the user actor look tools up in the registry, so a part left
// out would only show at run time (a repeat that cannot decode its
// answer, an approval that cannot run, a call not held during a key
// re-check). The registry and messages.TradingTools name the same tools.
func TestEveryToolDescriptorIsComplete(t *testing.T) {
	if len(tradingTools) != len(messages.TradingTools) {
		t.Errorf("%d descriptors for the %d tools of messages.TradingTools", len(tradingTools), len(messages.TradingTools))
	}
	for _, name := range messages.TradingTools {
		switch d := toolOf(name); {
		case d == nil:
			t.Errorf("trading tool %s has no descriptor", name)
		case d.Tool != nil && d.Name != name:
			t.Errorf("descriptor registered as %s is named %s", name, d.Name)
		default:
			for _, missing := range missingParts(d) {
				t.Errorf("descriptor %s lacks its %s", name, missing)
			}
		}
	}
}

// missingParts names the parts of d that are not set, in either half:
// its pure half (risk.Tool, which must be there) and its carry-out half,
// a nil function, an empty name, no read, or a tool a key re-check does
// not hold (every trading call waits for it, D63). It runs on the
// registered descriptors: the optional parts have their defaults by then
// (register, risk.Register), so only a required part can be missing.
func missingParts(d *toolDescriptor) []string { return risk.MissingParts(d) }

// The completeness test names a part left out of either half: the pure
// half (risk.Tool, or one of its parts) and the carry-out half.
func TestMissingPartsNamesEitherHalf(t *testing.T) {
	if got := missingParts(placeOrderTool); len(got) != 0 {
		t.Fatalf("place_order as registered lacks %v", got)
	}
	pure := *placeOrderTool.Tool
	pure.Decide, pure.Validate = nil, nil
	d := *placeOrderTool
	d.Tool, d.complete = &pure, nil
	if got := missingParts(&d); !slices.Equal(got, []string{"Validate", "Decide", "complete"}) {
		t.Fatalf("a descriptor without Validate, Decide and complete: missing %v", got)
	}
	d.Tool = nil
	if got := missingParts(&d); !slices.Equal(got, []string{"Tool", "complete"}) {
		t.Fatalf("a descriptor without its pure half: missing %v", got)
	}
}

// A trading call's arguments are validated once, at the boundary (Submit):
// the driver trusts them, and an approved confirmation's run trusts the
// arguments it parked (they were validated before they were parked).
func TestToolArgumentsValidatedOnce(t *testing.T) {
	calls := countValidations(t)
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

// The boundary (Submit, which the MCP handlers call) validates a trading
// call in the caller's goroutine, before any actor hop (D139): a valid
// call is checked once on its way to the driver, an invalid one is
// refused without reaching a user actor (the user's actor is not even
// started).
func TestTradingArgumentsValidatedAtTheBoundary(t *testing.T) {
	calls := countValidations(t)
	te := newTradeEnv(t, t.TempDir())
	te.tradeReady(t, messages.PolicySettings{})
	a := limitArgs("0.001", "30000")
	a.DryRun = true
	res, err := te.Submit(context.Background(), &messages.PlaceOrderCommand{User: te.user, Args: a}, agentOrigin)
	if ans, ok := res.(*messages.OrderAnswer); err != nil || !ok || ans.Status != messages.AnswerPreview {
		t.Fatalf("a valid dry run: %v %v", res, err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("a valid call was validated %d times, want 1", n)
	}
	bad := a
	bad.Side = "buy"
	_, err = te.Submit(context.Background(), &messages.PlaceOrderCommand{User: "nobody-yet", Args: bad}, agentOrigin)
	if e := messages.AsError(err); e == nil || e.Code != messages.CodeInvalidParams || e.Details["field"] != "side" {
		t.Fatalf("an invalid call: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("after an invalid call: %d validations, want 2", n)
	}
	if pid := te.registry.get("nobody-yet"); pid != nil {
		t.Fatalf("an invalid call started the user's actor %v", pid)
	}
}

// countValidations counts place_order's validations until the test ends.
func countValidations(t *testing.T) *atomic.Int32 {
	var calls atomic.Int32
	validate := placeOrderTool.Validate
	placeOrderTool.Validate = func(args any) *messages.Error {
		calls.Add(1)
		return validate(args)
	}
	t.Cleanup(func() { placeOrderTool.Validate = validate })
	return &calls
}
