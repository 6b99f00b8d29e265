package sim

import (
	"testing"

	"github.com/shopspring/decimal"
)

// The floor under the walk holds: over a year of seconds and several
// seeds, no fair price falls below lowestFair, so MinOrderValues never
// says an order is too small when the simulator would take it.
func TestMinOrderValuesAreAFloor(t *testing.T) {
	c := newCatalog()
	for _, seed := range []int64{1, 2, 3, 42} {
		m := newModel(seed)
		for _, in := range c.list[catLinear] {
			low := lowestFair(in.under)
			for sec := int64(1_700_000_000); sec < 1_700_000_000+365*86400; sec += 3607 {
				if f := m.fair(in.under, sec); f < low {
					t.Fatalf("seed %d %s at %d: fair %f under the floor %f", seed, in.symbol, sec, f, low)
				}
			}
		}
	}
	mins := MinOrderValues()
	if len(mins) != len(c.list[catLinear])+len(c.list[catSpot]) {
		t.Fatalf("%d minimums: %v", len(mins), mins)
	}
	// The venue's own minimum value is the least a minimum can be.
	for k, v := range mins {
		if v.LessThan(decimal.NewFromInt(5)) {
			t.Fatalf("%s: %s under the venue's minimum order value", k, v)
		}
	}
}
