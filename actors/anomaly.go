package actors

import (
	"encoding/json"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/journal"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Venue anomalies (issue 17, decisions D95): an order the venue showed
// that does not match the attempt it names (a push, a read-back, a
// look-up) settles nothing, and is journaled as venue_anomaly. A venue (or a
// proxy in front of it) that forges without end must not grow the
// journal without bound: at most anomalyRecordsPerWindow records per
// anomalyWindow per user are written; the others are counted into the
// next record's count.

const (
	anomalyWindow           = time.Minute
	anomalyRecordsPerWindow = 10
)

// anomalyLimiter is the user actor's budget of venue_anomaly records. It
// is a fixed window kept by hand rather than a golang.org/x/time/rate
// limiter: it must count what it suppressed and carry that count into the
// next record, which a token bucket does not do.
type anomalyLimiter struct {
	windowStart time.Time
	written     int
	// suppressed counts the anomalies not journaled since the last record.
	suppressed int
}

// admit reports whether one more anomaly may be journaled now, and how
// many it then stands for (itself and the suppressed ones).
func (l *anomalyLimiter) admit(now time.Time) (int, bool) {
	if now.Sub(l.windowStart) >= anomalyWindow || now.Before(l.windowStart) {
		l.windowStart, l.written = now, 0
	}
	if l.written >= anomalyRecordsPerWindow {
		l.suppressed++
		return 0, false
	}
	l.written++
	n := 1 + l.suppressed
	l.suppressed = 0
	return n, true
}

// noteAnomalies journals the mismatches of an attempt's order, within
// the budget. The record is sent without waiting for it: it changes no
// state, and the action it belongs to does not wait on it.
func (u *userActor) noteAnomalies(ctx actor.Context, a state.Attempt, list []venue.Mismatch) {
	for _, m := range list {
		u.noteAnomaly(ctx, messages.VenueAnomalyEvent{Kind: messages.AnomalyOrderMismatch, Source: m.Source,
			ClientOrderID: a.ClientOrderID, Category: a.Category, Symbol: a.Symbol, Field: m.Field})
	}
}

// noteAnomaly journals one anomaly, within the budget.
func (u *userActor) noteAnomaly(ctx actor.Context, ev messages.VenueAnomalyEvent) {
	now := u.now()
	n, ok := u.anomalies.admit(now)
	if !ok {
		return // counted into the next record
	}
	u.logger.Warn("the venue showed something that disagrees with the server", "user", u.state.User, "kind", ev.Kind, "source", ev.Source, "field", ev.Field, "count", n)
	ev.At, ev.Count = now.UTC(), n
	e := state.Event{Type: messages.RecordVenueAnomaly, Payload: ev}
	if !state.OriginAllowed(e, systemOrigin.Actor()) || u.journal.IsDown() {
		return
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return
	}
	// Sync, not waited for: nothing waits on an anomaly record.
	u.journal.Append(wal.Entry{Time: now.UTC(), Type: uint16(e.Type), User: u.state.User,
		Actor: systemOrigin.Actor(), Channel: systemOrigin.ChannelText(), Payload: payload}, journal.Sync, nil)
}
