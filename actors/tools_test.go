package actors

import (
	"reflect"
	"slices"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
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
// trading call waits for it, D63).
func missingParts(d *toolDescriptor) []string {
	var missing []string
	v := reflect.ValueOf(d).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Func:
			if f.IsNil() {
				missing = append(missing, name)
			}
		case reflect.String, reflect.Uint8, reflect.Bool:
			if f.IsZero() {
				missing = append(missing, name)
			}
		default:
			missing = append(missing, name+" (a kind of part this test does not check)")
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
