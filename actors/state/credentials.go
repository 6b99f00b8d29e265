package state

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Credential is a stored exchange key as the user state holds it: sealed,
// with the verdict of its last permission check.
type Credential struct {
	ID                 string
	Environment        string
	Fingerprint        string
	Permissions        []string
	ReadOnlyCap        bool
	Attested           bool
	Sealed             json.RawMessage
	CheckedAt          time.Time
	PermissionsChanged bool
	Offending          []string
}

// CredentialFor returns the user's key for env.
func (s *User) CredentialFor(env string) (Credential, bool) {
	c, ok := s.Credentials[env]
	return c, ok
}

// CredentialView is what the outside may know of a key.
func (s *User) CredentialView(env string) *messages.CredentialView {
	v := &messages.CredentialView{User: s.User, Environment: env}
	if c, ok := s.CredentialFor(env); ok {
		v.Present, v.CredentialID, v.Fingerprint = true, c.ID, c.Fingerprint
		v.Permissions, v.ReadOnlyCap, v.Attested, v.CheckedAt = slices.Clone(c.Permissions), c.ReadOnlyCap, c.Attested, c.CheckedAt
		v.PermissionsChanged, v.Offending = c.PermissionsChanged, slices.Clone(c.Offending)
	}
	return v
}

// applyCredential changes the credentials from a journaled event. The map
// is replaced, never changed in place, so committed snapshots stay intact.
func (s *User) applyCredential(ev Event) bool {
	switch p := ev.Payload.(type) {
	case messages.CredentialAddedEvent:
		m := maps.Clone(s.Credentials)
		if m == nil {
			m = map[string]Credential{}
		}
		m[p.Environment] = Credential{
			ID: p.CredentialID, Environment: p.Environment, Fingerprint: p.Fingerprint, Permissions: p.Permissions,
			ReadOnlyCap: p.ReadOnlyCap, Attested: p.Attested, Sealed: p.Sealed, CheckedAt: p.CheckedAt,
		}
		s.Credentials = m
	case messages.CredentialDeletedEvent:
		m := maps.Clone(s.Credentials)
		delete(m, p.Environment)
		s.Credentials = m
	case messages.CredentialCheckedEvent:
		c, ok := s.Credentials[p.Environment]
		if !ok || c.ID != p.CredentialID {
			return true
		}
		c.CheckedAt, c.PermissionsChanged, c.Offending = p.CheckedAt, !p.Accepted, p.Offending
		if p.Accepted {
			c.Permissions, c.ReadOnlyCap = p.Permissions, p.ReadOnlyCap
		}
		m := maps.Clone(s.Credentials)
		m[p.Environment] = c
		s.Credentials = m
	default:
		return false
	}
	return true
}
