package messages

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// Profile is the least-privilege profile of a principal (SPEC §6).
type Profile string

// The profiles, from the strictest.
const (
	ProfileReadOnly Profile = "read_only"
	ProfileTrade    Profile = "trade"
)

func (p Profile) rank() int {
	switch p {
	case ProfileReadOnly:
		return 0
	case ProfileTrade:
		return 1
	}
	return -1
}

// VenueLevel is an arming level: paper < demo < live (SPEC §2).
type VenueLevel string

// The arming levels, from the strictest.
const (
	VenuePaper VenueLevel = "paper"
	VenueDemo  VenueLevel = "demo"
	VenueLive  VenueLevel = "live"
)

// Rank orders the levels: paper 0, demo 1, live 2, unknown -1.
func (v VenueLevel) Rank() int {
	switch v {
	case VenuePaper:
		return 0
	case VenueDemo:
		return 1
	case VenueLive:
		return 2
	}
	return -1
}

// KillSwitch is who turned the kill switch on: nobody, the user (or the
// agent on the user's behalf), or the admin. Only the admin turns off an
// admin switch; no tool turns any switch off.
type KillSwitch string

// Kill switch states.
const (
	KillSwitchNone  KillSwitch = "none"
	KillSwitchUser  KillSwitch = "user"
	KillSwitchAdmin KillSwitch = "admin"
)

// TradingTools are the trading tool names of SPEC §4: the default of
// confirm_actions and the only names it may hold.
var TradingTools = []string{"place_order", "cancel_order", "amend_order", "cancel_all_orders", "set_trading_stop", "close_position", "set_leverage"}

// Hard limits of SPEC §6.
var (
	MaxSlippagePct       = decimal.NewFromInt(3)
	MaxConfirmationTTLS  = 600
	defaultConfirmTTLS   = 120
	defaultMaxPending    = 5
	allowEntryPattern    = regexp.MustCompile(`^(spot|linear):[A-Z0-9]{2,30}$`)
	UserNamePattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	maxAllowEntries      = 200
	maxPositiveLimitSize = decimal.NewFromInt(1_000_000_000)
)

// PolicySettings is a set of optional policy fields: an admin ceiling or a
// user's own (tighten-only) settings. A nil field is not set. JSON names are
// the SPEC §6 field names.
type PolicySettings struct {
	Profile                      *Profile         `json:"profile,omitempty"`
	Allow                        *[]string        `json:"allow,omitempty"`
	MaxOrderNotionalUSDT         *decimal.Decimal `json:"max_order_notional_usdt,omitempty"`
	MaxLeverage                  *decimal.Decimal `json:"max_leverage,omitempty"`
	SlippagePct                  *decimal.Decimal `json:"slippage_pct,omitempty"`
	ConfirmActions               *[]string        `json:"confirm_actions,omitempty"`
	ConfirmAboveNotionalUSDT     *decimal.Decimal `json:"confirm_above_notional_usdt,omitempty"`
	ConfirmationTTLS             *int             `json:"confirmation_ttl_s,omitempty"`
	TrustClientUI                *bool            `json:"trust_client_ui,omitempty"`
	MaxPending                   *int             `json:"max_pending,omitempty"`
	DailyNotionalCapUSDT         *decimal.Decimal `json:"daily_notional_cap_usdt,omitempty"`
	MaxUnconfirmedActionsPerHour *int             `json:"max_unconfirmed_actions_per_hour,omitempty"`
	MaxOrdersPerMinute           *int             `json:"max_orders_per_minute,omitempty"`
	VenueCeiling                 *VenueLevel      `json:"venue_ceiling,omitempty"`
}

// Policy is an effective policy: every field has a value.
type Policy struct {
	Profile                      Profile         `json:"profile"`
	Allow                        []string        `json:"allow"`
	MaxOrderNotionalUSDT         decimal.Decimal `json:"max_order_notional_usdt"`
	MaxLeverage                  decimal.Decimal `json:"max_leverage"`
	SlippagePct                  decimal.Decimal `json:"slippage_pct"`
	ConfirmActions               []string        `json:"confirm_actions"`
	ConfirmAboveNotionalUSDT     decimal.Decimal `json:"confirm_above_notional_usdt"`
	ConfirmationTTLS             int             `json:"confirmation_ttl_s"`
	TrustClientUI                bool            `json:"trust_client_ui"`
	MaxPending                   int             `json:"max_pending"`
	DailyNotionalCapUSDT         decimal.Decimal `json:"daily_notional_cap_usdt"`
	MaxUnconfirmedActionsPerHour int             `json:"max_unconfirmed_actions_per_hour"`
	MaxOrdersPerMinute           int             `json:"max_orders_per_minute"`
	VenueCeiling                 VenueLevel      `json:"venue_ceiling"`
}

// PolicyFields are the SPEC §6 field names, in display order.
var PolicyFields = []string{
	"profile", "allow", "max_order_notional_usdt", "max_leverage", "slippage_pct", "confirm_actions",
	"confirm_above_notional_usdt", "confirmation_ttl_s", "trust_client_ui", "max_pending",
	"daily_notional_cap_usdt", "max_unconfirmed_actions_per_hour", "max_orders_per_minute", "venue_ceiling",
}

// DefaultPolicy is the policy of a user nobody configured (SPEC §6):
// read_only, empty allowlist, every trading action confirmed, and the
// per-order limits of the venue: 1000 USDT and x10 on paper and demo, 50 USDT
// and x3 on live.
func DefaultPolicy(venue VenueLevel) Policy {
	notional, leverage, daily := decimal.NewFromInt(1000), decimal.NewFromInt(10), decimal.NewFromInt(10000)
	if venue == VenueLive {
		notional, leverage, daily = decimal.NewFromInt(50), decimal.NewFromInt(3), decimal.NewFromInt(200)
	}
	return Policy{
		Profile:                      ProfileReadOnly,
		Allow:                        []string{},
		MaxOrderNotionalUSDT:         notional,
		MaxLeverage:                  leverage,
		SlippagePct:                  decimal.NewFromInt(1),
		ConfirmActions:               slices.Clone(TradingTools),
		ConfirmAboveNotionalUSDT:     decimal.Zero,
		ConfirmationTTLS:             defaultConfirmTTLS,
		TrustClientUI:                false,
		MaxPending:                   defaultMaxPending,
		DailyNotionalCapUSDT:         daily,
		MaxUnconfirmedActionsPerHour: 10,
		MaxOrdersPerMinute:           10,
		VenueCeiling:                 VenueDemo,
	}
}

// Overlay returns p with every field set in s replacing p's (used for the
// admin ceiling, which may loosen the defaults).
func (p Policy) Overlay(s PolicySettings) Policy {
	out := p.clone()
	if s.Profile != nil {
		out.Profile = *s.Profile
	}
	if s.Allow != nil {
		out.Allow = slices.Clone(*s.Allow)
	}
	setDec(&out.MaxOrderNotionalUSDT, s.MaxOrderNotionalUSDT)
	setDec(&out.MaxLeverage, s.MaxLeverage)
	setDec(&out.SlippagePct, s.SlippagePct)
	if s.ConfirmActions != nil {
		out.ConfirmActions = slices.Clone(*s.ConfirmActions)
	}
	setDec(&out.ConfirmAboveNotionalUSDT, s.ConfirmAboveNotionalUSDT)
	setInt(&out.ConfirmationTTLS, s.ConfirmationTTLS)
	if s.TrustClientUI != nil {
		out.TrustClientUI = *s.TrustClientUI
	}
	setInt(&out.MaxPending, s.MaxPending)
	setDec(&out.DailyNotionalCapUSDT, s.DailyNotionalCapUSDT)
	setInt(&out.MaxUnconfirmedActionsPerHour, s.MaxUnconfirmedActionsPerHour)
	setInt(&out.MaxOrdersPerMinute, s.MaxOrdersPerMinute)
	if s.VenueCeiling != nil {
		out.VenueCeiling = *s.VenueCeiling
	}
	return out
}

// Tighten returns, field by field, the stricter of p and the fields set in s.
func (p Policy) Tighten(s PolicySettings) Policy {
	out := p.clone()
	if s.Profile != nil && s.Profile.rank() < out.Profile.rank() {
		out.Profile = *s.Profile
	}
	if s.Allow != nil {
		out.Allow = slices.DeleteFunc(out.Allow, func(e string) bool { return !slices.Contains(*s.Allow, e) })
	}
	minDec(&out.MaxOrderNotionalUSDT, s.MaxOrderNotionalUSDT)
	minDec(&out.MaxLeverage, s.MaxLeverage)
	minDec(&out.SlippagePct, s.SlippagePct)
	if s.ConfirmActions != nil {
		for _, a := range *s.ConfirmActions {
			if !slices.Contains(out.ConfirmActions, a) {
				out.ConfirmActions = append(out.ConfirmActions, a)
			}
		}
		sortByTradingTools(out.ConfirmActions)
	}
	minDec(&out.ConfirmAboveNotionalUSDT, s.ConfirmAboveNotionalUSDT)
	minInt(&out.ConfirmationTTLS, s.ConfirmationTTLS)
	if s.TrustClientUI != nil && !*s.TrustClientUI {
		out.TrustClientUI = false
	}
	minInt(&out.MaxPending, s.MaxPending)
	minDec(&out.DailyNotionalCapUSDT, s.DailyNotionalCapUSDT)
	minInt(&out.MaxUnconfirmedActionsPerHour, s.MaxUnconfirmedActionsPerHour)
	minInt(&out.MaxOrdersPerMinute, s.MaxOrdersPerMinute)
	if s.VenueCeiling != nil && s.VenueCeiling.Rank() < out.VenueCeiling.Rank() {
		out.VenueCeiling = *s.VenueCeiling
	}
	return out
}

// Looser lists the fields set in s whose value is looser than p's: the
// fields a tighten-only change may not carry.
func (p Policy) Looser(s PolicySettings) []string {
	var out []string
	add := func(f string, looser bool) {
		if looser {
			out = append(out, f)
		}
	}
	if s.Profile != nil {
		add("profile", s.Profile.rank() > p.Profile.rank())
	}
	if s.Allow != nil {
		add("allow", slices.ContainsFunc(*s.Allow, func(e string) bool { return !slices.Contains(p.Allow, e) }))
	}
	add("max_order_notional_usdt", s.MaxOrderNotionalUSDT != nil && s.MaxOrderNotionalUSDT.GreaterThan(p.MaxOrderNotionalUSDT))
	add("max_leverage", s.MaxLeverage != nil && s.MaxLeverage.GreaterThan(p.MaxLeverage))
	add("slippage_pct", s.SlippagePct != nil && s.SlippagePct.GreaterThan(p.SlippagePct))
	if s.ConfirmActions != nil {
		add("confirm_actions", slices.ContainsFunc(p.ConfirmActions, func(a string) bool { return !slices.Contains(*s.ConfirmActions, a) }))
	}
	add("confirm_above_notional_usdt", s.ConfirmAboveNotionalUSDT != nil && s.ConfirmAboveNotionalUSDT.GreaterThan(p.ConfirmAboveNotionalUSDT))
	add("confirmation_ttl_s", s.ConfirmationTTLS != nil && *s.ConfirmationTTLS > p.ConfirmationTTLS)
	add("trust_client_ui", s.TrustClientUI != nil && *s.TrustClientUI && !p.TrustClientUI)
	add("max_pending", s.MaxPending != nil && *s.MaxPending > p.MaxPending)
	add("daily_notional_cap_usdt", s.DailyNotionalCapUSDT != nil && s.DailyNotionalCapUSDT.GreaterThan(p.DailyNotionalCapUSDT))
	add("max_unconfirmed_actions_per_hour", s.MaxUnconfirmedActionsPerHour != nil && *s.MaxUnconfirmedActionsPerHour > p.MaxUnconfirmedActionsPerHour)
	add("max_orders_per_minute", s.MaxOrdersPerMinute != nil && *s.MaxOrdersPerMinute > p.MaxOrdersPerMinute)
	add("venue_ceiling", s.VenueCeiling != nil && s.VenueCeiling.Rank() > p.VenueCeiling.Rank())
	return out
}

// Effective is the policy a user is held to: the defaults overlaid by the
// admin ceiling, then tightened by the user's own settings.
func Effective(venue VenueLevel, ceiling, own PolicySettings) Policy {
	return DefaultPolicy(venue).Overlay(ceiling).Tighten(own)
}

// Validate checks every set field's range (SPEC §6 hard limits), returning
// invalid_params naming the first bad field.
func (s PolicySettings) Validate() *Error {
	if s.Profile != nil && s.Profile.rank() < 0 {
		return InvalidParams("profile", "must be read_only or trade")
	}
	if s.Allow != nil {
		if len(*s.Allow) > maxAllowEntries {
			return InvalidParams("allow", fmt.Sprintf("at most %d entries", maxAllowEntries))
		}
		for _, e := range *s.Allow {
			if !allowEntryPattern.MatchString(e) {
				return InvalidParams("allow", "entries must look like linear:BTCUSDT or spot:ETHUSDT")
			}
		}
	}
	for _, f := range []struct {
		name string
		v    *decimal.Decimal
	}{
		{"max_order_notional_usdt", s.MaxOrderNotionalUSDT}, {"max_leverage", s.MaxLeverage},
		{"confirm_above_notional_usdt", s.ConfirmAboveNotionalUSDT}, {"daily_notional_cap_usdt", s.DailyNotionalCapUSDT},
	} {
		if f.v != nil && (f.v.IsNegative() || f.v.GreaterThan(maxPositiveLimitSize)) {
			return InvalidParams(f.name, "must be between 0 and 1000000000")
		}
	}
	if s.MaxLeverage != nil && s.MaxLeverage.LessThan(decimal.NewFromInt(1)) {
		return InvalidParams("max_leverage", "must be at least 1")
	}
	if s.SlippagePct != nil && (s.SlippagePct.IsNegative() || s.SlippagePct.GreaterThan(MaxSlippagePct)) {
		return InvalidParams("slippage_pct", "must be between 0 and 3")
	}
	if s.ConfirmActions != nil {
		for _, a := range *s.ConfirmActions {
			if !slices.Contains(TradingTools, a) {
				return InvalidParams("confirm_actions", "must name trading tools: "+strings.Join(TradingTools, ", "))
			}
		}
	}
	if s.ConfirmationTTLS != nil && (*s.ConfirmationTTLS < 10 || *s.ConfirmationTTLS > MaxConfirmationTTLS) {
		return InvalidParams("confirmation_ttl_s", "must be between 10 and 600")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{
		{"max_pending", s.MaxPending}, {"max_unconfirmed_actions_per_hour", s.MaxUnconfirmedActionsPerHour},
		{"max_orders_per_minute", s.MaxOrdersPerMinute},
	} {
		if f.v != nil && (*f.v < 0 || *f.v > 100000) {
			return InvalidParams(f.name, "must be between 0 and 100000")
		}
	}
	if s.VenueCeiling != nil && s.VenueCeiling.Rank() < 0 {
		return InvalidParams("venue_ceiling", "must be paper, demo or live")
	}
	return nil
}

// Fields lists the names of the fields set in s.
func (s PolicySettings) Fields() []string {
	set := map[string]bool{
		"profile": s.Profile != nil, "allow": s.Allow != nil, "max_order_notional_usdt": s.MaxOrderNotionalUSDT != nil,
		"max_leverage": s.MaxLeverage != nil, "slippage_pct": s.SlippagePct != nil, "confirm_actions": s.ConfirmActions != nil,
		"confirm_above_notional_usdt": s.ConfirmAboveNotionalUSDT != nil, "confirmation_ttl_s": s.ConfirmationTTLS != nil,
		"trust_client_ui": s.TrustClientUI != nil, "max_pending": s.MaxPending != nil,
		"daily_notional_cap_usdt": s.DailyNotionalCapUSDT != nil, "max_unconfirmed_actions_per_hour": s.MaxUnconfirmedActionsPerHour != nil,
		"max_orders_per_minute": s.MaxOrdersPerMinute != nil, "venue_ceiling": s.VenueCeiling != nil,
	}
	var out []string
	for _, f := range PolicyFields {
		if set[f] {
			out = append(out, f)
		}
	}
	return out
}

// Merge returns s with every field set in o replacing s's.
func (s PolicySettings) Merge(o PolicySettings) PolicySettings {
	out := s
	if o.Profile != nil {
		out.Profile = o.Profile
	}
	if o.Allow != nil {
		a := slices.Clone(*o.Allow)
		out.Allow = &a
	}
	if o.MaxOrderNotionalUSDT != nil {
		out.MaxOrderNotionalUSDT = o.MaxOrderNotionalUSDT
	}
	if o.MaxLeverage != nil {
		out.MaxLeverage = o.MaxLeverage
	}
	if o.SlippagePct != nil {
		out.SlippagePct = o.SlippagePct
	}
	if o.ConfirmActions != nil {
		a := slices.Clone(*o.ConfirmActions)
		out.ConfirmActions = &a
	}
	if o.ConfirmAboveNotionalUSDT != nil {
		out.ConfirmAboveNotionalUSDT = o.ConfirmAboveNotionalUSDT
	}
	if o.ConfirmationTTLS != nil {
		out.ConfirmationTTLS = o.ConfirmationTTLS
	}
	if o.TrustClientUI != nil {
		out.TrustClientUI = o.TrustClientUI
	}
	if o.MaxPending != nil {
		out.MaxPending = o.MaxPending
	}
	if o.DailyNotionalCapUSDT != nil {
		out.DailyNotionalCapUSDT = o.DailyNotionalCapUSDT
	}
	if o.MaxUnconfirmedActionsPerHour != nil {
		out.MaxUnconfirmedActionsPerHour = o.MaxUnconfirmedActionsPerHour
	}
	if o.MaxOrdersPerMinute != nil {
		out.MaxOrdersPerMinute = o.MaxOrdersPerMinute
	}
	if o.VenueCeiling != nil {
		out.VenueCeiling = o.VenueCeiling
	}
	return out
}

// Without returns s with the named fields unset.
func (s PolicySettings) Without(fields []string) PolicySettings {
	out := s
	for _, f := range fields {
		switch f {
		case "profile":
			out.Profile = nil
		case "allow":
			out.Allow = nil
		case "max_order_notional_usdt":
			out.MaxOrderNotionalUSDT = nil
		case "max_leverage":
			out.MaxLeverage = nil
		case "slippage_pct":
			out.SlippagePct = nil
		case "confirm_actions":
			out.ConfirmActions = nil
		case "confirm_above_notional_usdt":
			out.ConfirmAboveNotionalUSDT = nil
		case "confirmation_ttl_s":
			out.ConfirmationTTLS = nil
		case "trust_client_ui":
			out.TrustClientUI = nil
		case "max_pending":
			out.MaxPending = nil
		case "daily_notional_cap_usdt":
			out.DailyNotionalCapUSDT = nil
		case "max_unconfirmed_actions_per_hour":
			out.MaxUnconfirmedActionsPerHour = nil
		case "max_orders_per_minute":
			out.MaxOrdersPerMinute = nil
		case "venue_ceiling":
			out.VenueCeiling = nil
		}
	}
	return out
}

// Equal reports whether two settings hold the same values (decimals compared
// by value, so "0.10" equals "0.1").
func (s PolicySettings) Equal(o PolicySettings) bool {
	return ptrEq(s.Profile, o.Profile) && sliceEq(s.Allow, o.Allow) && decEq(s.MaxOrderNotionalUSDT, o.MaxOrderNotionalUSDT) &&
		decEq(s.MaxLeverage, o.MaxLeverage) && decEq(s.SlippagePct, o.SlippagePct) && sliceEq(s.ConfirmActions, o.ConfirmActions) &&
		decEq(s.ConfirmAboveNotionalUSDT, o.ConfirmAboveNotionalUSDT) && ptrEq(s.ConfirmationTTLS, o.ConfirmationTTLS) &&
		ptrEq(s.TrustClientUI, o.TrustClientUI) && ptrEq(s.MaxPending, o.MaxPending) && decEq(s.DailyNotionalCapUSDT, o.DailyNotionalCapUSDT) &&
		ptrEq(s.MaxUnconfirmedActionsPerHour, o.MaxUnconfirmedActionsPerHour) && ptrEq(s.MaxOrdersPerMinute, o.MaxOrdersPerMinute) &&
		ptrEq(s.VenueCeiling, o.VenueCeiling)
}

// IsFieldName reports whether f is a SPEC §6 policy field.
func IsFieldName(f string) bool { return slices.Contains(PolicyFields, f) }

func (p Policy) clone() Policy {
	p.Allow = slices.Clone(p.Allow)
	p.ConfirmActions = slices.Clone(p.ConfirmActions)
	if p.Allow == nil {
		p.Allow = []string{}
	}
	if p.ConfirmActions == nil {
		p.ConfirmActions = []string{}
	}
	return p
}

func setDec(dst *decimal.Decimal, v *decimal.Decimal) {
	if v != nil {
		*dst = *v
	}
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func minDec(dst *decimal.Decimal, v *decimal.Decimal) {
	if v != nil && v.LessThan(*dst) {
		*dst = *v
	}
}

func minInt(dst *int, v *int) {
	if v != nil && *v < *dst {
		*dst = *v
	}
}

func sortByTradingTools(a []string) {
	slices.SortFunc(a, func(x, y string) int { return slices.Index(TradingTools, x) - slices.Index(TradingTools, y) })
}

func ptrEq[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func decEq(a, b *decimal.Decimal) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func sliceEq(a, b *[]string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := slices.Clone(*a), slices.Clone(*b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
