package risk

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Which orders protect a position (D73): every sign Bybit gives of a
// conditional order, and reduce-only; a plain order, with Bybit's
// spellings of "none", does not.
func TestProtectiveOrder(t *testing.T) {
	plain := messages.Order{Status: "New", StopOrderType: "", TriggerPrice: decimal.Zero}
	cases := []struct {
		name        string
		edit        func(*messages.Order)
		conditional bool
		protective  bool
	}{
		{"plain", func(*messages.Order) {}, false, false},
		{"plain, stopOrderType UNKNOWN", func(o *messages.Order) { o.StopOrderType = "UNKNOWN" }, false, false},
		{"partly filled", func(o *messages.Order) { o.Status = "PartiallyFilled" }, false, false},
		{"reduce-only", func(o *messages.Order) { o.ReduceOnly = true }, false, true},
		{"untriggered", func(o *messages.Order) { o.Status = "Untriggered" }, true, true},
		{"triggered", func(o *messages.Order) { o.Status = "Triggered" }, true, true},
		{"a position's stop-loss", func(o *messages.Order) { o.StopOrderType = "StopLoss" }, true, true},
		{"a trailing stop", func(o *messages.Order) { o.StopOrderType = "TrailingStop" }, true, true},
		{"a conditional stop", func(o *messages.Order) { o.StopOrderType = "Stop" }, true, true},
		{"a trigger price", func(o *messages.Order) { o.TriggerPrice = decimal.RequireFromString("58000") }, true, true},
		{"close on trigger", func(o *messages.Order) { o.CloseOnTrigger = true }, true, true},
	}
	for _, c := range cases {
		o := plain
		c.edit(&o)
		if got := conditionalOrder(&o); got != c.conditional {
			t.Errorf("%s: conditional %v, want %v", c.name, got, c.conditional)
		}
		if got := protectiveOrder(&o); got != c.protective {
			t.Errorf("%s: protective %v, want %v", c.name, got, c.protective)
		}
	}
}
