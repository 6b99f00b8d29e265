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
	"fmt"
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

// agentSessionPayload is an agent_session record's payload. Open and Seq
// are the front's report (messages.FrontSessions); a record without Seq
// (written before reports carried counts) counts one session up or down.
type agentSessionPayload struct {
	Front string `json:"front"`
	Event string `json:"event"`
	// Open is how many sessions the front holds after the event (0 for
	// ended).
	Open int `json:"open"`
	// Seq is the report's number; for ended, the last report's.
	Seq uint64 `json:"seq,omitempty"`
	// Ended is how many sessions an ended record ended (0: a record
	// written before, which ended one).
	Ended int `json:"ended,omitempty"`
}

// frontState is one user's sessions on one front: how many are open, the
// number of the last report taken, and when it was taken (a record's
// time in the replay).
type frontState struct {
	n   int
	seq uint64
	at  time.Time
}

// maxFrontSessions bounds a report's count: more sessions of one user
// than a front could hold is a malformed report.
const maxFrontSessions = 1 << 16

// frontForgetAfter is how long a gone front's state with no open session
// is kept: its number refuses a report of it sent again late, which a
// front stops sending after 60 s (shard.Client). EndSessionsOf drops
// such states once they are older.
const frontForgetAfter = 5 * time.Minute

// frontSessions counts each user's open sessions per front.
type frontSessions struct {
	mu   sync.Mutex
	open map[string]map[string]frontState // user → front → state
}

func newFrontSessions() *frontSessions {
	return &frontSessions{open: map[string]map[string]frontState{}}
}

// getLocked returns the state of user's sessions on front.
func (f *frontSessions) getLocked(user, front string) frontState {
	return f.open[user][front]
}

// setLocked sets the state of user's sessions on front. A state with no
// open session is kept while its front may still report (its seq refuses
// an older report sent again), and dropped by dropLocked.
func (f *frontSessions) setLocked(user, front string, st frontState) {
	byFront := f.open[user]
	if byFront == nil {
		byFront = map[string]frontState{}
		f.open[user] = byFront
	}
	byFront[front] = st
}

// dropLocked forgets user's state on front.
func (f *frontSessions) dropLocked(user, front string) {
	delete(f.open[user], front)
	if len(f.open[user]) == 0 {
		delete(f.open, user)
	}
}

// takeLocked takes report p of user's sessions on front, at time at, when
// it is newer than the last one taken, and returns the change in open
// sessions.
func (f *frontSessions) takeLocked(user string, p agentSessionPayload, at time.Time) (delta int, taken bool) {
	st := f.getLocked(user, p.Front)
	if p.Seq <= st.seq || p.Open < 0 {
		return 0, false
	}
	f.setLocked(user, p.Front, frontState{n: p.Open, seq: p.Seq, at: at})
	return p.Open - st.n, true
}

// userOpenLocked is how many of user's sessions the shard counts open on
// every front.
func (f *frontSessions) userOpenLocked(user string) int {
	n := 0
	for _, st := range f.open[user] {
		n += st.n
	}
	return n
}

// frontCount is one user's open sessions on one front.
type frontCount struct {
	user, front string
	st          frontState
}

// listOpen returns the states with an open session, sorted.
func (f *frontSessions) listOpen() []frontCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []frontCount
	for user, byFront := range f.open {
		for front, st := range byFront {
			if st.n > 0 {
				out = append(out, frontCount{user, front, st})
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

// onRecord counts one replayed agent_session record, as the live path
// took it. A record it cannot read counts nothing: it never held a
// session open.
func (f *frontSessions) onRecord(rec wal.Record) {
	if messages.RecordType(rec.Type) != messages.RecordAgentSession || rec.User == "" {
		return
	}
	var p agentSessionPayload
	if json.Unmarshal(rec.Payload, &p) != nil || p.Front == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.getLocked(rec.User, p.Front)
	switch {
	case p.Event == agentSessionEnded && p.Ended > 0:
		// The live end claimed the sessions of the report numbered Seq;
		// a newer report taken before this record was written stands.
		if st.seq <= p.Seq {
			f.setLocked(rec.User, p.Front, frontState{n: 0, seq: p.Seq, at: rec.Time})
		}
	case p.Event == agentSessionEnded && st.n > 0:
		f.setLocked(rec.User, p.Front, frontState{n: st.n - 1, seq: st.seq, at: rec.Time})
	case p.Seq > 0:
		f.takeLocked(rec.User, p, rec.Time)
	case p.Event == agentSessionOpened:
		f.setLocked(rec.User, p.Front, frontState{n: st.n + 1, seq: st.seq, at: rec.Time})
	case p.Event == agentSessionClosed && st.n > 0:
		f.setLocked(rec.User, p.Front, frontState{n: st.n - 1, seq: st.seq, at: rec.Time})
	}
}

// FrontSessionsChanged takes a cluster member's report of a user's
// sessions on its HTTP front (docs/cluster.md "Sessions and the dead-man
// switch"). In a shard's system a report newer than the last one taken
// from that front is journaled first (agent_session, with the front, the
// count and the report's number), then counted, and the user's actor
// hears one SessionOpened or SessionClosed per session the count moved;
// on the last one's close it waits, as SessionEvent does, until the
// dead-man switch is done or ctx ends. A close that moves no count (the
// shard never took the session's open, or ended it already) while the
// shard counts none of the user's sessions is the end of the user's last
// session all the same: the actor hears it as such (sessionSignal's
// uncounted). A report taken already, or older than one taken, is
// answered without effect, so the front may send it again after a lost
// answer. An error means nothing was taken: the front sends the report
// again. Outside a shard the report is SessionEvent of its event.
func (s *System) FrontSessionsChanged(ctx context.Context, r *messages.FrontSessions) error {
	if r == nil || r.Front == "" || r.Seq == 0 || r.Open < 0 || r.Open > maxFrontSessions ||
		(r.Event != messages.SessionOpened && r.Event != messages.SessionClosed) {
		return messages.InvalidParams("sessions", "a report needs a front, a count, a number and an open or close")
	}
	if s.slot.Count == 0 || s.users == nil || !messages.UserNamePattern.MatchString(r.User) || s.homeUser(r.User) != nil {
		s.SessionEvent(ctx, r.User, r.Event)
		return nil
	}
	if s.registry.committedOf(r.User) == nil {
		return nil // no such user: SessionEvent would ignore it too
	}
	s.fronts.mu.Lock()
	st := s.fronts.getLocked(r.User, r.Front)
	s.fronts.mu.Unlock()
	if r.Seq <= st.seq {
		return nil // taken already, or a newer report was
	}
	event := agentSessionOpened
	if r.Event == messages.SessionClosed {
		event = agentSessionClosed
	}
	p := agentSessionPayload{Front: r.Front, Event: event, Open: r.Open, Seq: r.Seq}
	// Journaled even when it moves no count: its number must be in the
	// replay too, or an older report sent again late would be taken by
	// the next owner.
	if err := s.journalAgentSession(ctx, r.User, p); err != nil {
		return err
	}
	// Journaled, then taken under the lock; a newer report that was
	// journaled and taken meanwhile wins, here as in the replay, which
	// takes the records in the journal's order by the same rule. The
	// actor hears the change under the lock, so that the changes of two
	// reports reach it in the order they were taken.
	s.fronts.mu.Lock()
	delta, taken := s.fronts.takeLocked(r.User, p, s.now())
	last := s.tellSessionsLocked(r.User, delta)
	if taken && delta == 0 && r.Event == messages.SessionClosed && r.Open == 0 && s.fronts.userOpenLocked(r.User) == 0 {
		last = make(chan struct{})
		s.tellUser(r.User, &sessionSignal{kind: messages.SessionClosed, uncounted: true, done: last})
	}
	s.fronts.mu.Unlock()
	waitClosed(ctx, last)
	return nil
}

// tellSessionsLocked tells user's actor that delta sessions opened (or
// -delta closed), and returns the last close's done channel (nil when
// none closed). The caller holds s.fronts.mu.
func (s *System) tellSessionsLocked(user string, delta int) chan struct{} {
	var done chan struct{}
	for ; delta > 0; delta-- {
		s.tellUser(user, &sessionSignal{kind: messages.SessionOpened})
	}
	for ; delta < 0; delta++ {
		m := &sessionSignal{kind: messages.SessionClosed}
		if delta == -1 {
			done = make(chan struct{})
			m.done = done
		}
		s.tellUser(user, m)
	}
	return done
}

// waitClosed waits until done is closed (nil: at once) or ctx ends.
func waitClosed(ctx context.Context, done chan struct{}) {
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// journalAgentSession appends one agent_session record and waits until it
// is durable.
func (s *System) journalAgentSession(ctx context.Context, user string, p agentSessionPayload) error {
	payload, err := json.Marshal(p)
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
	for _, c := range s.fronts.listOpen() {
		for range c.st.n {
			s.tellUser(c.user, &sessionSignal{kind: messages.SessionOpened})
			n++
		}
	}
	return n
}

// EndSessionsOf ends every counted session whose front is not alive, as
// its close would have: the sessions are claimed at once (a report of the
// front taken later counts from none), then on one goroutine per user an
// agent_session (event ended) is journaled and the user's actor hears
// SessionClosed for each, whose dead-man switch runs when that was the
// user's last session. It returns how many sessions it ends, without
// waiting for the switch. Sessions whose end cannot be journaled are
// counted again, to be ended by a later call. What it keeps of a gone
// front with no open session is dropped once older than
// frontForgetAfter.
func (s *System) EndSessionsOf(ctx context.Context, alive func(front string) bool) int {
	total := 0
	byUser := map[string][]frontCount{}
	now := s.now()
	s.fronts.mu.Lock()
	for user, byFront := range s.fronts.open {
		for front, st := range byFront {
			if alive(front) {
				continue
			}
			if st.n == 0 {
				if now.Sub(st.at) > frontForgetAfter {
					s.fronts.dropLocked(user, front)
				}
				continue
			}
			s.fronts.setLocked(user, front, frontState{n: 0, seq: st.seq, at: now})
			byUser[user] = append(byUser[user], frontCount{user, front, st})
			total += st.n
		}
	}
	s.fronts.mu.Unlock()
	for user, claimed := range byUser {
		go func() {
			ctx, cancel := context.WithTimeout(ctx, sessionEndWait)
			defer cancel()
			for _, c := range claimed {
				s.endFrontSessions(ctx, user, c.front, c.st)
			}
		}()
	}
	return total
}

// endFrontSessions journals the end of user's sessions on a gone front,
// claimed by EndSessionsOf from state st, and tells the user's actor.
func (s *System) endFrontSessions(ctx context.Context, user, front string, st frontState) {
	p := agentSessionPayload{Front: front, Event: agentSessionEnded, Seq: st.seq, Ended: st.n}
	err := s.journalAgentSession(ctx, user, p)
	s.fronts.mu.Lock()
	if err != nil && s.fronts.getLocked(user, front).seq == st.seq {
		// Nothing taken since the claim: the sessions stay counted.
		s.fronts.setLocked(user, front, st)
		s.fronts.mu.Unlock()
		s.logger.Warn("agent sessions of a gone front not ended: not journaled", "user", user, "code", string(messages.CodeOf(err)))
		return
	}
	// Ended; or, not journaled, but a newer report of the front was taken
	// (and journaled) since the claim, counted from none: it holds the
	// count, live and in the replay. Either way the actor hears the
	// claimed sessions end.
	last := s.tellSessionsLocked(user, -st.n)
	s.fronts.mu.Unlock()
	if err == nil {
		s.logger.Info("agent sessions ended: their front left the cluster", "user", user, "front", front, "sessions", st.n)
	}
	waitClosed(ctx, last)
}

// FrontSessionCounts lists the agent sessions the shard counts open per
// user and front, as "user front n", sorted: what its next owner would
// restore (a test's view of the count).
func (s *System) FrontSessionCounts() []string {
	var out []string
	for _, c := range s.fronts.listOpen() {
		out = append(out, fmt.Sprintf("%s %s %d", c.user, c.front, c.st.n))
	}
	return out
}
