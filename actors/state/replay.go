package state

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Record is what replay reads of one journal record: the journal's own
// fields (its seq and time, written by the journal), the record type, the
// user and actor it names, and its payload. Replay never keeps Payload
// beyond OnRecord without copying it.
type Record struct {
	// Seq and Time are the journal's own: its sequence number and the
	// time it gave the record.
	Seq  uint64
	Time time.Time
	// Type is the record type, User the user it belongs to and Actor who
	// caused it.
	Type  messages.RecordType
	User  string
	Actor string
	// Payload is the record's JSON payload.
	Payload []byte
}

// Replay rebuilds every user's state from the journal's records, through
// the same Apply the live actors use. Feed it every record in journal
// order (OnRecord), then read the states (States).
//
// User records come in two kinds (replayKind):
//   - whole-value records carry the whole "after" value of one part of the
//     state (the ceiling, the own settings, the kill switch, the disabled
//     flag), and Apply assigns it. Only the last record of each part can
//     matter, so OnRecord keeps just that one (undecoded) per user and part;
//   - event records add to many-record state (credentials by environment,
//     order attempts and outcomes: the open attempts, the 24 h idempotency
//     table, the rolling counters). Every one is kept and applied in order;
//     their windows are applied by Apply and, at the end, as of now.
//
// The final Apply runs over the survivors in journal order.
// TestCompactedReplayEqualsFullReplay proves the result is the same as
// applying every record. A record type whose effect depends on records
// before it must be an event record, never a whole-value one.
type Replay struct {
	users map[string]*replayUser
}

// replayUser is what the journal said last about each part of one user,
// and every event record.
type replayUser struct {
	parts  [numStateParts]*replayRecord
	events []*replayRecord
	// dailyPnl is the last daily_pnl_noted record of each venue (D100).
	dailyPnl map[string]*replayRecord
	guard    replayGuard
}

type replayRecord struct {
	seq     uint64
	at      time.Time // the record's time, written by the journal
	typ     messages.RecordType
	payload []byte
}

// The parts of a User that user records replace wholesale.
const (
	partCeiling  = iota // user_created, policy_ceiling_set
	partOwn             // policy_tightened, policy_overrides_reset
	partKill            // kill_switch_on, kill_switch_off
	partDisabled        // user_disabled
	partCreated         // user_created (Exists)
	partPosture         // posture_changed
	numStateParts
)

// statePart returns the part a record type replaces, and false for record
// types that do not change user state.
func statePart(t messages.RecordType) (int, bool) {
	switch t {
	case messages.RecordPolicyCeilingSet:
		return partCeiling, true
	case messages.RecordPolicyTightened, messages.RecordPolicyOverridesReset:
		return partOwn, true
	case messages.RecordKillSwitchOn, messages.RecordKillSwitchOff:
		return partKill, true
	case messages.RecordUserDisabled:
		return partDisabled, true
	case messages.RecordPostureChanged:
		return partPosture, true
	}
	return 0, false
}

// dailyPnlVenue is the venue a daily_pnl_noted payload counts ("" in
// records written before it named one).
func dailyPnlVenue(payload []byte) string {
	var p struct {
		Environment string `json:"environment"`
	}
	_ = json.Unmarshal(payload, &p) // the guard has refused a payload that does not decode
	return p.Environment
}

// NewReplay returns an empty replay.
func NewReplay() *Replay {
	return &Replay{users: map[string]*replayUser{}}
}

// OnRecord notes one journal record. Records of other types are skipped
// without decoding. A record the server could not have written refuses
// start, naming its seq: a type not in the record table, a user that is
// not a valid name or differs from the payload's, a record whose actor may
// not cause it, a kill switch, posture or own-settings change that does not follow
// from the records before it, a payload time after the record's own
// (replaycheck.go).
func (r *Replay) OnRecord(rec Record) error {
	typ := rec.Type
	if !knownRecord(typ) {
		return errEditedJournal(rec.Seq, typ, "the record type is not one this server writes")
	}
	part, ok := statePart(typ)
	if typ == messages.RecordUserCreated {
		part, ok = partCreated, true
	}
	full := isEventRecord(typ)
	perVenue := typ == messages.RecordDailyPnlNoted // a whole value per venue
	if !ok && !full && !perVenue {
		return nil
	}
	if err := checkReplayedOrigin(rec.Seq, typ, rec.Actor, rec.Payload); err != nil {
		return err
	}
	u := r.users[rec.User]
	if u == nil {
		if err := checkUserName(rec, typ); err != nil {
			return err
		}
		u = &replayUser{guard: replayGuard{kill: messages.KillSwitchNone}}
		r.users[rec.User] = u
	}
	if err := u.guard.check(rec, typ); err != nil {
		return err
	}
	if full {
		u.events = append(u.events, &replayRecord{seq: rec.Seq, at: rec.Time, typ: typ, payload: append([]byte(nil), rec.Payload...)})
		return nil
	}
	if perVenue {
		if u.dailyPnl == nil {
			u.dailyPnl = map[string]*replayRecord{}
		}
		u.dailyPnl[dailyPnlVenue(rec.Payload)] = &replayRecord{seq: rec.Seq, at: rec.Time, typ: typ, payload: append([]byte(nil), rec.Payload...)}
		return nil
	}
	u.parts[part] = &replayRecord{seq: rec.Seq, at: rec.Time, typ: typ, payload: append([]byte(nil), rec.Payload...)}
	if typ == messages.RecordUserCreated {
		// user_created also sets the ceiling.
		u.parts[partCeiling] = u.parts[partCreated]
	}
	return nil
}

// isEventRecord reports whether replay applies every record of type t
// (the record table's ReplayEvent).
func isEventRecord(t messages.RecordType) bool {
	return int(t) < len(eventRecord) && eventRecord[t]
}

// eventRecord is the record table's ReplayEvent column by type number,
// read for every record at start.
var eventRecord = func() []bool {
	var out []bool
	for _, info := range messages.RecordTypes {
		for int(info.Type) >= len(out) {
			out = append(out, false)
		}
		out[info.Type] = info.Replay == messages.ReplayEvent
	}
	return out
}()

// States applies the surviving records of each user, in journal order,
// then the time windows as of now: the state of every created user.
func (r *Replay) States(now time.Time) (map[string]*User, error) {
	out := make(map[string]*User, len(r.users))
	for name, u := range r.users {
		recs := make([]*replayRecord, 0, numStateParts+len(u.events)+len(u.dailyPnl))
		recs = append(recs, u.events...)
		for _, p := range u.parts {
			if p != nil && !slices.Contains(recs, p) {
				recs = append(recs, p)
			}
		}
		for _, p := range u.dailyPnl {
			recs = append(recs, p)
		}
		slices.SortFunc(recs, func(a, b *replayRecord) int { return cmp.Compare(a.seq, b.seq) })
		s := New(name)
		for _, rr := range recs {
			ev, _, err := DecodeEvent(rr.typ, rr.payload)
			if err != nil {
				return nil, fmt.Errorf("replay seq %d (%s): %w", rr.seq, rr.typ, err)
			}
			if err := checkPayloadUser(rr, name, ev); err != nil {
				return nil, err
			}
			// The windows move with the journal's time, never a payload's.
			if isEventRecord(rr.typ) {
				s.Prune(rr.at)
			}
			s.Apply(ev)
		}
		if s.Exists {
			s.Prune(now)
			out[name] = s
		}
	}
	return out, nil
}
