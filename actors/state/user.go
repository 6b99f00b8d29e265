package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// User is one user's state, which that user's actor owns (package
// actors). It is a plain, synchronous, not thread-safe value
// (docs/invariants.md "Rules of the code"): Decide computes what a command
// would journal without changing anything, Apply changes the state from a
// journaled event. The actor is a thin shell around them, and start-up
// replays the journal through the same Apply (Replay), so live state and
// rebuilt state cannot differ.
type User struct {
	// User is the user's name; Exists is set by user_created and
	// Disabled by user_disabled.
	User     string
	Exists   bool
	Disabled bool
	// Ceiling is the admin's ceiling and Own the user's own (stricter)
	// settings; Effective combines them.
	Ceiling messages.PolicySettings
	Own     messages.PolicySettings
	// KillSwitch is the kill switch's level (none, user or admin).
	KillSwitch messages.KillSwitch
	// Credentials are the user's exchange keys by environment, sealed.
	Credentials map[string]Credential
	// Tokens are the user's HTTP bearer tokens by id (tokens.go).
	Tokens map[string]Token

	// Order state rebuilt from event records (orders.go): the open
	// attempts (order_attempt without an order_outcome), the 24 h
	// idempotency table and the rolling counters. This order part is the
	// user actor's own: it changes in place, and a committed snapshot
	// hands it only to the next incarnation, as a copy (D77).
	Attempts    map[string]Attempt
	Idempotency map[string]IdempotencyEntry
	Counters    RollingCounters
	// Recent are the answered risk-increasing orders without a key of the
	// last 10 minutes: the 30 s safety net (actors/repeat.go).
	Recent []RecentOrder
	// keyExpiry orders the idempotency keys by claim time, for prune.
	keyExpiry keyExpiry
	// Posture is the set of REDUCING causes and PostureState the state as
	// last journaled (posture_changed; actors/posture.go).
	Posture      messages.PostureCauses
	PostureState messages.PostureState
	// DailyPnl is the day's realised PnL per position as last journaled
	// (daily_pnl_noted), by venue: the stream cache starts from the
	// record of its venue (DailyPnlOn), so a restart keeps counting the
	// day's realised loss (actors/posturecache.go) and another venue's
	// loss never counts (D100). The map and its records are replaced,
	// never changed in place.
	DailyPnl map[string]messages.DailyPnlEvent
	// Confirmations are the parked actions by confirmation id (confirm.go).
	Confirmations map[string]Confirmation
}

// Event is one journaled change: its record type and typed payload (a
// value of the messages event type DecodeEvent gives for the record type).
type Event struct {
	// Type is the journal record's type.
	Type messages.RecordType
	// Payload is the record's payload as a messages event value.
	Payload any
}

// New is the state of a user before any record.
func New(user string) *User {
	return &User{User: user, KillSwitch: messages.KillSwitchNone}
}

// Effective is the policy the user is held to on env: the stricter of
// ceiling and own settings, capped at read_only when the key for env can
// only read.
func (s *User) Effective(venue messages.VenueLevel, env string) messages.Policy {
	p := messages.Effective(venue, s.Ceiling, s.Own)
	if c, ok := s.CredentialFor(env); ok && c.ReadOnlyCap {
		p.Profile = messages.ProfileReadOnly
	}
	return p
}

// View returns a copy of the state as the outside sees it.
func (s *User) View(venue messages.VenueLevel, env string) *messages.PolicyView {
	return &messages.PolicyView{
		User:       s.User,
		Disabled:   s.Disabled,
		Effective:  s.Effective(venue, env),
		Ceiling:    s.Ceiling.Merge(messages.PolicySettings{}),
		Own:        s.Own.Merge(messages.PolicySettings{}),
		KillSwitch: s.KillSwitch,
	}
}

// Decide returns the event a command would journal, or nil when it changes
// nothing, or a refusal. It never changes s.
func (s *User) Decide(cmd messages.Command, venue messages.VenueLevel, env string) (*Event, error) {
	if !s.Exists {
		return nil, messages.Errorf(messages.CodeNotFound, "no such user")
	}
	switch c := cmd.(type) {
	case *messages.ShowPolicyRequest:
		return nil, nil
	case *messages.TightenPolicyRequest:
		if err := s.refuseDisabled(); err != nil {
			return nil, err
		}
		if err := c.Settings.Validate(); err != nil {
			return nil, err
		}
		if looser := s.Effective(venue, env).Looser(c.Settings); len(looser) > 0 {
			return nil, &messages.Error{
				Code:     messages.CodePermissionDenied,
				Message:  "policy tighten may only make the policy stricter; looser fields: " + strings.Join(looser, ", "),
				NextStep: "choose values at least as strict as the current effective policy (policy show); only the admin can loosen the ceiling",
				Details:  map[string]any{"fields": looser},
			}
		}
		after := s.Own.Merge(c.Settings)
		if after.Equal(s.Own) {
			return nil, nil
		}
		return &Event{messages.RecordPolicyTightened, messages.PolicyChangedEvent{Fields: c.Settings.Fields(), Before: s.Own, After: after}}, nil
	case *messages.SetCeilingRequest:
		if err := c.Settings.Validate(); err != nil {
			return nil, err
		}
		after := s.Ceiling.Merge(c.Settings)
		if after.Equal(s.Ceiling) {
			return nil, nil
		}
		return &Event{messages.RecordPolicyCeilingSet, messages.PolicyChangedEvent{Fields: c.Settings.Fields(), Before: s.Ceiling, After: after}}, nil
	case *messages.ResetOverridesRequest:
		fields := c.Fields
		for _, f := range fields {
			if !messages.IsFieldName(f) {
				return nil, messages.InvalidParams("field", "must be a policy field name such as max_leverage")
			}
		}
		if len(fields) == 0 {
			fields = s.Own.Fields()
		}
		var removed []string
		for _, f := range fields {
			if slices.Contains(s.Own.Fields(), f) {
				removed = append(removed, f)
			}
		}
		if len(removed) == 0 {
			return nil, nil
		}
		return &Event{messages.RecordPolicyOverridesReset, messages.PolicyChangedEvent{Fields: removed, Before: s.Own, After: s.Own.Without(removed)}}, nil
	case *messages.SetKillSwitchRequest:
		return s.decideKillSwitch(c)
	case *messages.DisableUserRequest:
		if s.Disabled {
			return nil, nil
		}
		return &Event{messages.RecordUserDisabled, messages.UserDisabledEvent{User: s.User}}, nil
	case *messages.ShowCredentialRequest:
		return nil, nil
	case *messages.DeleteCredentialRequest:
		cred, ok := s.CredentialFor(c.Environment)
		if !ok {
			return nil, &messages.Error{Code: messages.CodeNotFound, Message: "no key is stored for this environment", NextStep: "see `guarded-exchange keys show`"}
		}
		return &Event{messages.RecordCredentialDeleted, messages.CredentialDeletedEvent{CredentialID: cred.ID, Environment: cred.Environment}}, nil
	}
	return nil, messages.Internal(fmt.Errorf("user actor: unexpected command %T", cmd))
}

// decideKillSwitch: anyone may turn the switch on; the user turns off only
// a user-level switch; the admin turns off either. Turning on a switch that
// is already on at the same or a higher level changes nothing.
func (s *User) decideKillSwitch(c *messages.SetKillSwitchRequest) (*Event, error) {
	if c.Level != messages.KillSwitchUser && c.Level != messages.KillSwitchAdmin {
		return nil, messages.InvalidParams("level", "must be user or admin")
	}
	before := s.KillSwitch
	if c.On {
		if before == messages.KillSwitchAdmin || before == c.Level {
			return nil, nil
		}
		return &Event{messages.RecordKillSwitchOn, messages.KillSwitchEvent{Before: before, After: c.Level}}, nil
	}
	switch {
	case before == messages.KillSwitchNone:
		return nil, nil
	case before == messages.KillSwitchAdmin && c.Level != messages.KillSwitchAdmin:
		return nil, &messages.Error{
			Code:     messages.CodePermissionDenied,
			Message:  "the kill switch was turned on by the admin; only the admin can turn it off",
			NextStep: "ask the admin to run `guarded-exchange admin kill-switch off --user " + s.User + "`",
		}
	}
	return &Event{messages.RecordKillSwitchOff, messages.KillSwitchEvent{Before: before, After: messages.KillSwitchNone}}, nil
}

func (s *User) refuseDisabled() error {
	if s.Disabled {
		return messages.Errorf(messages.CodePermissionDenied, "this user is disabled")
	}
	return nil
}

// Apply changes the state from a journaled event. It is the only code that
// changes a User, live or during replay.
func (s *User) Apply(ev Event) {
	if s.applyConfirm(ev) || s.applyCredential(ev) || s.applyOrder(ev) || s.applyToken(ev) {
		return
	}
	switch p := ev.Payload.(type) {
	case messages.UserCreatedEvent:
		s.Exists = true
		s.Ceiling = p.Ceiling
	case messages.PolicyChangedEvent:
		switch ev.Type {
		case messages.RecordPolicyCeilingSet:
			s.Ceiling = p.After
		case messages.RecordPolicyTightened, messages.RecordPolicyOverridesReset:
			s.Own = p.After
		}
	case messages.KillSwitchEvent:
		s.KillSwitch = p.After
	case messages.UserDisabledEvent:
		s.Disabled = true
	case messages.PostureChangedEvent:
		s.Posture, s.PostureState = p.Causes, p.After
	case messages.DailyPnlEvent:
		byVenue := maps.Clone(s.DailyPnl)
		if byVenue == nil {
			byVenue = map[string]messages.DailyPnlEvent{}
		}
		byVenue[p.Environment] = p
		s.DailyPnl = byVenue
	}
}

// DailyPnlOn is the day's count last journaled for the venue env; a
// record that names no venue (written before records named one) stands
// for a venue without a record of its own (D100).
func (s *User) DailyPnlOn(env string) messages.DailyPnlEvent {
	if ev, ok := s.DailyPnl[env]; ok {
		return ev
	}
	return s.DailyPnl[""]
}

// DecodeEvent turns a journal record of a user type back into an Event;
// ok is false for record types that do not change user state.
func DecodeEvent(typ messages.RecordType, payload []byte) (Event, bool, error) {
	switch typ {
	case messages.RecordUserCreated:
		return decodeAs[messages.UserCreatedEvent](typ, payload)
	case messages.RecordPolicyCeilingSet, messages.RecordPolicyTightened, messages.RecordPolicyOverridesReset:
		return decodeAs[messages.PolicyChangedEvent](typ, payload)
	case messages.RecordKillSwitchOn, messages.RecordKillSwitchOff:
		return decodeAs[messages.KillSwitchEvent](typ, payload)
	case messages.RecordUserDisabled:
		return decodeAs[messages.UserDisabledEvent](typ, payload)
	case messages.RecordCredentialAdded:
		return decodeAs[messages.CredentialAddedEvent](typ, payload)
	case messages.RecordCredentialDeleted:
		return decodeAs[messages.CredentialDeletedEvent](typ, payload)
	case messages.RecordCredentialChecked:
		return decodeAs[messages.CredentialCheckedEvent](typ, payload)
	case messages.RecordOrderAttempt:
		return decodeAs[messages.OrderAttemptEvent](typ, payload)
	case messages.RecordOrderOutcome:
		return decodeAs[messages.OrderOutcomeEvent](typ, payload)
	case messages.RecordTokenIssued:
		return decodeAs[messages.TokenIssuedEvent](typ, payload)
	case messages.RecordTokenRevoked:
		return decodeAs[messages.TokenRevokedEvent](typ, payload)
	case messages.RecordPostureChanged:
		return decodeAs[messages.PostureChangedEvent](typ, payload)
	case messages.RecordDailyPnlNoted:
		return decodeAs[messages.DailyPnlEvent](typ, payload)
	case messages.RecordConfirmationRequested:
		return decodeAs[messages.ConfirmationRequestedEvent](typ, payload)
	case messages.RecordConfirmationDecided:
		return decodeAs[messages.ConfirmationDecidedEvent](typ, payload)
	case messages.RecordConfirmationExecuted:
		return decodeAs[messages.ConfirmationExecutedEvent](typ, payload)
	}
	return Event{}, false, nil
}

// decodeAs decodes payload as the event value T of record type typ.
func decodeAs[T any](typ messages.RecordType, payload []byte) (Event, bool, error) {
	var v T
	if err := json.Unmarshal(payload, &v); err != nil {
		return Event{}, true, err
	}
	return Event{Type: typ, Payload: v}, true, nil
}

// DecideAction is the gate of docs/tools.md "The action path" steps 2 and 3 for one action: kill
// switch, profile, venue arming, allowlist (not for a risk-reducing action),
// per-order notional and leverage.
// It reads the state and changes nothing.
// venue is the arming level of this process's venue: the action can only go
// there, so the caller does not choose it.
func (s *User) DecideAction(r *messages.DecideActionRequest, venue messages.VenueLevel, env string) *messages.Error {
	if !s.Exists {
		return messages.Errorf(messages.CodeNotFound, "no such user")
	}
	if s.Disabled {
		return messages.Errorf(messages.CodePermissionDenied, "this user is disabled")
	}
	if s.KillSwitch != messages.KillSwitchNone && r.RiskIncreasing {
		return &messages.Error{
			Code:     messages.CodeKillSwitchActive,
			Message:  "the kill switch is on (" + string(s.KillSwitch) + "); risk-increasing actions are refused",
			NextStep: "only risk-reducing actions (cancel, close, reduce-only) go through; a human can turn the switch off outside the chat",
			Details:  map[string]any{"kill_switch": string(s.KillSwitch)},
		}
	}
	if r.RiskIncreasing {
		if e := s.reducingRefusal(); e != nil {
			return e
		}
	}
	p := s.Effective(venue, env)
	trading := slices.Contains(messages.TradingTools, r.Tool)
	if trading && p.Profile != messages.ProfileTrade {
		return s.profileRefusal(p, env)
	}
	if venue.Rank() > p.VenueCeiling.Rank() {
		return &messages.Error{
			Code: messages.CodeVenueNotArmed, Message: "this user is armed up to " + string(p.VenueCeiling) + " only",
			NextStep: "use a venue at or below the ceiling; the admin sets the ceiling", Details: map[string]any{"limit": "venue_ceiling", "allowed": string(p.VenueCeiling)},
		}
	}
	if trading {
		c, ok := s.CredentialFor(env)
		switch {
		case !ok:
			return NoKeyError()
		case c.PermissionsChanged:
			return &messages.Error{
				Code: messages.CodeCredentialsPermissionsChanged, Message: "the exchange key's permissions changed; trading is blocked",
				NextStep: "a human must replace the key with `guarded-exchange keys replace`, outside the chat",
				// The permission names are the exchange's words: counted
				// in details, named only in untrusted_text.
				Details:       map[string]any{"offending_count": len(c.Offending)},
				UntrustedText: "offending: " + strconv.QuoteToASCII(strings.Join(c.Offending, ",")),
			}
		}
	}
	if r.Symbol != "" && !r.RiskReducing {
		entry := string(r.Category) + ":" + r.Symbol
		if !slices.Contains(p.Allow, entry) {
			return &messages.Error{
				Code: messages.CodePermissionDenied, Message: "this instrument is not on the allowlist",
				NextStep: "trade only instruments in the allowlist (get_my_policy)", Details: map[string]any{"limit": "allow", "allowed": p.Allow},
			}
		}
	}
	if r.NotionalUSDT.GreaterThan(p.MaxOrderNotionalUSDT) {
		return &messages.Error{
			Code: messages.CodeLimitExceeded, Message: "the order value exceeds max_order_notional_usdt",
			NextStep: "make the order smaller", Details: map[string]any{"limit": "max_order_notional_usdt", "allowed": p.MaxOrderNotionalUSDT.String()},
		}
	}
	if r.Leverage.GreaterThan(p.MaxLeverage) {
		return &messages.Error{
			Code: messages.CodeLimitExceeded, Message: "the leverage exceeds max_leverage",
			NextStep: "use a lower leverage", Details: map[string]any{"limit": "max_leverage", "allowed": p.MaxLeverage.String()},
		}
	}
	return nil
}

// profileRefusal is the permission_denied of a trading action under a
// profile that may not trade, naming what a human changes: a read-only
// exchange key caps the profile (keys replace), the user's own setting
// keeps it read_only (reset-overrides), or the admin ceiling does (every
// new user's: set-ceiling).
func (s *User) profileRefusal(p messages.Policy, env string) *messages.Error {
	e := messages.ReadOnlyProfileRefusal(s.User, string(p.Profile))
	var why, fix string
	switch c, ok := s.CredentialFor(env); {
	case ok && c.ReadOnlyCap:
		why, fix = "the exchange key for "+env+" can only read, which caps the profile at read_only",
			"guarded-exchange keys replace --user "+s.User+" --venue "+env
	case s.Own.Profile != nil && *s.Own.Profile != messages.ProfileTrade:
		why, fix = "the user's own settings set the profile to "+string(*s.Own.Profile),
			"guarded-exchange admin policy reset-overrides --user "+s.User+" --field profile"
	default:
		return e
	}
	e.Message = "trading tools need the trade profile, and " + why
	e.NextStep = "a human fixes it outside the chat with `" + fix + "`"
	e.Details["fix"] = fix
	return e
}

// NewUserEvent is the user_created event for a new user: the default policy
// (read_only, empty allowlist, ceiling demo) unless ceiling sets fields.
func NewUserEvent(user string, ceiling messages.PolicySettings) Event {
	ro, demo, empty := messages.ProfileReadOnly, messages.VenueDemo, []string{}
	base := messages.PolicySettings{Profile: &ro, Allow: &empty, VenueCeiling: &demo}
	return Event{Type: messages.RecordUserCreated, Payload: messages.UserCreatedEvent{User: user, Ceiling: base.Merge(ceiling)}}
}
