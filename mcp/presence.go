package mcp

import (
	"context"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The dead-man switch's input: every message a session sends is a sign of
// life of its user (any request, any notification), and the end of a
// session (stdio EOF, a relay client gone, an HTTP session closed or
// expired) is reported to the user's actor, which decides what to do with
// it (policy cancel_on_disconnect and heartbeat_s, actors/deadman.go).
// A request of the stateless HTTP era has no session to end: it only
// counts as a sign of life.

// closeTimeout bounds the wait for the dead-man switch after a session
// ends.
const closeTimeout = 60 * time.Second

// Presence follows the sessions of one or more servers. Wait lets a
// process that is about to exit (stdio serve at EOF) wait until every
// ended session was reported and its dead-man cancels are done.
type Presence struct {
	mu       sync.Mutex
	sessions map[*sdk.ServerSession]string
	wg       sync.WaitGroup
}

// NewPresence returns an empty Presence.
func NewPresence() *Presence {
	return &Presence{sessions: map[*sdk.ServerSession]string{}}
}

// Wait returns once every session that was seen has ended and been
// reported, or when ctx ends.
func (p *Presence) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// presence reports every incoming message of a session whose user is
// known as a sign of life of that user. A session's user is known from
// its bearer token (HTTP), or from the first tools/list or tools/call the
// guard identified (stdio, relay): the session opens then.
func (s *server) presence(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if req != nil {
			var tokenUser string
			if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
				tokenUser = ex.TokenInfo.UserID
			}
			s.notePresence(ctx, req, tokenUser)
		}
		return next(ctx, method, req)
	}
}

// notePresence reports a message of req's session from user ("" when not
// known yet): the session opens at the first message with a user, and
// every later message is a sign of life.
func (s *server) notePresence(ctx context.Context, req sdk.Request, user string) {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	var hasToken bool
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		hasToken = true
	}
	if ss == nil || (hasToken && ss.ID() == "") {
		// Stateless HTTP: one request, no session that could end.
		if user != "" {
			s.opts.Backend.SessionEvent(ctx, user, messages.SessionHeard)
		}
		return
	}
	p := s.presenceOf()
	p.mu.Lock()
	known, seen := p.sessions[ss]
	if seen || user == "" {
		p.mu.Unlock()
		if seen {
			s.opts.Backend.SessionEvent(ctx, known, messages.SessionHeard)
		}
		return
	}
	p.sessions[ss] = user
	p.wg.Add(1)
	p.mu.Unlock()
	s.opts.Backend.SessionEvent(ctx, user, messages.SessionOpened)
	go func() {
		defer p.wg.Done()
		_ = ss.Wait()
		p.mu.Lock()
		delete(p.sessions, ss)
		p.mu.Unlock()
		s.calls.sessionEnded(sessionKey(ss, ""))
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		s.opts.Backend.SessionEvent(cctx, user, messages.SessionClosed)
	}()
}

func (s *server) presenceOf() *Presence {
	if s.opts.Presence != nil {
		return s.opts.Presence
	}
	return s.ownPresence
}

// identified opens the session of req for p's user if it is not open yet
// (a session without a bearer token learns its user here).
func (s *server) identified(ctx context.Context, req sdk.Request, p Principal) {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	if ss == nil || p.User == "" || (req.GetExtra() != nil && req.GetExtra().TokenInfo != nil) {
		return // HTTP: the presence middleware knew the user already
	}
	pr := s.presenceOf()
	pr.mu.Lock()
	_, seen := pr.sessions[ss]
	pr.mu.Unlock()
	if !seen {
		s.notePresence(ctx, req, p.User)
	}
}
