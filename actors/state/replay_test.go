package state

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func dec(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
func intp(v int) *int               { return &v }

func TestCompactedReplayEqualsFullReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	users := []string{"a", "b", "c", "d"}
	levels := []messages.KillSwitch{messages.KillSwitchNone, messages.KillSwitchUser, messages.KillSwitchAdmin}
	for round := range 200 {
		full := map[string]*User{}
		replay := NewReplay()
		seq := uint64(0)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		type snapshot struct {
			s    *User
			want string
		}
		var snaps []snapshot
		emit := func(user string, ev Event) {
			seq++
			payload, _ := json.Marshal(ev.Payload)
			actor := messages.ActorCLIAdmin
			if ev.Type == messages.RecordOrderAttempt || ev.Type == messages.RecordOrderOutcome {
				actor = messages.ActorAgent
			}
			if err := replay.OnRecord(Record{Seq: seq, Time: at, Type: ev.Type, User: user, Actor: actor, Payload: payload}); err != nil {
				t.Fatal(err)
			}
			back, _, err := DecodeEvent(ev.Type, payload)
			if err != nil {
				t.Fatal(err)
			}
			if full[user] == nil {
				full[user] = New(user)
			}
			full[user].Apply(back)
			if rng.IntN(5) == 0 {
				// A reader's committed snapshot must not change when
				// later events are applied (copy on write; the order
				// part, which changes in place, is not in it: D77).
				// (What the user actor's committed snapshot hands a reader.)
				c := full[user].WithoutOrderPart()
				b, _ := json.Marshal(c)
				snaps = append(snaps, snapshot{c, string(b)})
			}
		}
		var open []string // client order ids of open attempts
		order := func(u string) {
			at = at.Add(time.Duration(rng.IntN(6*3600)) * time.Second)
			if len(open) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(open))
				id := open[i]
				open = slices.Delete(open, i, i+1)
				status := []string{messages.OutcomeAccepted, messages.OutcomeRejected, messages.OutcomeNotFound}[rng.IntN(3)]
				emit(id[:1], Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{ClientOrderID: id, At: at, Status: status}})
				return
			}
			id := fmt.Sprintf("%s-gx-%d", u, seq)
			open = append(open, id)
			key := ""
			if rng.IntN(2) == 0 {
				key = fmt.Sprintf("k%d", rng.IntN(5))
			}
			emit(u, Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{
				ClientOrderID: id, At: at, Category: messages.CategoryLinear, Symbol: "BTCUSDT",
				NotionalUSDT: decimal.NewFromInt(int64(1 + rng.IntN(500))), RiskIncreasing: rng.IntN(3) > 0,
				Confirmed: rng.IntN(2) == 0, IdempotencyKey: key, ArgsSHA256: fmt.Sprint(rng.IntN(3)),
			}})
		}
		// A record of another type in between must not matter.
		for range 40 {
			u := users[rng.IntN(len(users))]
			if full[u] == nil || !full[u].Exists {
				emit(u, NewUserEvent(u, messages.PolicySettings{MaxPending: intp(rng.IntN(9))}))
				continue
			}
			settings := messages.PolicySettings{MaxPending: intp(rng.IntN(9)), MaxLeverage: dec(fmt.Sprint(1 + rng.IntN(20)))}
			switch rng.IntN(8) {
			case 6, 7:
				order(u)
			case 0:
				emit(u, Event{Type: messages.RecordPolicyCeilingSet, Payload: messages.PolicyChangedEvent{After: settings}})
			case 1:
				// Replay refuses a tighten that loosens the own settings.
				if after := full[u].Own.Merge(settings); len(looserOwn(full[u].Own, after)) == 0 {
					emit(u, Event{Type: messages.RecordPolicyTightened, Payload: messages.PolicyChangedEvent{Before: full[u].Own, After: after}})
				}
			case 2:
				emit(u, Event{Type: messages.RecordPolicyOverridesReset, Payload: messages.PolicyChangedEvent{After: messages.PolicySettings{}}})
			case 3:
				// Only a stricter switch is journaled (decideKillSwitch).
				if ks, to := full[u].KillSwitch, levels[1+rng.IntN(2)]; killRank(to) > killRank(ks) {
					emit(u, Event{Type: messages.RecordKillSwitchOn, Payload: messages.KillSwitchEvent{Before: ks, After: to}})
				}
			case 4:
				if ks := full[u].KillSwitch; ks != messages.KillSwitchNone {
					emit(u, Event{Type: messages.RecordKillSwitchOff, Payload: messages.KillSwitchEvent{Before: ks, After: levels[0]}})
				}
			case 5:
				if rng.IntN(4) == 0 {
					emit(u, Event{Type: messages.RecordUserDisabled, Payload: messages.UserDisabledEvent{User: u}})
				}
			}
			seq++
			replay.OnRecord(Record{Seq: seq, Type: messages.RecordToolCall, User: u, Payload: []byte(`{}`)})
		}
		now := at.Add(time.Duration(rng.IntN(30*3600)) * time.Second)
		got, err := replay.States(now)
		if err != nil {
			t.Fatal(err)
		}
		for u, want := range full {
			g := got[u]
			if g == nil {
				t.Fatalf("round %d: user %s missing", round, u)
			}
			want.Prune(now)
			a, _ := json.Marshal(want)
			b, _ := json.Marshal(g)
			if string(a) != string(b) {
				t.Fatalf("round %d user %s:\nfull      %s\ncompacted %s", round, u, a, b)
			}
		}
		for i, sn := range snaps {
			if b, _ := json.Marshal(sn.s); string(b) != sn.want {
				t.Fatalf("round %d: committed snapshot %d changed after later events:\nthen %s\nnow  %s", round, i, sn.want, b)
			}
		}
		if len(got) != len(full) {
			t.Fatalf("round %d: %d users, want %d", round, len(got), len(full))
		}
	}
}

// The record table and the replay code agree: every type replay keeps is
// decoded, every whole-value type has a state part, and nothing else is
// decoded as user state.
func TestRecordTableMatchesReplay(t *testing.T) {
	for _, info := range messages.RecordTypes {
		_, decoded, _ := DecodeEvent(info.Type, []byte(`{}`))
		_, whole := statePart(info.Type)
		whole = whole || info.Type == messages.RecordUserCreated || info.Type == messages.RecordDailyPnlNoted // one per venue
		switch info.Replay {
		case messages.ReplayNone:
			if decoded || whole {
				t.Errorf("%s: an audit record is replayed", info.Name)
			}
		case messages.ReplayWhole:
			if !decoded || !whole {
				t.Errorf("%s: a whole-value record without a decoder or state part", info.Name)
			}
		case messages.ReplayEvent:
			if !decoded || whole || !isEventRecord(info.Type) {
				t.Errorf("%s: an event record is not replayed in full", info.Name)
			}
		}
	}
}
