package sim

import (
	"math"

	"github.com/shopspring/decimal"
)

// MinOrderValues are, by "category:SYMBOL", the least value in USDT an
// order that opens a position can have on each instrument of the
// simulator, whatever its price does: the instrument's minimum order value,
// or its minimum qty at the lowest price the walk can reach, whichever is
// larger. It needs no running simulator and no network, so a policy can be
// checked against it at start-up.
func MinOrderValues() map[string]decimal.Decimal {
	out := map[string]decimal.Decimal{}
	for cat, list := range newCatalog().list {
		for _, in := range list {
			low := decimal.NewFromFloat(lowestFair(in.under)).RoundDown(2)
			minValue, minQty := in.minNotionalValue, in.minOrderQty
			if cat == catSpot {
				minValue, minQty = in.minOrderAmt, in.spotMinOrderQty
			}
			v := decimal.RequireFromString(minValue)
			if byQty := decimal.RequireFromString(minQty).Mul(low).RoundDown(2); byQty.GreaterThan(v) {
				v = byQty
			}
			out[cat+":"+in.symbol] = v
		}
	}
	return out
}

// lowestFair is a floor under the fair price of an underlying: the walk
// (model.fair) with every octave and the jitter at their lowest, and no
// level shift.
func lowestFair(u *underlying) float64 {
	x := u.vol * 0.002
	for _, p := range octaves {
		x += u.vol * math.Sqrt(float64(p)/86400)
	}
	return u.base * math.Exp(-x)
}
