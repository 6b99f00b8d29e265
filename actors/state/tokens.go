package state

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Token is one bearer token of a user, as the user's state keeps it: the
// SHA-256 of the token, never the token.
type Token struct {
	// Hash is the SHA-256 of the token.
	Hash [sha256.Size]byte
	// IssuedAt is when it was issued; Revoked and RevokedAt say whether
	// and when it was revoked.
	IssuedAt  time.Time
	Revoked   bool
	RevokedAt time.Time
}

// DecideToken returns the event a token command would journal (nil when
// it changes nothing), or a refusal. It never changes s.
func (s *User) DecideToken(cmd messages.Command, now time.Time) (*Event, error) {
	if !s.Exists {
		return nil, messages.Errorf(messages.CodeNotFound, "no such user")
	}
	switch c := cmd.(type) {
	case *messages.ListTokensRequest:
		return nil, nil
	case *messages.IssueTokenRequest:
		if err := s.refuseDisabled(); err != nil {
			return nil, err
		}
		if c.ID == "" || !strings.HasPrefix(c.Token, messages.TokenPrefix) {
			return nil, messages.Errorf(messages.CodeInternalError, "token issue: the server did not make a token")
		}
		if _, exists := s.Tokens[c.ID]; exists {
			return nil, messages.Errorf(messages.CodeInternalError, "token issue: id already in use")
		}
		sum := sha256.Sum256([]byte(c.Token))
		return &Event{messages.RecordTokenIssued, messages.TokenIssuedEvent{ID: c.ID, User: s.User, SHA256: hex.EncodeToString(sum[:]), At: now}}, nil
	case *messages.RevokeTokenRequest:
		t, ok := s.Tokens[c.ID]
		if !ok {
			return nil, messages.Errorf(messages.CodeNotFound, "no such token")
		}
		if t.Revoked {
			return nil, nil
		}
		return &Event{messages.RecordTokenRevoked, messages.TokenRevokedEvent{ID: c.ID, User: s.User, At: now}}, nil
	}
	return nil, messages.Errorf(messages.CodeInternalError, "token: unexpected command")
}

// applyToken changes the tokens from a journaled event. The map is
// replaced, never changed in place, so committed snapshots stay exact.
func (s *User) applyToken(ev Event) bool {
	switch p := ev.Payload.(type) {
	case messages.TokenIssuedEvent:
		var h [sha256.Size]byte
		if b, err := hex.DecodeString(p.SHA256); err == nil && len(b) == len(h) {
			copy(h[:], b)
		}
		m := maps.Clone(s.Tokens)
		if m == nil {
			m = map[string]Token{}
		}
		m[p.ID] = Token{Hash: h, IssuedAt: p.At}
		s.Tokens = m
	case messages.TokenRevokedEvent:
		t, ok := s.Tokens[p.ID]
		if !ok {
			return true
		}
		t.Revoked, t.RevokedAt = true, p.At
		m := maps.Clone(s.Tokens)
		m[p.ID] = t
		s.Tokens = m
	default:
		return false
	}
	return true
}

// TokenList is the user's tokens as lists show them, oldest first.
func (s *User) TokenList(changed bool) *messages.TokenList {
	out := &messages.TokenList{User: s.User, Tokens: []messages.TokenSummary{}, Changed: changed}
	for id, t := range s.Tokens {
		out.Tokens = append(out.Tokens, messages.TokenSummary{ID: id, IssuedAt: t.IssuedAt, Revoked: t.Revoked, RevokedAt: t.RevokedAt})
	}
	slices.SortFunc(out.Tokens, func(a, b messages.TokenSummary) int {
		if c := a.IssuedAt.Compare(b.IssuedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}
