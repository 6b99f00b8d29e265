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

// presence reports every incoming message as a sign of life of its user,
// and the first one of a session as the session opening.
func (s *server) presence(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		s.notePresence(ctx, req)
		return next(ctx, method, req)
	}
}

func (s *server) notePresence(ctx context.Context, req sdk.Request) {
	if req == nil {
		return
	}
	ss, _ := req.GetSession().(*sdk.ServerSession)
	var tokenUser string
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		tokenUser = ex.TokenInfo.UserID
	}
	if ss == nil || (tokenUser != "" && ss.ID() == "") {
		// Stateless HTTP: one request, no session that could end.
		if tokenUser != "" {
			s.opts.Backend.SessionEvent(ctx, tokenUser, messages.SessionHeard)
		}
		return
	}
	p := s.presenceOf()
	p.mu.Lock()
	user, seen := p.sessions[ss]
	p.mu.Unlock()
	if seen {
		if user != "" {
			s.opts.Backend.SessionEvent(ctx, user, messages.SessionHeard)
		}
		return
	}
	user = tokenUser
	if user == "" {
		pr, err := s.opts.Principal(ctx, req)
		if err != nil {
			return // asked again at the next message
		}
		user = pr.User
	}
	p.mu.Lock()
	if _, raced := p.sessions[ss]; raced {
		p.mu.Unlock()
		s.opts.Backend.SessionEvent(ctx, user, messages.SessionHeard)
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
