package messages

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// Profile is the least-privilege profile of a principal (docs/policy.md).
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

// VenueLevel is an arming level: paper < demo < live (docs/policy.md "Venue levels").
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

// TradingTools are the trading tool names of docs/tools.md: the default of
// confirm_actions and the only names it may hold.
var TradingTools = []string{"place_order", "cancel_order", "amend_order", "cancel_all_orders", "set_trading_stop", "close_position", "set_leverage"}

// The settings that ask a human to confirm an action, as a refusal's or
// a pending answer's confirmed_by names them.
const (
	// ConfirmByActions: the tool is in confirm_actions, so every call of
	// it is confirmed, whatever its value.
	ConfirmByActions = "confirm_actions"
	// ConfirmByNotional: the action's value reaches
	// confirm_above_notional_usdt.
	ConfirmByNotional = "confirm_above_notional_usdt"
)

// ValuedTools are the trading tools whose calls have a value in USDT, the
// only ones confirm_above_notional_usdt can ask to confirm.
var ValuedTools = []string{"place_order", "amend_order", "close_position"}

// ConfirmationRule states in one line which actions a human always
// confirms (confirm_actions), which only at or above a value
// (confirm_above_notional_usdt) and which never, e.g.
//
//	always confirmed (confirm_actions): place_order, cancel_order; confirmed only at or above 200 USDT (confirm_above_notional_usdt): close_position; never confirmed: amend_order, ...
func (p Policy) ConfirmationRule() string {
	var always, valued, never []string
	for _, t := range TradingTools {
		switch {
		case slices.Contains(p.ConfirmActions, t):
			always = append(always, t)
		case p.ConfirmAboveNotionalUSDT.IsPositive() && slices.Contains(ValuedTools, t):
			valued = append(valued, t)
		default:
			never = append(never, t)
		}
	}
	list := func(ts []string) string {
		if len(ts) == 0 {
			return "none"
		}
		return strings.Join(ts, ", ")
	}
	byValue := "confirmed by value: none (" + ConfirmByNotional + " is 0, off)"
	if p.ConfirmAboveNotionalUSDT.IsPositive() {
		byValue = "confirmed only at or above " + p.ConfirmAboveNotionalUSDT.String() + " USDT (" + ConfirmByNotional + "): " + list(valued)
	}
	return "always confirmed (" + ConfirmByActions + "): " + list(always) + "; " + byValue + "; never confirmed: " + list(never)
}

// Hard limits of docs/policy.md.
var (
	MaxSlippagePct       = decimal.NewFromInt(3)
	MaxConfirmationTTLS  = 600
	defaultConfirmTTLS   = 120
	defaultMaxPending    = 5
	defaultStreamStaleS  = 15
	allowEntryPattern    = regexp.MustCompile(`^(spot|linear):` + SymbolPattern + `$`)
	plainDecimal         = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,12})?$`)
	UserNamePattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	maxAllowEntries      = 200
	maxPositiveLimitSize = decimal.NewFromInt(1_000_000_000)
	// MaxHeartbeatS bounds heartbeat_s (one day).
	MaxHeartbeatS = 86400
)

// PolicySettings is a set of optional policy fields: an admin ceiling or a
// user's own (tighten-only) settings. A nil field is not set. JSON names are
// the docs/policy.md field names.
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
	StreamStaleS                 *int             `json:"stream_stale_s,omitempty"`
	MaxDailyLossUSDT             *decimal.Decimal `json:"max_daily_loss_usdt,omitempty"`
	CancelOnDisconnect           *bool            `json:"cancel_on_disconnect,omitempty"`
	HeartbeatS                   *int             `json:"heartbeat_s,omitempty"`
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
	// StreamStaleS: REDUCING while the private stream has been down
	// longer than this (issue 13).
	StreamStaleS int `json:"stream_stale_s"`
	// MaxDailyLossUSDT: REDUCING while the day's realised plus
	// unrealised loss is at least this (issue 13).
	MaxDailyLossUSDT decimal.Decimal `json:"max_daily_loss_usdt"`
	// CancelOnDisconnect: when the user's last MCP session ends, the
	// server cancels the user's open orders of origin system (the
	// dead-man switch, actors/deadman.go).
	CancelOnDisconnect bool `json:"cancel_on_disconnect"`
	// HeartbeatS: when no session of the user has sent anything for this
	// many seconds, the server cancels those orders too; 0 is off.
	HeartbeatS int `json:"heartbeat_s"`
}

// PolicyFields are the docs/policy.md field names, in display order (the field
// table's order).
var PolicyFields = func() []string {
	out := make([]string, len(PolicyFieldTable))
	for i, f := range PolicyFieldTable {
		out[i] = f.Name
	}
	return out
}()

// DefaultPolicy is the policy of a user nobody configured (docs/policy.md):
// read_only, empty allowlist, every trading action confirmed, the client UI
// trusted for confirmation except on live, and the
// per-order limits of the venue: 1000 USDT and x10 on paper and demo, 50 USDT
// and x3 on live.
func DefaultPolicy(venue VenueLevel) Policy {
	notional, leverage, daily, loss := decimal.NewFromInt(1000), decimal.NewFromInt(10), decimal.NewFromInt(10000), decimal.NewFromInt(1000)
	if venue == VenueLive {
		notional, leverage, daily, loss = decimal.NewFromInt(50), decimal.NewFromInt(3), decimal.NewFromInt(200), decimal.NewFromInt(50)
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
		TrustClientUI:                venue != VenueLive,
		MaxPending:                   defaultMaxPending,
		DailyNotionalCapUSDT:         daily,
		MaxUnconfirmedActionsPerHour: 10,
		MaxOrdersPerMinute:           10,
		VenueCeiling:                 VenueDemo,
		StreamStaleS:                 defaultStreamStaleS,
		MaxDailyLossUSDT:             loss,
		CancelOnDisconnect:           false,
		HeartbeatS:                   0,
	}
}

// Overlay returns p with every field set in s replacing p's (used for the
// admin ceiling, which may loosen the defaults).
func (p Policy) Overlay(s PolicySettings) Policy {
	out := p.clone()
	for _, f := range PolicyFieldTable {
		f.ops.overlay(&out, &s)
	}
	return out
}

// Tighten returns, field by field, the stricter of p and the fields set in s.
func (p Policy) Tighten(s PolicySettings) Policy {
	out := p.clone()
	for _, f := range PolicyFieldTable {
		f.ops.tighten(&out, &s)
	}
	return out
}

// Looser lists the fields set in s whose value is looser than p's: the
// fields a tighten-only change may not carry.
func (p Policy) Looser(s PolicySettings) []string {
	var out []string
	for _, f := range PolicyFieldTable {
		if f.ops.looser(&p, &s) {
			out = append(out, f.Name)
		}
	}
	return out
}

// Effective is the policy a user is held to: the defaults overlaid by the
// admin ceiling, then tightened by the user's own settings.
// Live never trusts the client's UI for confirmation, whatever the ceiling
// says (docs/policy.md "Effective policy").
func Effective(venue VenueLevel, ceiling, own PolicySettings) Policy {
	p := DefaultPolicy(venue).Overlay(ceiling).Tighten(own)
	if venue == VenueLive {
		p.TrustClientUI = false
	}
	return p
}

// Validate checks every set field's range (docs/policy.md hard limits), returning
// invalid_params naming the first bad field.
func (s PolicySettings) Validate() *Error {
	for _, f := range PolicyFieldTable {
		if e := f.ops.validate(&s); e != nil {
			return e
		}
	}
	return nil
}

// Fields lists the names of the fields set in s.
func (s PolicySettings) Fields() []string {
	var out []string
	for _, f := range PolicyFieldTable {
		if f.ops.isSet(&s) {
			out = append(out, f.Name)
		}
	}
	return out
}

// Merge returns s with every field set in o replacing s's.
func (s PolicySettings) Merge(o PolicySettings) PolicySettings {
	out := s
	for _, f := range PolicyFieldTable {
		f.ops.merge(&out, &o)
	}
	return out
}

// Without returns s with the named fields unset.
func (s PolicySettings) Without(fields []string) PolicySettings {
	out := s
	for _, f := range PolicyFieldTable {
		if slices.Contains(fields, f.Name) {
			f.ops.unset(&out)
		}
	}
	return out
}

// Equal reports whether two settings hold the same values (decimals compared
// by value, so "0.10" equals "0.1").
func (s PolicySettings) Equal(o PolicySettings) bool {
	for _, f := range PolicyFieldTable {
		if !f.ops.equal(&s, &o) {
			return false
		}
	}
	return true
}

// IsFieldName reports whether f is a docs/policy.md policy field.
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

func sortByTradingTools(a []string) {
	slices.SortFunc(a, func(x, y string) int { return slices.Index(TradingTools, x) - slices.Index(TradingTools, y) })
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

// policySettingsJSON is PolicySettings without its JSON methods.
type policySettingsJSON PolicySettings

// MarshalJSON writes a list field that is set to the empty list as [],
// never null: a set field whose slice is nil (built in Go with no
// elements) would otherwise be written as null, which decodes as "not
// set" and so falls back to the default (for confirm_actions, every
// action confirmed) after a restart.
func (s PolicySettings) MarshalJSON() ([]byte, error) {
	for _, l := range []**[]string{&s.Allow, &s.ConfirmActions} {
		if *l != nil && **l == nil {
			empty := []string{}
			*l = &empty
		}
	}
	return json.Marshal(policySettingsJSON(s))
}

// UnmarshalJSON reads settings strictly (an unknown field is an error,
// whatever the caller's decoder does). A list field given as null is the
// empty list, set: that is what a journal record written before
// MarshalJSON existed meant by it (a set field with no elements), so
// replaying it keeps the value that was answered before the restart.
func (s *PolicySettings) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v policySettingsJSON
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for name, l := range map[string]**[]string{"allow": &v.Allow, "confirm_actions": &v.ConfirmActions} {
		if r, ok := raw[name]; ok && *l == nil && bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			empty := []string{}
			*l = &empty
		}
	}
	*s = PolicySettings(v)
	return nil
}
