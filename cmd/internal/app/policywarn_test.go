package app

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A cap under the smallest order of every allowed symbol is named with
// why; a cap some allowed symbol fits under, an empty allowlist or a
// symbol whose rules are not known here say nothing.
func TestNoTradableSymbolSaysWhy(t *testing.T) {
	mins := map[string]decimal.Decimal{"linear:BTCUSDT": decimal.RequireFromString("41.33"), "linear:SOLUSDT": decimal.RequireFromString("6.18")}
	policy := func(allow []string, maxOrder, daily string) messages.Policy {
		p := messages.DefaultPolicy(messages.VenuePaper)
		p.Allow = allow
		p.MaxOrderNotionalUSDT = decimal.RequireFromString(maxOrder)
		p.DailyNotionalCapUSDT = decimal.RequireFromString(daily)
		return p
	}
	cases := []struct {
		name string
		p    messages.Policy
		want string
	}{
		{"order cap under both", policy([]string{"linear:BTCUSDT", "linear:SOLUSDT"}, "5", "10000"),
			"no allowed symbol can be traded: max_order_notional_usdt is 5 USDT, under the smallest order of every allowed symbol (linear:BTCUSDT 41.33 USDT, linear:SOLUSDT 6.18 USDT; from the instrument rules of the paper venue); raise max_order_notional_usdt or allow another symbol"},
		{"daily cap lower", policy([]string{"linear:BTCUSDT"}, "1000", "40"),
			"no allowed symbol can be traded: daily_notional_cap_usdt is 40 USDT, under the smallest order of every allowed symbol (linear:BTCUSDT 41.33 USDT; from the instrument rules of the paper venue); raise daily_notional_cap_usdt or allow another symbol"},
		{"one symbol fits", policy([]string{"linear:BTCUSDT", "linear:SOLUSDT"}, "10", "10000"), ""},
		{"at the minimum", policy([]string{"linear:SOLUSDT"}, "6.18", "10000"), ""},
		{"nothing allowed", policy([]string{}, "1", "1"), ""},
		{"unknown symbol", policy([]string{"linear:BTCUSDT", "linear:XRPUSDT"}, "5", "10000"), ""},
	}
	for _, c := range cases {
		if got := noTradableSymbol(c.p, mins); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
