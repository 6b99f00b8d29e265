package messages

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// PolicyField is one docs/policy.md policy field: its name, its CLI flag, and
// everything the server does with it (merge, overlay, tighten, the looser
// check, equality, validation, parsing a flag, display), in one place.
// Every function over PolicySettings and Policy loops over PolicyFieldTable;
// TestPolicyFieldTable checks each field.
type PolicyField struct {
	// Name is the docs/policy.md name (the JSON name).
	Name string
	// Flag is the CLI flag (without "--"); Help is its help text.
	Flag, Help string
	ops        fieldOps
}

// fieldOps is what a field does; scalarField and listField implement it.
type fieldOps interface {
	isSet(s *PolicySettings) bool
	unset(s *PolicySettings)
	merge(dst, src *PolicySettings)
	overlay(p *Policy, s *PolicySettings)
	tighten(p *Policy, s *PolicySettings)
	looser(p *Policy, s *PolicySettings) bool
	equal(a, b *PolicySettings) bool
	validate(s *PolicySettings) *Error
	parse(text string, s *PolicySettings) *Error
	show(p *Policy) string
}

// scalarField is a field with one value and an order of strictness.
type scalarField[T any] struct {
	name    string
	setting func(*PolicySettings) **T
	value   func(*Policy) *T
	// stricter reports whether a is stricter than b.
	stricter func(a, b T) bool
	eq       func(a, b T) bool
	// check returns why v is out of range, or "".
	check func(v T) string
	// read parses a flag value, or returns why it cannot.
	read   func(text string) (T, string)
	format func(v T) string
}

func (f scalarField[T]) get(s *PolicySettings) *T { return *f.setting(s) }
func (f scalarField[T]) isSet(s *PolicySettings) bool {
	return f.get(s) != nil
}
func (f scalarField[T]) unset(s *PolicySettings) { *f.setting(s) = nil }
func (f scalarField[T]) merge(dst, src *PolicySettings) {
	if v := f.get(src); v != nil {
		c := *v
		*f.setting(dst) = &c
	}
}
func (f scalarField[T]) overlay(p *Policy, s *PolicySettings) {
	if v := f.get(s); v != nil {
		*f.value(p) = *v
	}
}
func (f scalarField[T]) tighten(p *Policy, s *PolicySettings) {
	if v := f.get(s); v != nil && f.stricter(*v, *f.value(p)) {
		*f.value(p) = *v
	}
}
func (f scalarField[T]) looser(p *Policy, s *PolicySettings) bool {
	v := f.get(s)
	return v != nil && f.stricter(*f.value(p), *v)
}
func (f scalarField[T]) equal(a, b *PolicySettings) bool {
	x, y := f.get(a), f.get(b)
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return f.eq(*x, *y)
}
func (f scalarField[T]) validate(s *PolicySettings) *Error {
	if v := f.get(s); v != nil {
		if why := f.check(*v); why != "" {
			return InvalidParams(f.name, why)
		}
	}
	return nil
}
func (f scalarField[T]) parse(text string, s *PolicySettings) *Error {
	v, why := f.read(text)
	if why != "" {
		return InvalidParams(f.name, why)
	}
	*f.setting(s) = &v
	return nil
}
func (f scalarField[T]) show(p *Policy) string { return f.format(*f.value(p)) }

// listField is a set of strings. For allow, a narrower set is stricter
// (tighten keeps the intersection); for confirm_actions a wider set is
// stricter (tighten keeps the union).
type listField struct {
	name    string
	setting func(*PolicySettings) **[]string
	value   func(*Policy) *[]string
	// widerIsStricter: confirm_actions (more actions confirmed).
	widerIsStricter bool
	check           func(v []string) string
	sort            func(v []string)
}

func (f listField) get(s *PolicySettings) *[]string { return *f.setting(s) }
func (f listField) isSet(s *PolicySettings) bool    { return f.get(s) != nil }
func (f listField) unset(s *PolicySettings)         { *f.setting(s) = nil }
func (f listField) show(p *Policy) string           { return showList(*f.value(p)) }
func (f listField) equal(a, b *PolicySettings) bool { return sliceEq(f.get(a), f.get(b)) }
func (f listField) overlay(p *Policy, s *PolicySettings) {
	if v := f.get(s); v != nil {
		*f.value(p) = slices.Clone(*v)
	}
}
func (f listField) merge(dst, src *PolicySettings) {
	if v := f.get(src); v != nil {
		c := slices.Clone(*v)
		*f.setting(dst) = &c
	}
}
func (f listField) tighten(p *Policy, s *PolicySettings) {
	v := f.get(s)
	if v == nil {
		return
	}
	cur := f.value(p)
	if f.widerIsStricter {
		for _, a := range *v {
			if !slices.Contains(*cur, a) {
				*cur = append(*cur, a)
			}
		}
	} else {
		*cur = slices.DeleteFunc(*cur, func(e string) bool { return !slices.Contains(*v, e) })
	}
	if f.sort != nil {
		f.sort(*cur)
	}
}
func (f listField) looser(p *Policy, s *PolicySettings) bool {
	v := f.get(s)
	if v == nil {
		return false
	}
	cur := *f.value(p)
	if f.widerIsStricter {
		return slices.ContainsFunc(cur, func(a string) bool { return !slices.Contains(*v, a) })
	}
	return slices.ContainsFunc(*v, func(e string) bool { return !slices.Contains(cur, e) })
}
func (f listField) validate(s *PolicySettings) *Error {
	if v := f.get(s); v != nil {
		if why := f.check(*v); why != "" {
			return InvalidParams(f.name, why)
		}
	}
	return nil
}

// parse reads a comma-separated list; "none" is the empty list.
func (f listField) parse(text string, s *PolicySettings) *Error {
	out := []string{}
	for _, a := range strings.Split(text, ",") {
		if a = strings.TrimSpace(a); a != "" && a != "none" {
			out = append(out, a)
		}
	}
	*f.setting(s) = &out
	return nil
}

func showList(v []string) string {
	if len(v) == 0 {
		return "(none)"
	}
	return strings.Join(v, ",")
}

// Field value helpers.

func decLess(a, b decimal.Decimal) bool  { return a.LessThan(b) }
func decEqual(a, b decimal.Decimal) bool { return a.Equal(b) }
func intLess(a, b int) bool              { return a < b }
func same[T comparable](a, b T) bool     { return a == b }

// readDecimal accepts a plain decimal such as 250 or 0.5.
func readDecimal(text string) (decimal.Decimal, string) {
	if !plainDecimal.MatchString(text) {
		return decimal.Zero, "must be a plain decimal such as 250 or 0.5"
	}
	return decimal.RequireFromString(text), ""
}

func readInt(text string) (int, string) {
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, "must be a whole number"
	}
	return n, ""
}

func decRange(lo decimal.Decimal, hi decimal.Decimal, why string) func(decimal.Decimal) string {
	return func(v decimal.Decimal) string {
		if v.LessThan(lo) || v.GreaterThan(hi) {
			return why
		}
		return ""
	}
}

func intRange(lo, hi int) func(int) string {
	return func(v int) string {
		if v < lo || v > hi {
			return fmt.Sprintf("must be between %d and %d", lo, hi)
		}
		return ""
	}
}

func decField(name string, set func(*PolicySettings) **decimal.Decimal, val func(*Policy) *decimal.Decimal, check func(decimal.Decimal) string) scalarField[decimal.Decimal] {
	return scalarField[decimal.Decimal]{name: name, setting: set, value: val, stricter: thresholdStricter, eq: decEqual, check: check, read: readDecimal,
		format: func(v decimal.Decimal) string { return v.String() }}
}

func intField(name string, set func(*PolicySettings) **int, val func(*Policy) *int, check func(int) string) scalarField[int] {
	return scalarField[int]{name: name, setting: set, value: val, stricter: intLess, eq: same[int], check: check, read: readInt,
		format: strconv.Itoa}
}

var limitRange = decRange(decimal.Zero, maxPositiveLimitSize, "must be between 0 and 1000000000")

// PolicyFieldTable is the policy field table, in display order.
var PolicyFieldTable = []PolicyField{
	{Name: "profile", Flag: "profile", Help: "read_only or trade", ops: scalarField[Profile]{
		name: "profile", setting: func(s *PolicySettings) **Profile { return &s.Profile }, value: func(p *Policy) *Profile { return &p.Profile },
		stricter: func(a, b Profile) bool { return a.rank() < b.rank() }, eq: same[Profile],
		check: func(v Profile) string {
			if v.rank() < 0 {
				return "must be read_only or trade"
			}
			return ""
		},
		read:   func(t string) (Profile, string) { return Profile(t), "" },
		format: func(v Profile) string { return string(v) },
	}},
	{Name: "allow", Flag: "allow", Help: "category:SYMBOL entries, comma-separated; 'none' for an empty list", ops: listField{
		name: "allow", setting: func(s *PolicySettings) **[]string { return &s.Allow }, value: func(p *Policy) *[]string { return &p.Allow },
		check: func(v []string) string {
			if len(v) > maxAllowEntries {
				return fmt.Sprintf("at most %d entries", maxAllowEntries)
			}
			for _, e := range v {
				if !allowEntryPattern.MatchString(e) {
					return "entries must look like linear:BTCUSDT or spot:ETHUSDT"
				}
			}
			return ""
		},
	}},
	{Name: "max_order_notional_usdt", Flag: "max-order-notional", Help: "max_order_notional_usdt (USDT)", ops: decField("max_order_notional_usdt",
		func(s *PolicySettings) **decimal.Decimal { return &s.MaxOrderNotionalUSDT }, func(p *Policy) *decimal.Decimal { return &p.MaxOrderNotionalUSDT }, limitRange)},
	{Name: "max_leverage", Flag: "max-leverage", Help: "max_leverage (x)", ops: decField("max_leverage",
		func(s *PolicySettings) **decimal.Decimal { return &s.MaxLeverage }, func(p *Policy) *decimal.Decimal { return &p.MaxLeverage },
		func(v decimal.Decimal) string {
			if v.LessThan(decimal.NewFromInt(1)) {
				return "must be at least 1"
			}
			return limitRange(v)
		})},
	{Name: "slippage_pct", Flag: "slippage-pct", Help: "slippage_pct (at most 3)", ops: decField("slippage_pct",
		func(s *PolicySettings) **decimal.Decimal { return &s.SlippagePct }, func(p *Policy) *decimal.Decimal { return &p.SlippagePct },
		decRange(decimal.Zero, MaxSlippagePct, "must be between 0 and 3"))},
	{Name: "confirm_actions", Flag: "confirm", Help: "trading tools that need confirmation, comma-separated, or 'none'", ops: listField{
		name: "confirm_actions", setting: func(s *PolicySettings) **[]string { return &s.ConfirmActions }, value: func(p *Policy) *[]string { return &p.ConfirmActions },
		widerIsStricter: true, sort: sortByTradingTools,
		check: func(v []string) string {
			for _, a := range v {
				if !slices.Contains(TradingTools, a) {
					return "must name trading tools: " + strings.Join(TradingTools, ", ")
				}
			}
			return ""
		},
	}},
	{Name: "confirm_above_notional_usdt", Flag: "confirm-above-notional", Help: "confirm_above_notional_usdt (USDT; 0 = off)", ops: scalarField[decimal.Decimal]{
		name: "confirm_above_notional_usdt", setting: func(s *PolicySettings) **decimal.Decimal { return &s.ConfirmAboveNotionalUSDT },
		value: func(p *Policy) *decimal.Decimal { return &p.ConfirmAboveNotionalUSDT }, stricter: thresholdStricter, eq: decEqual, check: limitRange,
		read: readDecimal, format: func(v decimal.Decimal) string { return v.String() },
	}},
	{Name: "confirmation_ttl_s", Flag: "confirmation-ttl", Help: "confirmation_ttl_s (10-600)", ops: intField("confirmation_ttl_s",
		func(s *PolicySettings) **int { return &s.ConfirmationTTLS }, func(p *Policy) *int { return &p.ConfirmationTTLS }, intRange(10, MaxConfirmationTTLS))},
	{Name: "trust_client_ui", Flag: "trust-client-ui", Help: "trust_client_ui: true or false", ops: boolField("trust_client_ui",
		func(s *PolicySettings) **bool { return &s.TrustClientUI }, func(p *Policy) *bool { return &p.TrustClientUI },
		func(a, b bool) bool { return !a && b })},
	{Name: "max_pending", Flag: "max-pending", Help: "max_pending", ops: intField("max_pending",
		func(s *PolicySettings) **int { return &s.MaxPending }, func(p *Policy) *int { return &p.MaxPending }, intRange(0, 100000))},
	{Name: "daily_notional_cap_usdt", Flag: "daily-notional-cap", Help: "daily_notional_cap_usdt (USDT, rolling 24 h)", ops: decField("daily_notional_cap_usdt",
		func(s *PolicySettings) **decimal.Decimal { return &s.DailyNotionalCapUSDT }, func(p *Policy) *decimal.Decimal { return &p.DailyNotionalCapUSDT }, limitRange)},
	{Name: "max_unconfirmed_actions_per_hour", Flag: "max-unconfirmed-per-hour", Help: "max_unconfirmed_actions_per_hour", ops: intField("max_unconfirmed_actions_per_hour",
		func(s *PolicySettings) **int { return &s.MaxUnconfirmedActionsPerHour }, func(p *Policy) *int { return &p.MaxUnconfirmedActionsPerHour }, intRange(0, 100000))},
	{Name: "max_orders_per_minute", Flag: "max-orders-per-minute", Help: "max_orders_per_minute", ops: intField("max_orders_per_minute",
		func(s *PolicySettings) **int { return &s.MaxOrdersPerMinute }, func(p *Policy) *int { return &p.MaxOrdersPerMinute }, intRange(0, 100000))},
	{Name: "venue_ceiling", Flag: "venue-ceiling", Help: "venue_ceiling: paper, demo or live", ops: scalarField[VenueLevel]{
		name: "venue_ceiling", setting: func(s *PolicySettings) **VenueLevel { return &s.VenueCeiling }, value: func(p *Policy) *VenueLevel { return &p.VenueCeiling },
		stricter: func(a, b VenueLevel) bool { return a.Rank() < b.Rank() }, eq: same[VenueLevel],
		check: func(v VenueLevel) string {
			if v.Rank() < 0 {
				return "must be paper, demo or live"
			}
			return ""
		},
		read:   func(t string) (VenueLevel, string) { return VenueLevel(t), "" },
		format: func(v VenueLevel) string { return string(v) },
	}},
	{Name: "stream_stale_s", Flag: "stream-stale", Help: "stream_stale_s: REDUCING while the private stream is down longer (1-3600)", ops: intField("stream_stale_s",
		func(s *PolicySettings) **int { return &s.StreamStaleS }, func(p *Policy) *int { return &p.StreamStaleS }, intRange(1, 3600))},
	{Name: "max_daily_loss_usdt", Flag: "max-daily-loss", Help: "max_daily_loss_usdt (USDT, day from 00:00 UTC): REDUCING at this loss", ops: decField("max_daily_loss_usdt",
		func(s *PolicySettings) **decimal.Decimal { return &s.MaxDailyLossUSDT }, func(p *Policy) *decimal.Decimal { return &p.MaxDailyLossUSDT }, limitRange)},
	{Name: "cancel_on_disconnect", Flag: "cancel-on-disconnect", Help: "cancel_on_disconnect: true or false (cancel the server's open orders when the agent's last session ends)", ops: boolField("cancel_on_disconnect",
		func(s *PolicySettings) **bool { return &s.CancelOnDisconnect }, func(p *Policy) *bool { return &p.CancelOnDisconnect },
		func(a, b bool) bool { return a && !b })},
	{Name: "heartbeat_s", Flag: "heartbeat", Help: "heartbeat_s: cancel the server's open orders after this many silent seconds (0 = off, else 1-86400)", ops: scalarField[int]{
		name: "heartbeat_s", setting: func(s *PolicySettings) **int { return &s.HeartbeatS }, value: func(p *Policy) *int { return &p.HeartbeatS },
		stricter: heartbeatStricter, eq: same[int], check: intRange(0, MaxHeartbeatS), read: readInt, format: strconv.Itoa,
	}},
}

// thresholdStricter: a confirmation threshold is stricter than none (0 is
// off: nothing is confirmed for its value), and a lower one stricter than
// a higher one. So `policy tighten` cannot turn the threshold off, and a
// ceiling without one does not drop the user's own.
func thresholdStricter(a, b decimal.Decimal) bool {
	return a.IsPositive() && (!b.IsPositive() || a.LessThan(b))
}

// heartbeatStricter: any heartbeat is stricter than none (0), and a
// shorter one stricter than a longer one.
func heartbeatStricter(a, b int) bool { return a > 0 && (b == 0 || a < b) }

// boolField is a true/false field; stricter says which value is stricter.
func boolField(name string, set func(*PolicySettings) **bool, val func(*Policy) *bool, stricter func(a, b bool) bool) scalarField[bool] {
	return scalarField[bool]{name: name, setting: set, value: val, stricter: stricter, eq: same[bool], check: func(bool) string { return "" },
		read: func(t string) (bool, string) {
			switch t {
			case "true":
				return true, ""
			case "false":
				return false, ""
			}
			return false, "must be true or false"
		},
		format: strconv.FormatBool,
	}
}

// PolicyFieldByName returns the field named name.
func PolicyFieldByName(name string) (PolicyField, bool) {
	i := slices.IndexFunc(PolicyFieldTable, func(f PolicyField) bool { return f.Name == name })
	if i < 0 {
		return PolicyField{}, false
	}
	return PolicyFieldTable[i], true
}

// Parse sets the field in s from a CLI flag value; a malformed value is
// invalid_params naming the field (never echoing the value).
func (f PolicyField) Parse(text string, s *PolicySettings) *Error { return f.ops.parse(text, s) }

// Show renders the field's value in p as plain text ("(none)" for an empty
// list).
func (f PolicyField) Show(p Policy) string { return f.ops.show(&p) }

// ShowSet renders the field's value in s, or "" when s does not set it.
func (f PolicyField) ShowSet(s PolicySettings) string {
	if !f.ops.isSet(&s) {
		return ""
	}
	p := Policy{}
	f.ops.overlay(&p, &s)
	return f.ops.show(&p)
}
