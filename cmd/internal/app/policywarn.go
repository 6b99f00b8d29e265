package app

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

var _ cli.PolicyWarner = (*Runtime)(nil)

// PolicyWarnings implements cli.PolicyWarner: why the policy p lets no
// order open a position, when it is so. A policy is accepted as the human
// set it; this only says what it means.
func (r *Runtime) PolicyWarnings(p messages.Policy) []string {
	if w := noTradableSymbol(p, sim.MinOrderValues()); w != "" {
		return []string{w}
	}
	return nil
}

// noTradableSymbol says why no allowed symbol can be traded when the
// lower of max_order_notional_usdt and daily_notional_cap_usdt is under
// the smallest order of every allowed symbol (mins, by "category:SYMBOL":
// the instrument rules the paper venue knows, read with no network). ""
// when some allowed symbol can be traded, when nothing is allowed, or when
// an allowed symbol's rules are not known here.
func noTradableSymbol(p messages.Policy, mins map[string]decimal.Decimal) string {
	if len(p.Allow) == 0 {
		return ""
	}
	capName, cap := "max_order_notional_usdt", p.MaxOrderNotionalUSDT
	if p.DailyNotionalCapUSDT.LessThan(cap) {
		capName, cap = "daily_notional_cap_usdt", p.DailyNotionalCapUSDT
	}
	var smallest []string
	for _, sym := range p.Allow {
		least, known := mins[sym]
		if !known || !least.GreaterThan(cap) {
			return ""
		}
		smallest = append(smallest, sym+" "+least.String())
	}
	return fmt.Sprintf("no allowed symbol can be traded: %s is %s USDT, under the smallest order of every allowed symbol (%s USDT; from the instrument rules of the paper venue); raise %s or allow another symbol",
		capName, cap, strings.Join(smallest, " USDT, "), capName)
}
