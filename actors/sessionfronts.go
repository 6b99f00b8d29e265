package actors

// A shard's agent sessions by front (docs/cluster.md "Sessions and the
// dead-man switch", decision D192). In a cluster the member whose HTTP
// front holds an agent session may die together with the shard that
// hosts the session's user: no SessionClosed ever comes, and the shard's
// next owner would not know the session existed. So a shard's system
// journals each open and end of a session with its front (agent_session)
// before the user's actor hears of it, a new owner counts the sessions
// still open per user and front from its replay, tells the users' actors
// about them, and ends the sessions of every front that is no longer a
// member as their close would have (the dead-man switch's
// cancel_on_disconnect, journaled as any trigger). Local mode never calls
// any of this.

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Events of an agent_session record.
const (
	agentSessionOpened = "opened"
	agentSessionClosed = "closed"
	// agentSessionEnded: the shard ended the session of a front that left
	// the cluster (EndSessionsOf).
	agentSessionEnded = "ended"
)

// sessionEndWait bounds how long EndSessionsOf waits for one user's
// dead-man switch, as the MCP layer waits after a session's end.
const sessionEndWait = 60 * time.Second

// agentSessionPayload is an agent_session record's payload.
type agentSessionPayload struct {
	Front string `json:"front"`
	Event string `json:"event"`
}

// frontSessions counts each user's open sessions per front.
type frontSessions struct {
	mu   sync.Mutex
	open map[string]map[string]int // user → front → open sessions
}

func newFrontSessions() *frontSessions {
	return &frontSessions{open: map[string]map[string]int{}}
}

// add changes the count of user's sessions on front by d (never below
// zero) and reports whether it changed.
func (f *frontSessions) add(user, front string, d int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	byFront := f.open[user]
	n := byFront[front] + d
	if n < 0 {
		return false
	}
	if byFront == nil {
		byFront = map[string]int{}
		f.open[user] = byFront
	}
	if n == 0 {
		delete(byFront, front)
		if len(byFront) == 0 {
			delete(f.open, user)
		}
		return true
	}
	byFront[front] = n
	return true
}

// frontCount is one user's open sessions on one front.
type frontCount struct {
	user, front string
	n           int
}

// list returns the counts whose front keep accepts, sorted.
func (f *frontSessions) list(keep func(front string) bool) []frontCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []frontCount
	for user, byFront := range f.open {
		for front, n := range byFront {
			if keep(front) {
				out = append(out, frontCount{user, front, n})
			}
		}
	}
	slices.SortFunc(out, func(a, b frontCount) int {
		if a.user != b.user {
			return cmpString(a.user, b.user)
		}
		return cmpString(a.front, b.front)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// onRecord counts one replayed agent_session record. A record it cannot
// read counts nothing: it never held a session open.
func (f *frontSessions) onRecord(rec wal.Record) {
	if messages.RecordType(rec.Type) != messages.RecordAgentSession || rec.User == "" {
		return
	}
	var p agentSessionPayload
	if json.Unmarshal(rec.Payload, &p) != nil || p.Front == "" {
		return
	}
	switch p.Event {
	case agentSessionOpened:
		f.add(rec.User, p.Front, 1)
	case agentSessionClosed, agentSessionEnded:
		f.add(rec.User, p.Front, -1)
	}
}

// SessionEventFrom is SessionEvent for a session held by the HTTP front
// of cluster member front. In a shard's system (Config.Shard set) an open
// or an end is journaled first (agent_session, with the front) and
// counted, so that the shard's next owner knows the session; an end the
// shard no longer counts (it ended it already, EndSessionsOf) is
// dropped. Everything else, and every event without a front or outside a
// shard, is SessionEvent.
func (s *System) SessionEventFrom(ctx context.Context, user string, kind messages.SessionEventKind, front string) {
	if front == "" || s.slot.Count == 0 || (kind != messages.SessionOpened && kind != messages.SessionClosed) ||
		s.users == nil || !messages.UserNamePattern.MatchString(user) || s.homeUser(user) != nil {
		s.SessionEvent(ctx, user, kind)
		return
	}
	if s.registry.committedOf(user) == nil {
		return // no such user: SessionEvent would ignore it too
	}
	event, d := agentSessionOpened, 1
	if kind == messages.SessionClosed {
		// Claimed before it is journaled: an end EndSessionsOf ran
		// already is not ended twice.
		if !s.fronts.add(user, front, -1) {
			return
		}
		event, d = agentSessionClosed, 0
	}
	if err := s.journalAgentSession(ctx, user, front, event); err != nil {
		// The user's actor still hears of it, as in one process; the
		// count stays as it was before the event, so only the shard's
		// next owner could be wrong about it.
		s.logger.Warn("agent session not journaled", "user", user, "event", event, "code", string(messages.CodeOf(err)))
		if d == 0 {
			s.fronts.add(user, front, 1)
		}
	} else if d != 0 {
		s.fronts.add(user, front, d)
	}
	s.SessionEvent(ctx, user, kind)
}

// journalAgentSession appends one agent_session record and waits until it
// is durable.
func (s *System) journalAgentSession(ctx context.Context, user, front, event string) error {
	payload, err := json.Marshal(agentSessionPayload{Front: front, Event: event})
	if err != nil {
		return messages.Internal(err)
	}
	_, err = s.journalEntry(ctx, wal.Entry{Type: uint16(messages.RecordAgentSession), User: user, Actor: messages.ActorSystem, Payload: payload})
	return err
}

// RestoreSessions tells each user's actor about the sessions the replay
// counted open (one SessionOpened each, journaling nothing), so that
// their later ends, or EndSessionsOf, bring the count to zero as in the
// process that saw them open. A shard's start calls it once, before
// EndSessionsOf. It returns how many sessions it restored.
func (s *System) RestoreSessions() int {
	n := 0
	for _, c := range s.fronts.list(func(string) bool { return true }) {
		for range c.n {
			s.tellUser(c.user, &sessionSignal{kind: messages.SessionOpened})
			n++
		}
	}
	return n
}

// EndSessionsOf ends every counted session whose front is not alive, as
// its close would have: agent_session (event ended) journaled first, then
// SessionClosed for the user's actor, whose dead-man switch runs when that
// was the user's last session. Each user's sessions end on their own
// goroutine; EndSessionsOf returns how many it ends without waiting for
// the switch. A session whose end cannot be journaled stays counted, to be
// ended by a later call.
func (s *System) EndSessionsOf(ctx context.Context, alive func(front string) bool) int {
	dead := s.fronts.list(func(front string) bool { return !alive(front) })
	total := 0
	byUser := map[string][]frontCount{}
	for _, c := range dead {
		byUser[c.user] = append(byUser[c.user], c)
		total += c.n
	}
	for user, counts := range byUser {
		go func() {
			ctx, cancel := context.WithTimeout(ctx, sessionEndWait)
			defer cancel()
			for _, c := range counts {
				for range c.n {
					if !s.fronts.add(user, c.front, -1) {
						break // ended meanwhile (its close came, or another call)
					}
					if err := s.journalAgentSession(ctx, user, c.front, agentSessionEnded); err != nil {
						s.fronts.add(user, c.front, 1)
						s.logger.Warn("agent session of a gone front not ended: not journaled", "user", user, "code", string(messages.CodeOf(err)))
						return
					}
					s.logger.Info("agent session ended: its front left the cluster", "user", user, "front", c.front)
					s.SessionEvent(ctx, user, messages.SessionClosed)
				}
			}
		}()
	}
	return total
}
