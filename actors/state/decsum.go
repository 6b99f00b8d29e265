package state

import (
	"math"

	"github.com/shopspring/decimal"
)

// decimalSum adds decimals exactly, without an allocation per term. The
// rolling daily window sums every risk-increasing order of the last 24 h
// on each decision (thousands of terms for a busy user), and
// decimal.Decimal.Add allocates twice per term. A term whose coefficient
// has at most 18 digits is added as an int64 at the smaller of the two
// exponents; any other term, or one that would overflow, is added with
// decimal.Add. The result equals the plain sum of the terms.
type decimalSum struct {
	coef  int64
	exp   int32
	small bool // coef·10^exp holds part of the sum
	rest  decimal.Decimal
}

func (s *decimalSum) add(d decimal.Decimal) {
	if e := d.Exponent(); d.NumDigits() <= 18 && e >= -18 && e <= 18 {
		c := d.CoefficientInt64()
		if !s.small {
			s.coef, s.exp, s.small = c, e, true
			return
		}
		if sum, exp, ok := addScaled(s.coef, s.exp, c, e); ok {
			s.coef, s.exp = sum, exp
			return
		}
	}
	s.rest = s.rest.Add(d)
}

// value is the sum so far.
func (s *decimalSum) value() decimal.Decimal {
	if !s.small {
		return s.rest
	}
	return s.rest.Add(decimal.New(s.coef, s.exp))
}

// addScaled returns a·10^ea + b·10^eb as c·10^min(ea, eb), or false when
// it does not fit an int64.
func addScaled(a int64, ea int32, b int64, eb int32) (int64, int32, bool) {
	if ea > eb {
		a, ea, b, eb = b, eb, a, ea
	}
	for ; eb > ea; eb-- { // scale b down to a's exponent
		if b > math.MaxInt64/10 || b < math.MinInt64/10 {
			return 0, 0, false
		}
		b *= 10
	}
	sum := a + b
	if (b > 0 && sum < a) || (b < 0 && sum > a) {
		return 0, 0, false
	}
	return sum, ea, true
}
