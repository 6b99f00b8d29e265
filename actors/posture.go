package actors

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/journal"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Posture (issue 13): where a user stands, decided here in the user actor.
//
//   - HALTED: the kill switch is on.
//   - REDUCING: at least one cause holds; only risk-reducing actions go
//     through (DecideAction refuses the others with limit_exceeded).
//   - ACTIVE otherwise.
//
// The causes are journaled (posture_changed, the whole set after each
// change) before they act: a human cause (posture reduce, or the agent's
// reduce_risk_only) stays until a human resumes; an automatic cause
// (stream down longer than stream_stale_s, the day's loss at
// max_daily_loss_usdt, the journal's disk below the margin) is evaluated
// every postureEvery and clears itself when it ends.

// DefaultPostureEvery is how often a user actor evaluates the automatic
// causes.
const DefaultPostureEvery = 500 * time.Millisecond

// DefaultPositionPoll is how often, while the user holds a position, the
// venue actor reads the positions by REST so that the unrealised PnL (and
// the daily loss) follows the mark price between stream pushes.
const DefaultPositionPoll = 2 * time.Second

// postureTick asks the user actor to evaluate the automatic causes.
type postureTick struct{}

// posturePositions asks the venue actor to refresh the cache's positions
// by REST (the mark price moves without a push).
type posturePositions struct{}

// postureRun is the user actor's posture clock.
type postureRun struct {
	stopTicker chan struct{}
}

// startPostureTicker sends the actor a postureTick every postureEvery until
// stopPostureTicker.
func (u *userActor) startPostureTicker(ctx actor.Context) {
	u.stopPostureTicker()
	every := u.postureEvery
	if every <= 0 {
		return
	}
	stop := make(chan struct{})
	u.stopTicker = stop
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				root.Send(self, &postureTick{})
			}
		}
	}()
}

func (u *userActor) stopPostureTicker() {
	if u.stopTicker != nil {
		close(u.stopTicker)
		u.stopTicker = nil
	}
}

// liveAutoCauses evaluates the automatic causes now.
func (u *userActor) liveAutoCauses(now time.Time) messages.PostureCauses {
	var out messages.PostureCauses
	p := u.state.Effective(u.venue, u.env)
	if u.cache != nil {
		h := u.cache.health(now)
		if h.Open && (!h.Connected || h.Flapping) && h.DownForS >= float64(p.StreamStaleS) {
			out = out.With(messages.CauseStreamStale)
		}
		if loss := u.cache.dailyLoss(now); loss.IsPositive() && loss.GreaterThanOrEqual(p.MaxDailyLossUSDT) {
			out = out.With(messages.CauseDailyLoss)
		}
	}
	if u.disk.Low() {
		out = out.With(messages.CauseDiskLow)
	}
	return out
}

// postureDue is a posture evaluation postponed behind a journal write: it
// waits in the actor's queue and runs in its turn, after the messages
// queued before it.
type postureDue struct{}

// onPostureTick journals the automatic causes that started or ended. A
// tick while a write is in flight is postponed, not skipped: the
// evaluation is queued once (postureDue) and runs after the writes queued
// before it, so an agent that keeps a write in flight at all times cannot
// keep an automatic cause from taking effect. While recovery runs the tick
// is skipped: the next one comes soon.
func (u *userActor) onPostureTick(ctx actor.Context) {
	if u.cache != nil && u.cache.wantsPositions(u.now(), u.positionPoll) {
		u.toVenue(ctx, &posturePositions{}, nil)
	}
	if u.busy {
		if !slices.ContainsFunc(u.queue, func(q queued) bool { _, ok := q.msg.(*postureDue); return ok }) {
			u.queue = append(u.queue, queued{msg: &postureDue{}})
		}
		return
	}
	u.evaluatePosture(ctx)
}

// evaluatePosture journals the day's realised PnL when it changed, then
// the automatic causes that started or ended, unless recovery runs.
func (u *userActor) evaluatePosture(ctx actor.Context) {
	if u.recovering > 0 || !u.state.Exists {
		return
	}
	u.noteDailyPnl(ctx, func() {
		after := u.state.Posture.Human()
		for _, c := range u.liveAutoCauses(u.now()) {
			after = after.With(c)
		}
		u.writePosture(ctx, systemOrigin, after, causeReason(u.state.Posture, after), nil)
	})
}

// noteDailyPnl journals the stream cache's count of the day
// (daily_pnl_noted) when it changed since it was last journaled, then
// runs then. A failed write is tried again at the next evaluation; the
// cache keeps counting meanwhile.
func (u *userActor) noteDailyPnl(ctx actor.Context, then func()) {
	if u.cache == nil {
		then()
		return
	}
	ev, version, ok := u.cache.pendingDay(u.now())
	if !ok {
		then()
		return
	}
	ev.Environment = u.env // the cache counts this process's venue
	e := state.Event{Type: messages.RecordDailyPnlNoted, Payload: ev}
	u.write(ctx, e, systemOrigin, func(_ wal.Record, err error) {
		if err != nil {
			u.logger.Debug("could not journal the day's realised PnL", "user", u.state.User, "code", string(messages.CodeOf(err)))
		} else {
			u.commit(e)
			u.cache.notedDay(ev, version)
		}
		if !u.busy {
			then()
		}
	})
}

// causeReason names what changed between two cause sets: the first cause
// added, else the first removed ("<cause>_cleared").
func causeReason(before, after messages.PostureCauses) string {
	for _, c := range after {
		if !containsCause(before, c) {
			return c
		}
	}
	for _, c := range before {
		if !containsCause(after, c) {
			return c + "_cleared"
		}
	}
	return ""
}

func containsCause(cs messages.PostureCauses, c string) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// writePosture journals posture_changed when the causes or the state
// differ from what was journaled last, then runs then (nil error when
// nothing changed).
func (u *userActor) writePosture(ctx actor.Context, o messages.Origin, after messages.PostureCauses, reason string, then func(changed bool, err error)) {
	if after == nil {
		after = messages.PostureCauses{}
	}
	beforeState, afterState := u.state.CurrentPosture(), messages.StateOf(u.state.KillSwitch, after)
	if beforeState == afterState && sameCauses(u.state.Posture, after) {
		if then != nil {
			then(false, nil)
		}
		return
	}
	before := u.state.Posture
	if before == nil {
		before = messages.PostureCauses{}
	}
	ev := state.Event{Type: messages.RecordPostureChanged, Payload: messages.PostureChangedEvent{
		Before: beforeState, After: afterState, Reason: reason, Actor: o.Actor(), CausesBefore: before, Causes: after,
	}}

	u.write(ctx, ev, o, func(_ wal.Record, err error) {
		if err != nil {
			u.logger.Warn("could not journal a posture change", "user", u.state.User, "code", string(messages.CodeOf(err)))
		} else {
			u.commit(ev) // logs the change (activity.go)
		}
		if then != nil {
			then(err == nil, err)
		}
	})
}

func sameCauses(a, b messages.PostureCauses) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeCommand journals a command's event. A kill switch change is
// journaled together with the posture transition it makes (to or from
// HALTED), under the same actor and in the same flush (writeTwo: the
// switch record NoSync, the posture record Sync right behind it; the
// journal is ordered, so one fsync covers the two). then sees the switch
// record's outcome; the posture is committed only when both are durable
// (a posture record alone is corrected by the next evaluation).
func (u *userActor) writeCommand(ctx actor.Context, ev state.Event, o messages.Origin, then afterJournal) {
	if ev.Type != messages.RecordKillSwitchOn && ev.Type != messages.RecordKillSwitchOff {
		u.write(ctx, ev, o, then)
		return
	}
	ks, _ := ev.Payload.(messages.KillSwitchEvent)
	reason := "kill_switch_off"
	if ev.Type == messages.RecordKillSwitchOn {
		reason = "kill_switch_on"
	}
	causes := u.state.Posture
	if causes == nil {
		causes = messages.PostureCauses{}
	}
	before, after := u.state.CurrentPosture(), messages.StateOf(ks.After, causes)
	if before == after {
		// The admin's switch over the user's: still HALTED.
		u.write(ctx, ev, o, then)
		return
	}
	pev := state.Event{Type: messages.RecordPostureChanged, Payload: messages.PostureChangedEvent{
		Before: before, After: after, Reason: reason, Actor: o.Actor(), CausesBefore: causes, Causes: causes,
	}}

	for _, e := range []state.Event{ev, pev} {
		if origin := o.Actor(); !state.OriginAllowed(e, origin) {
			then(wal.Record{}, state.RefuseOrigin(e, origin))
			return
		}
	}
	if u.journal.IsDown() {
		then(wal.Record{}, errJournalDown(u.journal))
		return
	}
	if u.disk.Refuses(ev.Type) {
		// The journal would refuse the switch record (turning it off
		// waits for space) and write the posture record alone.
		then(wal.Record{}, journal.ReserveRefusal())
		return
	}
	u.writeTwo(ctx, ev, pev, o, func(rec1 wal.Record, err1, err2 error) {
		if err1 == nil && err2 == nil {
			u.commit(pev)
		} else if err2 != nil {
			u.logger.Warn("could not journal a posture change", "user", u.state.User, "code", string(messages.CodeOf(err2)))
		}
		then(rec1, err1)
	})
}

// postureCommand serves posture.show (never waits on the exchange) and
// posture.set (a human REDUCING: anyone enters, only a human leaves).
func (u *userActor) postureCommand(ctx actor.Context, m *userCommand, sender *actor.PID) {
	if !u.state.Exists {
		u.reply(ctx, sender, messages.Errorf(messages.CodeNotFound, "no such user"))
		return
	}
	c, ok := m.cmd.(*messages.SetPostureRequest)
	if !ok {
		u.reply(ctx, sender, u.postureView(u.now()))
		return
	}
	after, reason := u.state.Posture, ""
	switch {
	case c.Reduce && m.origin.Role == messages.RoleAgent:
		after, reason = after.With(messages.CauseAgent), "agent_reduce"
	case c.Reduce:
		after, reason = after.With(messages.CauseHuman), "human_reduce"
	case m.origin.Role == messages.RoleUser || m.origin.Role == messages.RoleAdmin:
		after, reason = after.Without(messages.CauseHuman).Without(messages.CauseAgent), "human_resume"
	default:
		u.reply(ctx, sender, messages.Permit(m.origin, c))
		return
	}
	u.writePosture(ctx, m.origin, after, reason, func(changed bool, err error) {
		if err != nil {
			u.reply(ctx, sender, messages.AsError(err))
			return
		}
		v := u.postureView(u.now())
		v.Changed = changed
		u.reply(ctx, sender, v)
	})
}

// maxPosturePositions bounds the positions listed, to keep the answer
// within 2 KB.
const maxPosturePositions = 6

// maxPostureBytes is the most get_posture answers (as JSON): positions
// are left out (counted in more_positions) until the answer fits, whatever
// the venue's figures are.
const maxPostureBytes = 2048 - 32 // room for "changed"

// boundPosture leaves positions out of v, last first, until its JSON fits
// in maxPostureBytes.
func boundPosture(v *messages.PostureView) {
	for len(v.Exposure.Positions) > 0 {
		b, err := json.Marshal(v)
		if err == nil && len(b) <= maxPostureBytes {
			return
		}
		v.Exposure.Positions = v.Exposure.Positions[:len(v.Exposure.Positions)-1]
		v.Exposure.More++
	}
}

// postureView is get_posture's answer: the user actor's own state and the
// venue actor's stream cache, nothing else.
func (u *userActor) postureView(now time.Time) *messages.PostureView {
	s := u.state
	p := s.Effective(u.venue, u.env)
	v := &messages.PostureView{User: s.User, Venue: u.env, State: s.CurrentPosture(), Why: s.Posture, KillSwitch: s.KillSwitch}
	if s.KillSwitch != messages.KillSwitchNone {
		v.Why = append([]string{"kill_switch_" + string(s.KillSwitch)}, v.Why...)
	}
	daily, perMinute, unconfirmed := s.Counters.Window(now, u.env)
	r := u.reserved()
	used := daily.Add(r.NotionalUSDT)
	v.Limits = map[string]messages.LimitUse{
		"daily_notional_cap_usdt":          {Used: used.String(), Left: decimal.Max(decimal.Zero, p.DailyNotionalCapUSDT.Sub(used)).String()},
		"max_orders_per_minute":            intUse(perMinute+r.Orders, p.MaxOrdersPerMinute),
		"max_unconfirmed_actions_per_hour": intUse(unconfirmed+r.Orders, p.MaxUnconfirmedActionsPerHour),
		"max_pending":                      intUse(s.WaitingConfirmations(now), p.MaxPending),
	}
	v.Loss = messages.DailyLoss{LossUSDT: decimal.Zero, MaxUSDT: p.MaxDailyLossUSDT}
	v.Stream = messages.StreamHealth{LastMessageAgeS: -1, StaleS: p.StreamStaleS}
	v.Exposure = messages.PostureExposure{Orders: map[string]messages.OriginOrders{}, Positions: []messages.PositionExposure{}}
	if u.cache != nil {
		v.Stream = u.cache.health(now)
		v.Stream.StaleS = p.StreamStaleS
		v.Loss.LossUSDT = decimal.Max(decimal.Zero, u.cache.dailyLoss(now))
		v.Exposure = u.cache.exposure(s.OrderOrigin, maxPosturePositions)
	}
	if !v.Exposure.Known {
		v.Exposure.Note = "the stream cache has nothing yet; read get_open_orders and get_positions"
	}
	if u.disk != nil {
		v.Disk = &messages.DiskHealth{FreeBytes: u.disk.FreeBytes(), MarginBytes: u.disk.MarginBytes()}
	}
	boundPosture(v)
	return v
}

func intUse(used, max int) messages.LimitUse {
	return messages.LimitUse{Used: strconv.Itoa(used), Left: strconv.Itoa(maxInt(0, max-used))}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// venueWake starts the user's venue actor (and with it the private
// stream) when the user has a key for this venue and the venue has a
// stream, so that the stream's health and the exposure are known before
// the first action.
type venueWake struct{}

func (u *userActor) wakeVenue(ctx actor.Context) {
	if u.streams == nil {
		return
	}
	if _, ok := u.state.CredentialFor(u.env); ok {
		u.toVenue(ctx, &venueWake{}, nil)
	}
}
