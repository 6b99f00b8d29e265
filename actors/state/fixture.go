package state

import (
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Fixture builds a user's state for tests in one line, from the events
// the server journals, so that the state is one the live user actor or
// replay could hold:
//
//	s := state.NewFixture("ada").Trading("linear:BTCUSDT").WithKey("paper").Build()
//
// Each method applies its events at once and returns the fixture. It is
// for tests (of this package and of others); the server never uses it.
type Fixture struct {
	s *User
}

// NewFixture is a created user with the default ceiling: read_only, an
// empty allowlist, armed up to demo (user_created).
func NewFixture(user string) *Fixture {
	f := &Fixture{s: New(user)}
	return f.With(NewUserEvent(user, messages.PolicySettings{}))
}

// WithCeiling sets the admin ceiling's fields that c sets
// (policy_ceiling_set).
func (f *Fixture) WithCeiling(c messages.PolicySettings) *Fixture {
	return f.With(Event{messages.RecordPolicyCeilingSet, messages.PolicyChangedEvent{Fields: c.Fields(), Before: f.s.Ceiling, After: f.s.Ceiling.Merge(c)}})
}

// Trading lets the user trade the instruments of allow (such as
// "linear:BTCUSDT"): the ceiling's profile becomes trade and its
// allowlist allow.
func (f *Fixture) Trading(allow ...string) *Fixture {
	trade := messages.ProfileTrade
	if allow == nil {
		allow = []string{}
	}
	return f.WithCeiling(messages.PolicySettings{Profile: &trade, Allow: &allow})
}

// WithOwn sets the user's own settings' fields that o sets
// (policy_tightened; the fixture does not check that they are stricter).
func (f *Fixture) WithOwn(o messages.PolicySettings) *Fixture {
	return f.With(Event{messages.RecordPolicyTightened, messages.PolicyChangedEvent{Fields: o.Fields(), Before: f.s.Own, After: f.s.Own.Merge(o)}})
}

// WithKey stores an exchange key for env that may trade
// (credential_added).
func (f *Fixture) WithKey(env string) *Fixture {
	return f.withKey(env, false)
}

// WithReadOnlyKey stores an exchange key for env that can only read: it
// caps the profile at read_only (credential_added).
func (f *Fixture) WithReadOnlyKey(env string) *Fixture {
	return f.withKey(env, true)
}

func (f *Fixture) withKey(env string, readOnly bool) *Fixture {
	perms := []string{"ContractTrade"}
	if readOnly {
		perms = []string{}
	}
	return f.With(Event{messages.RecordCredentialAdded, messages.CredentialAddedEvent{
		CredentialID: "cred-" + f.s.User + "-" + env, Exchange: "bybit", Environment: env, Fingerprint: "fixture",
		Permissions: perms, ReadOnlyCap: readOnly, CheckedAt: time.Now().UTC(),
	}})
}

// WithKillSwitch turns the kill switch on at level (kill_switch_on), with
// the posture record the user actor journals with it (HALTED).
func (f *Fixture) WithKillSwitch(level messages.KillSwitch) *Fixture {
	f.With(Event{messages.RecordKillSwitchOn, messages.KillSwitchEvent{Before: f.s.KillSwitch, After: level}})
	return f.withPosture(f.s.Posture, "kill_switch_on")
}

// WithPosture sets the REDUCING causes (posture_changed), such as
// messages.CauseHuman or messages.CauseDailyLoss.
func (f *Fixture) WithPosture(causes ...string) *Fixture {
	return f.withPosture(messages.PostureCauses(causes), "fixture")
}

func (f *Fixture) withPosture(causes messages.PostureCauses, reason string) *Fixture {
	if causes == nil {
		causes = messages.PostureCauses{}
	}
	before := f.s.Posture
	if before == nil {
		before = messages.PostureCauses{}
	}
	return f.With(Event{messages.RecordPostureChanged, messages.PostureChangedEvent{
		Before: f.s.CurrentPosture(), After: messages.StateOf(f.s.KillSwitch, causes), Reason: reason,
		Actor: messages.ActorSystem, CausesBefore: before, Causes: causes,
	}})
}

// Disabled disables the user (user_disabled).
func (f *Fixture) Disabled() *Fixture {
	return f.With(Event{messages.RecordUserDisabled, messages.UserDisabledEvent{User: f.s.User}})
}

// With applies any other events, in order.
func (f *Fixture) With(evs ...Event) *Fixture {
	for _, ev := range evs {
		f.s.Apply(ev)
	}
	return f
}

// Build returns the state. Later calls on the fixture change it.
func (f *Fixture) Build() *User {
	return f.s
}
