package mcp

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The stateful sessions of older-era clients (protocols before
// 2026-07-28) each hold memory in the SDK until they end or stay idle for
// HTTPOptions.SessionTimeout. They are bounded per bearer token and in
// all (decision D93): a new session over the token's bound takes the
// place of the token's own longest-idle session with no request in
// flight (a client that opens sessions without ending them loses its
// oldest); over the server's bound, of any token's session with no
// request in flight and none for sessionEvictIdle (one token cannot end
// another's active sessions). With none such, the request is refused
// before the SDK sees it (429 for the token's bound, 503 for the
// server's, Retry-After, a JSON-RPC error) and the refusals are counted
// and journaled as sessions_refused, at most once per
// sessionsJournalInterval per token.

// Default bounds on older-era HTTP sessions.
const (
	DefaultMaxSessionsPerToken = 16
	DefaultMaxSessions         = 256
	// sessionEvictIdle is how long a session must have had no request
	// before a new session of another token may take its place.
	sessionEvictIdle = time.Minute
	// sessionsJournalInterval is the least time between two
	// sessions_refused records of one token.
	sessionsJournalInterval = 10 * time.Second
)

// sessionIDHeader is the header of an older-era session's id.
const sessionIDHeader = "Mcp-Session-Id"

// Scopes of a session refusal.
const (
	sessionScopeToken  = "token"
	sessionScopeServer = "server"
)

// sessionCaps counts the open older-era sessions and admits new ones.
// Safe for concurrent use.
type sessionCaps struct {
	perToken, total int
	now             func() time.Time
	// live lists the ids of the sessions the SDK still holds; end ends
	// one (an evicted session ends like an expired one).
	live    func() map[string]bool
	end     func(id string)
	journal func(*messages.SessionsRefusedEvent) error

	mu         sync.Mutex
	open       map[string]*openSession // by session id
	pending    map[string]int          // new-session requests in flight, by token id
	pendingAll int
	refused    map[string]*sessionRefusals // by token id
	// ended counts the sessions ended to make room (tests wait on it).
	ended int
	// counted numbers the sessions as they are added to open: a list of
	// the SDK's live sessions taken once counted was n says only of the
	// sessions numbered below n whether they ended.
	counted uint64
}

// openSession is one older-era session the front counted.
type openSession struct {
	id, tokenID string
	lastUsed    time.Time
	inFlight    int
	// seq is its number in counting order (sessionCaps.counted).
	seq uint64
	// evicting: a new session takes its place; it ends once that one is
	// open (so that the user never has none in between).
	evicting bool
}

// sessionRefusals counts one token's refused sessions since its last
// record.
type sessionRefusals struct {
	user, scope string
	count       int
	since       time.Time
	journaled   time.Time
	timer       *time.Timer
}

func newSessionCaps(perToken, total int, now func() time.Time, srv *sdk.Server, journal func(*messages.SessionsRefusedEvent) error) *sessionCaps {
	c := &sessionCaps{perToken: perToken, total: total, now: now, journal: journal,
		open: map[string]*openSession{}, pending: map[string]int{}, refused: map[string]*sessionRefusals{}}
	c.live = func() map[string]bool {
		ids := map[string]bool{}
		for ss := range srv.Sessions() {
			if id := ss.ID(); id != "" {
				ids[id] = true
			}
		}
		return ids
	}
	c.end = func(id string) {
		for ss := range srv.Sessions() {
			if ss.ID() == id {
				_ = ss.Close()
			}
		}
	}
	return c
}

// serve passes one older-era request on, counting its session: a request
// of an open session marks it in use; one that opens a session (a POST
// without a session id) is admitted against the bounds first.
func (c *sessionCaps) serve(w http.ResponseWriter, r *http.Request, a authenticated, next http.Handler) {
	if id := r.Header.Get(sessionIDHeader); id != "" {
		done := c.use(id)
		defer done()
		next.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		next.ServeHTTP(w, r)
		return
	}
	opened, scope, ok := c.admit(a)
	if !ok {
		c.refuse(w, a, scope)
		return
	}
	sw := &sessionIDWriter{ResponseWriter: w}
	defer func() { opened(sw.id) }()
	next.ServeHTTP(sw, r)
}

// use marks the session id in use until done.
func (c *sessionCaps) use(id string) (done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.open[id]
	if !ok {
		return func() {}
	}
	s.inFlight++
	s.lastUsed = c.now()
	return func() {
		c.mu.Lock()
		s.inFlight--
		s.lastUsed = c.now()
		c.mu.Unlock()
	}
}

// admit reserves a place for a new session of a's token, taking it from
// the longest-idle session that may give it up, or refuses (scope says
// which bound). opened records the new session's id ("" when the SDK
// opened none) and ends the session it took the place of.
func (c *sessionCaps) admit(a authenticated) (opened func(id string), scope string, ok bool) {
	// The SDK's list is read outside c.mu: a session counted while it is
	// read may be missing from it and is not taken for ended.
	c.mu.Lock()
	before := c.counted
	c.mu.Unlock()
	live := c.live()
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.open {
		if s.seq < before && !live[id] && s.inFlight == 0 {
			delete(c.open, id) // ended: deleted, expired or closed
		}
	}
	mine, all := c.pending[a.tokenID], c.pendingAll
	for _, s := range c.open {
		if s.evicting {
			continue
		}
		all++
		if s.tokenID == a.tokenID {
			mine++
		}
	}
	var victim *openSession
	switch {
	case mine >= c.perToken:
		if victim = c.idlest(now, a.tokenID, 0); victim == nil {
			return nil, sessionScopeToken, false
		}
	case all >= c.total:
		if victim = c.idlest(now, "", sessionEvictIdle); victim == nil {
			return nil, sessionScopeServer, false
		}
	}
	if victim != nil {
		victim.evicting = true
	}
	c.pending[a.tokenID]++
	c.pendingAll++
	c.flushLocked(a.tokenID, false)
	return func(id string) {
		c.mu.Lock()
		if c.pending[a.tokenID]--; c.pending[a.tokenID] <= 0 {
			delete(c.pending, a.tokenID)
		}
		c.pendingAll--
		if id != "" {
			c.open[id] = &openSession{id: id, tokenID: a.tokenID, lastUsed: c.now(), seq: c.counted}
			c.counted++
		} else if victim != nil {
			victim.evicting = false
			victim = nil
		}
		c.mu.Unlock()
		if victim != nil {
			c.end(victim.id)
			c.mu.Lock()
			c.ended++
			c.mu.Unlock()
		}
	}, "", true
}

// idlest is the session idle longest (of tokenID, or of any token when
// empty) that may give its place up: no request in flight, none for
// minIdle, not already giving it up.
func (c *sessionCaps) idlest(now time.Time, tokenID string, minIdle time.Duration) *openSession {
	var best *openSession
	for _, s := range c.open {
		if s.evicting || s.inFlight > 0 || now.Sub(s.lastUsed) < minIdle || tokenID != "" && s.tokenID != tokenID {
			continue
		}
		if best == nil || s.lastUsed.Before(best.lastUsed) {
			best = s
		}
	}
	return best
}

// refuse answers a new session over a bound and counts it.
func (c *sessionCaps) refuse(w http.ResponseWriter, a authenticated, scope string) {
	c.mu.Lock()
	r := c.refused[a.tokenID]
	if r == nil {
		r = &sessionRefusals{user: a.user}
		c.refused[a.tokenID] = r
	}
	if r.count == 0 {
		r.since = c.now()
	}
	r.count++
	r.scope = scope
	c.flushLocked(a.tokenID, false)
	if r.count > 0 && r.timer == nil {
		// What is left is journaled once the interval has passed.
		tokenID := a.tokenID
		r.timer = time.AfterFunc(sessionsJournalInterval, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if r := c.refused[tokenID]; r != nil {
				r.timer = nil
				c.flushLocked(tokenID, true)
			}
		})
	}
	c.mu.Unlock()
	status, limit, msg := http.StatusTooManyRequests, c.perToken, "too many open sessions for this bearer token"
	if scope == sessionScopeServer {
		status, limit, msg = http.StatusServiceUnavailable, c.total, "too many open sessions on this server"
	}
	writeJSONRPCError(w, status, int(sessionEvictIdle/time.Second),
		msg+" (at most "+strconv.Itoa(limit)+", none idle); end one with HTTP DELETE and its Mcp-Session-Id, or retry later")
}

// flushLocked journals tokenID's refusal count when there is one and its
// last record is older than the interval (or always, when force). c.mu is
// held; the record is queued without waiting.
func (c *sessionCaps) flushLocked(tokenID string, force bool) {
	r := c.refused[tokenID]
	now := c.now()
	if r == nil || r.count == 0 || (!force && now.Sub(r.journaled) < sessionsJournalInterval) {
		return
	}
	limit := c.perToken
	if r.scope == sessionScopeServer {
		limit = c.total
	}
	ev := &messages.SessionsRefusedEvent{User: r.user, TokenID: tokenID, Scope: r.scope, Limit: limit, Count: r.count,
		Since: r.since.UTC(), Until: now.UTC()}
	r.count, r.journaled = 0, now
	if c.journal != nil {
		_ = c.journal(ev)
	}
}

// writeJSONRPCError answers an HTTP request the front refuses with a
// JSON-RPC error (code -32000, id null), as the streamable HTTP
// transport's servers do for a request they refuse before reading it.
func writeJSONRPCError(w http.ResponseWriter, status, retryAfterS int, message string) {
	body := mustJSON(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": message}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.Itoa(retryAfterS))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// sessionIDWriter remembers the session id the SDK gives a new session.
type sessionIDWriter struct {
	http.ResponseWriter
	id string
}

func (s *sessionIDWriter) WriteHeader(code int) {
	s.note()
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionIDWriter) Write(b []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(b)
}

func (s *sessionIDWriter) note() {
	if s.id == "" {
		s.id = s.ResponseWriter.Header().Get(sessionIDHeader)
	}
}

// Flush implements http.Flusher.
func (s *sessionIDWriter) Flush() {
	s.note()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *sessionIDWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// state reports, for tests, whether session id is counted, how many of
// its requests are in flight, and how many sessions were ended to make
// room.
func (c *sessionCaps) state(id string) (known bool, inFlight, ended int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, known := c.open[id]
	if known {
		inFlight = s.inFlight
	}
	return known, inFlight, c.ended
}
