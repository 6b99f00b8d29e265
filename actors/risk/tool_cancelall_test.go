package risk

import (
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The venue's snapshot is the exchange's text: an open order whose id is
// not shaped like an order id is never planned (shown to the human or the
// agent, or sent back to the venue); the others are, and an approved
// cancel-all keeps to the orders its plan showed.
func TestCancelAllCandidatesMalformedIDs(t *testing.T) {
	good, other := "0bd5c5a4-2f53-4d3e-9b8e-1e2f3a4b5c6d", "1234567890"
	orders := []messages.Order{
		{OrderID: good, Symbol: "BTCUSDT", Status: "New"},
		{OrderID: "abc\x1b]0;pwned\x07\x1b[2K\rALL CLEAR", Symbol: "BTCUSDT", Status: "New"},
		{OrderID: "", Symbol: "BTCUSDT", Status: "PartiallyFilled"},
		{OrderID: strings.Repeat("a", 65), Symbol: "BTCUSDT", Status: "New"},
		{OrderID: other, Symbol: "BTCUSDT", Status: "PartiallyFilled"},
		{OrderID: "x y", Symbol: "ETHUSDT", Status: "New"}, // another symbol: not counted
		{OrderID: "filled", Symbol: "BTCUSDT", Status: "Filled"},
	}
	plain, malformed, _ := cancelAllCandidates(orders, "BTCUSDT", nil)
	if malformed != 3 || len(plain) != 2 || plain[0].OrderID != good || plain[1].OrderID != other {
		t.Fatalf("planned %+v, malformed %d", plain, malformed)
	}
	shown := &messages.ShownToUser{CancelAll: &messages.CancelAllAnswer{Orders: []messages.CancelAllRow{{OrderID: other}}}}
	plain, malformed, _ = cancelAllCandidates(orders, "BTCUSDT", shown)
	if malformed != 3 || len(plain) != 1 || plain[0].OrderID != other {
		t.Fatalf("approved plan: planned %+v, malformed %d", plain, malformed)
	}
	if plain, _, _ := cancelAllCandidates(orders, "BTCUSDT", &messages.ShownToUser{}); len(plain) != 0 {
		t.Fatalf("a plan without cancel-all rows cancels %+v", plain)
	}
}
