package mcp

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Every tools/call writes a tool_call record, so an agent that pipelines
// calls grows the journal as fast as it can send. Each session (on HTTP
// without a session: each bearer token) has a token bucket of calls;
// a call over it is answered rate_limited with retry_after_s and writes
// nothing. The refusals are counted and journaled as one
// calls_rate_limited record per session at most once per
// callsJournalInterval.

// Default call limits of one session.
const (
	DefaultCallsPerSecond = 20
	DefaultCallBurst      = 60
	// callsJournalInterval is the least time between two
	// calls_rate_limited records of one session.
	callsJournalInterval = 10 * time.Second
)

// callLimiter is the per-session call budget and the refusal counts.
type callLimiter struct {
	buckets *rateLimiter
	rate    float64
	now     func() time.Time
	journal func(*messages.CallsRateLimitedEvent) error

	mu      sync.Mutex
	refused map[string]*refusals
}

// refusals counts one session's refused calls since its last record.
type refusals struct {
	user, tokenID string
	count         int
	since         time.Time
	journaled     time.Time
}

func newCallLimiter(rate float64, burst int, now func() time.Time, journal func(*messages.CallsRateLimitedEvent) error) *callLimiter {
	return &callLimiter{buckets: newRateLimiter(rate, burst, now), rate: rate, now: now, journal: journal, refused: map[string]*refusals{}}
}

// sessionKey names the budget of a call: its session, or on the
// stateless HTTP era (no session id) its bearer token.
func sessionKey(ss *sdk.ServerSession, tokenID string) string {
	if ss != nil && (tokenID == "" || ss.ID() != "") {
		return fmt.Sprintf("s%p", ss)
	}
	return "t" + tokenID
}

// allow takes one call from key's budget. A refusal is counted, and the
// count is journaled when the session's last record is older than the
// interval; it returns the refusal to answer.
func (c *callLimiter) allow(key string, p Principal) *messages.Error {
	wait, ok := c.buckets.allow(key)
	if ok {
		c.flush(key, false)
		return nil
	}
	now := c.now()
	c.mu.Lock()
	r := c.refused[key]
	if r == nil {
		r = &refusals{user: p.User, tokenID: p.TokenID}
		c.refused[key] = r
	}
	if r.count == 0 {
		r.since = now
	}
	r.count++
	c.mu.Unlock()
	c.flush(key, false)
	return &messages.Error{
		Code:        messages.CodeRateLimited,
		Message:     "too many tool calls in this session",
		NextStep:    "wait retry_after_s seconds before the next call; calls are limited to " + strconv.FormatFloat(c.rate, 'f', -1, 64) + " per second",
		RetryAfterS: max(wait, 1),
		Details:     map[string]any{"limit": "calls_per_second"},
	}
}

// flush journals key's refusal count when there is one and the last
// record is older than the interval (or always, when force).
func (c *callLimiter) flush(key string, force bool) {
	now := c.now()
	c.mu.Lock()
	r := c.refused[key]
	if r == nil || r.count == 0 || (!force && now.Sub(r.journaled) < callsJournalInterval) {
		c.mu.Unlock()
		return
	}
	ev := &messages.CallsRateLimitedEvent{User: r.user, TokenID: r.tokenID, Count: r.count, Since: r.since.UTC(), Until: now.UTC()}
	r.count, r.journaled = 0, now
	c.mu.Unlock()
	_ = c.journal(ev)
}

// sessionEnded journals what is left of key's count and forgets it.
func (c *callLimiter) sessionEnded(key string) {
	c.flush(key, true)
	c.mu.Lock()
	delete(c.refused, key)
	c.mu.Unlock()
}
