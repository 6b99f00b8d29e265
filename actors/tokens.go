package actors

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// tokenCommand decides, journals, applies and answers a token command.
func (u *userActor) tokenCommand(ctx actor.Context, m *userCommand, sender *actor.PID) {
	ev, err := u.state.DecideToken(m.cmd, u.now().UTC())
	if err != nil {
		u.reply(ctx, sender, messages.AsError(err))
		return
	}
	if ev == nil {
		u.reply(ctx, sender, u.state.TokenList(false))
		return
	}
	u.write(ctx, *ev, m.origin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, sender, messages.AsError(err))
			return
		}
		u.commit(*ev)
		if c, ok := m.cmd.(*messages.IssueTokenRequest); ok {
			u.reply(ctx, sender, &messages.TokenIssued{ID: c.ID, Token: c.Token, User: u.state.User})
			return
		}
		u.reply(ctx, sender, u.state.TokenList(true))
	})
}

// tokenIndex finds the user of a token hash or a token id. It only points
// at the user's committed state, which decides: a revoked token or a
// disabled user is refused from the state as it is at the request, so a
// revoke or disable applies to the next request. It is written after each
// durable token_issued (by the user actor) and read by any goroutine.
type tokenIndex struct {
	mu     sync.RWMutex
	byHash map[[sha256.Size]byte]tokenRef
	byID   map[string]tokenRef
}

type tokenRef struct {
	id   string
	user string
	snap *committed
}

func newTokenIndex(holders map[string]*committed) *tokenIndex {
	x := &tokenIndex{byHash: map[[sha256.Size]byte]tokenRef{}, byID: map[string]tokenRef{}}
	for user, c := range holders {
		for id, t := range c.p.Load().Tokens {
			ref := tokenRef{id: id, user: user, snap: c}
			x.byHash[t.Hash], x.byID[id] = ref, ref
		}
	}
	return x
}

// note indexes a durable token_issued event of the user whose committed
// state is snap. Other events need no index change: the state decides.
func (x *tokenIndex) note(ev state.Event, user string, snap *committed) {
	p, ok := ev.Payload.(messages.TokenIssuedEvent)
	if x == nil || !ok {
		return
	}
	b, err := hex.DecodeString(p.SHA256)
	if err != nil || len(b) != sha256.Size {
		return
	}
	ref := tokenRef{id: p.ID, user: user, snap: snap}
	x.mu.Lock()
	x.byHash[[sha256.Size]byte(b)], x.byID[p.ID] = ref, ref
	x.mu.Unlock()
}

func (x *tokenIndex) userOf(id string) (string, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ref, ok := x.byID[id]
	return ref.user, ok
}

// errUnauthenticated is the one answer to every failed authentication:
// which check failed is not told to the caller.
var errUnauthenticated = &messages.Error{
	Code:     messages.CodePermissionDenied,
	Message:  "invalid or revoked bearer token",
	NextStep: "ask the admin for a token (`guarded-exchange admin token issue --user U`)",
}

// maxTokenLen bounds a presented token: longer ones are refused unhashed.
const maxTokenLen = 256

// TokenWellFormed reports whether token could be one this server issued
// (its prefix, at most 256 bytes): the cheap checks Authenticate makes
// first, which a cluster member's front repeats before any hop.
func TokenWellFormed(token string) bool {
	return strings.HasPrefix(token, messages.TokenPrefix) && len(token) <= maxTokenLen
}

// Unauthenticated returns the one answer to a failed authentication.
func Unauthenticated() *messages.Error {
	e := *errUnauthenticated
	return &e
}

// Authenticate returns the user and token id of a bearer token, checked
// against the user's committed state as it is now: the token must be
// known, not revoked, and its user must exist and not be disabled. The
// token is hashed first and only its SHA-256 is looked up, and the stored
// hash is compared in constant time. It never journals or logs the token.
func (s *System) Authenticate(token string) (user, tokenID string, err error) {
	if s.tokens == nil || !TokenWellFormed(token) {
		return "", "", errUnauthenticated
	}
	sum := sha256.Sum256([]byte(token))
	s.tokens.mu.RLock()
	ref, ok := s.tokens.byHash[sum]
	s.tokens.mu.RUnlock()
	if !ok {
		return "", "", errUnauthenticated
	}
	st := ref.snap.p.Load()
	t, ok := st.Tokens[ref.id]
	if !ok || subtle.ConstantTimeCompare(t.Hash[:], sum[:]) != 1 || t.Revoked || !st.Exists || st.Disabled {
		return "", "", errUnauthenticated
	}
	return ref.user, ref.id, nil
}

// prepareToken fills in what the server, not the sender, decides in a
// token command: a new id and token for an issue, the user of a revoke.
func (s *System) prepareToken(cmd messages.Command) *messages.Error {
	switch c := cmd.(type) {
	case *messages.IssueTokenRequest:
		if s.tokens == nil {
			return messages.Errorf(messages.CodeInternalError, "no users supervisor in this process")
		}
		// In a cluster the token and its id are drawn until both route
		// to this shard (route.OfToken, route.OfTokenID): any member then
		// finds the shard of a token, or of a revoke by id, from the
		// token alone, with no index to keep (docs/cluster.md "Routing").
		c.ID, c.Token = "", ""
		for range s.maxTokenDraws() {
			id := messages.TokenIDPrefix + hex.EncodeToString(randomBytes(8))
			if _, taken := s.tokens.userOf(id); !taken && s.slot.Holds(route.OfTokenID, id) {
				c.ID = id
				break
			}
		}
		for range s.maxTokenDraws() {
			tok := messages.TokenPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(32))
			if s.slot.Holds(route.OfToken, tok) {
				c.Token = tok
				break
			}
		}
		if c.ID == "" || c.Token == "" {
			return messages.Internal(errors.New("tokens: no draw routed to this shard"))
		}
	case *messages.RevokeTokenRequest:
		if s.tokens == nil {
			return messages.Errorf(messages.CodeInternalError, "no users supervisor in this process")
		}
		user, ok := s.tokens.userOf(c.ID)
		if !ok {
			return &messages.Error{Code: messages.CodeNotFound, Message: "no such token", NextStep: "see `guarded-exchange admin token list --user U`"}
		}
		c.User = user
	}
	return nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}
