package messages

import (
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

// fieldCase is, for one policy field, two valid flag values (strict is
// stricter than loose) and one the field refuses.
type fieldCase struct{ strict, loose, bad string }

var fieldCases = map[string]fieldCase{
	"profile":                          {"read_only", "trade", "root"},
	"allow":                            {"linear:BTCUSDT", "linear:BTCUSDT,spot:ETHUSDT", "linear:btc usdt"},
	"max_order_notional_usdt":          {"10", "100", "2000000000"},
	"max_leverage":                     {"2", "5", "0.5"},
	"slippage_pct":                     {"0.5", "2", "4"},
	"confirm_actions":                  {"place_order,cancel_order", "place_order", "withdraw"},
	"confirm_above_notional_usdt":      {"50", "0", "2000000000"},
	"confirmation_ttl_s":               {"30", "300", "5"},
	"trust_client_ui":                  {"false", "true", "maybe"},
	"max_pending":                      {"1", "4", "-1"},
	"daily_notional_cap_usdt":          {"100", "1000", "2000000000"},
	"max_unconfirmed_actions_per_hour": {"2", "8", "100001"},
	"max_orders_per_minute":            {"3", "9", "-2"},
	"venue_ceiling":                    {"paper", "demo", "mars"},
	"stream_stale_s":                   {"5", "15", "0"},
	"max_daily_loss_usdt":              {"20", "500", "2000000000"},
	"cancel_on_disconnect":             {"true", "false", "yes"},
	"heartbeat_s":                      {"30", "0", "86401"},
}

// Every field of the table, end to end: parse, validate, merge, without,
// equal, overlay, tighten, looser, show.
func TestPolicyFieldTable(t *testing.T) {
	if len(fieldCases) != len(PolicyFieldTable) {
		t.Fatalf("%d field cases for %d fields", len(fieldCases), len(PolicyFieldTable))
	}
	for _, f := range PolicyFieldTable {
		t.Run(f.Name, func(t *testing.T) {
			c, ok := fieldCases[f.Name]
			if !ok {
				t.Fatal("no test case")
			}
			if f.Flag == "" || f.Help == "" {
				t.Fatal("flag and help are required")
			}
			parse := func(text string) PolicySettings {
				var s PolicySettings
				if e := f.Parse(text, &s); e != nil {
					t.Fatalf("parse %q: %v", text, e)
				}
				if got := s.Fields(); !slices.Equal(got, []string{f.Name}) {
					t.Fatalf("parse %q set %v", text, got)
				}
				if e := s.Validate(); e != nil {
					t.Fatalf("validate %q: %v", text, e)
				}
				return s
			}
			strict, loose := parse(c.strict), parse(c.loose)
			var bad PolicySettings
			e := f.Parse(c.bad, &bad)
			if e == nil {
				e = bad.Validate()
			}
			if e == nil || e.Code != CodeInvalidParams || e.Details["field"] != f.Name {
				t.Fatalf("bad value accepted or misnamed: %v", e)
			}
			// Merge copies the field, Without removes it, Equal compares it.
			merged := PolicySettings{}.Merge(loose)
			if !merged.Equal(loose) || merged.Equal(strict) {
				t.Fatal("merge/equal")
			}
			if w := merged.Without([]string{f.Name}); len(w.Fields()) != 0 || !w.Equal(PolicySettings{}) {
				t.Fatal("without")
			}
			// Overlay sets the value; Tighten keeps the stricter; Looser
			// names the field only for the looser value.
			base := DefaultPolicy(VenuePaper).Overlay(loose)
			if f.Show(base) != loose.showOnly(f) {
				t.Fatalf("overlay: %s, want %s", f.Show(base), loose.showOnly(f))
			}
			if got := base.Tighten(strict); f.Show(got) != strict.showOnly(f) {
				t.Fatalf("tighten to strict: %s", f.Show(got))
			}
			if got := base.Tighten(loose); f.Show(got) != f.Show(base) {
				t.Fatalf("tighten with the same value changed it: %s", f.Show(got))
			}
			tight := DefaultPolicy(VenuePaper).Overlay(strict)
			if got := tight.Tighten(loose); f.Show(got) != f.Show(tight) {
				t.Fatalf("tighten loosened: %s", f.Show(got))
			}
			if l := tight.Looser(loose); !slices.Equal(l, []string{f.Name}) {
				t.Fatalf("looser(loose) = %v", l)
			}
			if l := base.Looser(strict); len(l) != 0 {
				t.Fatalf("looser(strict) = %v", l)
			}
			if f.ShowSet(PolicySettings{}) != "" {
				t.Fatal("ShowSet of an unset field")
			}
		})
	}
}

func (s PolicySettings) showOnly(f PolicyField) string { return f.ShowSet(s) }

// The confirmation rule names, per trading tool, the setting that asks a
// human: always (confirm_actions), only at or above a value
// (confirm_above_notional_usdt, for the tools with a value) or never.
func TestConfirmationRule(t *testing.T) {
	p := DefaultPolicy(VenuePaper)
	cases := []struct {
		actions   []string
		threshold int64
		want      string
	}{
		{TradingTools, 0, "always confirmed (confirm_actions): place_order, cancel_order, amend_order, cancel_all_orders, set_trading_stop, close_position, set_leverage; " +
			"confirmed by value: none (confirm_above_notional_usdt is 0, off); never confirmed: none"},
		{[]string{"place_order"}, 250, "always confirmed (confirm_actions): place_order; confirmed only at or above 250 USDT (confirm_above_notional_usdt): amend_order, close_position; " +
			"never confirmed: cancel_order, cancel_all_orders, set_trading_stop, set_leverage"},
		{nil, 0, "always confirmed (confirm_actions): none; confirmed by value: none (confirm_above_notional_usdt is 0, off); " +
			"never confirmed: place_order, cancel_order, amend_order, cancel_all_orders, set_trading_stop, close_position, set_leverage"},
	}
	for _, c := range cases {
		p.ConfirmActions, p.ConfirmAboveNotionalUSDT = c.actions, decimal.NewFromInt(c.threshold)
		if got := p.ConfirmationRule(); got != c.want {
			t.Errorf("rule\n got %q\nwant %q", got, c.want)
		}
	}
}

// confirm_above_notional_usdt is off at 0: tightening may lower a
// threshold or set one, never turn it off, and the effective policy keeps
// the user's threshold under a ceiling that has none.
func TestConfirmThresholdZeroIsOff(t *testing.T) {
	d := func(v string) *decimal.Decimal { x := decimal.RequireFromString(v); return &x }
	ceiling := PolicySettings{ConfirmAboveNotionalUSDT: d("500")}
	if p := Effective(VenueDemo, ceiling, PolicySettings{ConfirmAboveNotionalUSDT: d("0")}); !p.ConfirmAboveNotionalUSDT.Equal(decimal.NewFromInt(500)) {
		t.Fatalf("a user's 0 turned the ceiling's threshold off: %s", p.ConfirmAboveNotionalUSDT)
	}
	if p := Effective(VenueDemo, ceiling, PolicySettings{ConfirmAboveNotionalUSDT: d("200")}); !p.ConfirmAboveNotionalUSDT.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("a lower threshold of the user's was not kept: %s", p.ConfirmAboveNotionalUSDT)
	}
	if p := Effective(VenueDemo, PolicySettings{ConfirmAboveNotionalUSDT: d("0")}, PolicySettings{ConfirmAboveNotionalUSDT: d("300")}); !p.ConfirmAboveNotionalUSDT.Equal(decimal.NewFromInt(300)) {
		t.Fatalf("a ceiling without a threshold dropped the user's: %s", p.ConfirmAboveNotionalUSDT)
	}
	p := Effective(VenueDemo, ceiling, PolicySettings{})
	if !thresholdStricter(decimal.NewFromInt(100), decimal.Zero) || thresholdStricter(decimal.Zero, p.ConfirmAboveNotionalUSDT) {
		t.Fatal("0 (off) ranks as stricter than a threshold")
	}
}
