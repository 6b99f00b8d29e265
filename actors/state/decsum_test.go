package state

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// decimalSum equals the plain decimal sum for every mix of terms added
// and taken out: small
// and large coefficients, exponents from -20 to 20, signs, and sums that
// overflow an int64 on the way.
func TestDecimalSumIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var s decimalSum
		want := decimal.Zero
		for range r.IntN(40) {
			var d decimal.Decimal
			switch r.IntN(5) {
			case 0: // a notional such as 30.0001
				d = decimal.New(r.Int64N(1e9), -int32(r.IntN(9)))
			case 1: // a coefficient near the int64 limit
				d = decimal.New(r.Int64N(1<<62)+1<<62, -int32(r.IntN(4)))
			case 2: // 19 to 30 digits
				d = decimal.RequireFromString(strconv.FormatUint(r.Uint64(), 10) + strconv.Itoa(r.IntN(1e9)))
			case 3: // extreme exponents
				d = decimal.New(r.Int64N(1000), int32(r.IntN(41))-20)
			default:
				d = decimal.New(-r.Int64N(1e12), -int32(r.IntN(12)))
			}
			if r.IntN(3) == 0 {
				s.sub(d)
				want = want.Sub(d)
			} else {
				s.add(d)
				want = want.Add(d)
			}
		}
		if got := s.value(); !got.Equal(want) {
			t.Fatalf("round %d: sum %s, want %s", round, got, want)
		}
	}
}

// The daily window sums with decimalSum: the same total as decimal.Add.
func TestWindowDailyNotional(t *testing.T) {
	now := time.Now()
	var c RollingCounters
	want := decimal.Zero
	for i := range 500 {
		n := decimal.RequireFromString("30.0001").Mul(decimal.NewFromInt(int64(i%7 + 1)))
		m := OrderMark{At: now.Add(-time.Duration(500-i) * time.Minute * 3), NotionalUSDT: n, RiskIncreasing: i%5 != 0, Rated: true}
		c.Orders = append(c.Orders, m)
		if m.RiskIncreasing && now.Sub(m.At) < notionalWindow {
			want = want.Add(n)
		}
	}
	daily, _, _ := c.Window(now, "paper")
	if !daily.Equal(want) || want.IsZero() {
		t.Fatalf("daily %s, want %s", daily, want)
	}
}
