package state

import (
	"math"

	"github.com/shopspring/decimal"
)

// decimalSum adds and subtracts decimals exactly, without an allocation
// per term: the rolling daily window's running sum (windows.go) adds each
// risk-increasing order once and takes it out once, and
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

func (s *decimalSum) add(d decimal.Decimal) { s.addSigned(d, false) }

// sub takes d out of the sum.
func (s *decimalSum) sub(d decimal.Decimal) { s.addSigned(d, true) }

func (s *decimalSum) addSigned(d decimal.Decimal, neg bool) {
	if e := d.Exponent(); d.NumDigits() <= 18 && e >= -18 && e <= 18 {
		c := d.CoefficientInt64() // |c| < 10^18: its negation fits
		if neg {
			c = -c
		}
		if !s.small {
			s.coef, s.exp, s.small = c, e, true
			return
		}
		if sum, exp, ok := addScaled(s.coef, s.exp, c, e); ok {
			s.coef, s.exp = sum, exp
			if sum == 0 {
				// Back to nothing: the next term sets the exponent
				// again, so a running sum does not drift to ever
				// smaller exponents and out of the int64.
				s.small = false
			}
			return
		}
	}
	if neg {
		s.rest = s.rest.Sub(d)
	} else {
		s.rest = s.rest.Add(d)
	}
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
