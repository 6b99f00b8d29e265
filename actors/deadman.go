package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The dead-man switch (policy cancel_on_disconnect and heartbeat_s). The
// MCP layer tells the user actor when one of the user's agent sessions
// opens, speaks or ends (System.SessionEvent). The user actor owns the
// count of open sessions and the time it last heard from any of them.
// When the last session ends and cancel_on_disconnect is on, or nothing
// was heard for heartbeat_s, it reads the user's open orders and cancels
// those of origin system one by one by id through the action path
// (execute: order_attempt, the venue's cancel, order_outcome), journaled
// by system:deadman after a deadman_triggered record. It never uses the
// venue's cancel-all and never touches an order the server did not place;
// reduce-only orders of the server are left (they can only lower risk).
// Nothing the agent sends can turn it off: the policy is tighten-only and
// only a human changes it outside the chat.
//
// Silence is counted from the latest of: the last message of any session
// of the user, the end of the last tool call in flight (a call in flight,
// such as a wait_for_update, is a sign of life while it lasts), the start
// of the user's actor, and the last change of heartbeat_s. So a heartbeat
// a human turns on fires heartbeat_s later if nothing is heard, and after
// a restart a user with heartbeat_s on (whose actor the server starts at
// once) has its orders cancelled heartbeat_s after the start unless an
// agent session of it speaks by then.

// deadmanOrigin is the origin of the dead-man switch's records.
var deadmanOrigin = messages.Origin{Role: messages.RoleDeadman, Channel: messages.ChannelInternal, PeerUID: -1, PeerPID: -1}

const (
	// deadmanTickMax bounds the wait between two heartbeat checks, so a
	// policy change is seen within it.
	deadmanTickMax = time.Second
	// deadmanRetries is how often a failed read of the open orders is
	// tried again, deadmanRetryWait apart.
	deadmanRetries   = 3
	deadmanRetryWait = 2 * time.Second
	// deadmanFailureRecordEvery: a trigger that could not read the open
	// orders is journaled at most this often per user (D86).
	deadmanFailureRecordEvery = time.Minute
	// deadmanMaxPages bounds the pages of open orders read per category.
	deadmanMaxPages = 20
)

// sessionSignal is one session event for the user actor. done, set on a
// SessionClosed, is closed once the dead-man switch has nothing running
// (so a stdio server that is about to exit waits for its cancels).
type sessionSignal struct {
	kind messages.SessionEventKind
	done chan struct{}
	// uncounted: a SessionClosed for a session the actor never counted,
	// sent while the shard counts none of the user's sessions
	// (FrontSessionsChanged): the user's last session is over, and the
	// count does not move.
	uncounted bool
}

// deadmanTick is the heartbeat timer firing.
type deadmanTick struct{}

// deadmanRetry starts a trigger again (a failed read, or recovery under way).
type deadmanRetry struct{ reason string }

// deadmanFetch asks the venue actor for every open order of the user.
type deadmanFetch struct{ reason string }

// deadmanOrders is the outcome of a deadmanFetch.
type deadmanOrders struct {
	reason string
	orders []messages.Order
	err    *messages.Error
}

// deadmanState is the user actor's part of the dead-man switch. It lives
// in memory only: sessions do not survive a restart. In a cluster a
// shard's system journals the sessions' opens and ends with their front,
// and a new owner of the shard gives them back to the actor
// (sessionfronts.go).
type deadmanState struct {
	// sessions counts the user's open sessions. It may go below zero for
	// a moment: the first events of a user whose actor was not running
	// reach it through its supervisor and can be overtaken by later ones
	// (D86); an open that brings it back to zero ended the last session.
	sessions int
	// calls counts the tool calls in flight (SessionCallStarted not yet
	// ended): while above zero the user is not silent. Like sessions, it
	// may go below zero for a moment.
	calls int
	// earlyDone are the done channels of session ends that overtook their
	// opens: closed when the trigger those opens start is over.
	earlyDone []chan struct{}
	// failureJournaled is when a trigger that could not read the orders
	// was last journaled.
	failureJournaled time.Time
	// lastHeard is when silence started to count (see above).
	lastHeard time.Time
	// heartbeatS is the heartbeat_s the timer was last set up for.
	heartbeatS int
	// silentFired: the silence trigger fired and nothing was heard since.
	silentFired bool
	tickArmed   bool
	// running: a trigger is reading or cancelling.
	running bool
	retries int
	// waiters are closed when the running trigger ends.
	waiters []chan struct{}
}

// isDeadmanMessage reports whether the user actor serves m in handleDeadman.
func isDeadmanMessage(m any) bool {
	switch m.(type) {
	case *sessionSignal, *deadmanTick, *deadmanRetry, *deadmanOrders, *watchAsk, *unwatch:
		return true
	}
	return false
}

// handleDeadman serves the dead-man switch's messages and hands watches
// to the venue actor.
func (u *userActor) handleDeadman(ctx actor.Context, msg any, sender *actor.PID) {
	u.deadmanState()
	switch m := msg.(type) {
	case *sessionSignal:
		u.onSession(ctx, m)
	case *deadmanTick:
		u.deadman.tickArmed = false
		u.checkHeartbeat(ctx)
	case *deadmanRetry:
		u.toVenue(ctx, &deadmanFetch{reason: m.reason}, ctx.Self())
	case *deadmanOrders:
		u.onDeadmanOrders(ctx, m)
	case *watchAsk, *unwatch:
		u.toVenue(ctx, m, sender)
	}
}

// deadmanState returns the dead-man switch's state, made on first use.
func (u *userActor) deadmanState() *deadmanState {
	if u.deadman == nil {
		u.deadman = &deadmanState{}
	}
	return u.deadman
}

// heartbeatPolicy sets the heartbeat timer up for the current heartbeat_s
// when it differs from the one seen last (the actor's start, a policy
// change): a heartbeat turned on or changed counts silence from now at
// the earliest, and is armed without waiting for a message.
func (u *userActor) heartbeatPolicy(ctx actor.Context) {
	d := u.deadmanState()
	hb := u.state.Effective(u.venue, u.env).HeartbeatS
	if hb == d.heartbeatS {
		return
	}
	d.heartbeatS = hb
	if hb <= 0 {
		return
	}
	if now := u.now(); d.lastHeard.Before(now) {
		d.lastHeard = now
	}
	d.silentFired = false
	u.armHeartbeat(ctx)
}

func (u *userActor) onSession(ctx actor.Context, m *sessionSignal) {
	d := u.deadman
	if m.uncounted {
		if d.sessions == 0 {
			u.sessionsEnded(ctx, m.done)
		} else if m.done != nil {
			close(m.done)
		}
		return
	}
	switch m.kind {
	case messages.SessionCallStarted:
		d.calls++
	case messages.SessionCallEnded:
		d.calls--
		if d.calls < 0 {
			return // it overtook its start: no sign of life yet
		}
	case messages.SessionOpened:
		d.sessions++
		if d.sessions <= 0 {
			// This open's session already ended (its end overtook it):
			// at zero, the user's last session is over.
			if d.sessions == 0 {
				u.sessionsEnded(ctx, d.earlyDone...)
				d.earlyDone = nil
			}
			return
		}
	case messages.SessionClosed:
		d.sessions--
		switch {
		case d.sessions == 0:
			u.sessionsEnded(ctx, m.done)
		case d.sessions < 0 && m.done != nil:
			d.earlyDone = append(d.earlyDone, m.done)
		case m.done != nil:
			close(m.done)
		}
		return // an ending session is no sign of life
	}
	d.lastHeard, d.silentFired = u.now(), false
	u.armHeartbeat(ctx)
}

// sessionsEnded fires the disconnect trigger when the user's last session
// ended and the policy asks for it; each done is closed when that trigger
// is over (at once when none runs).
func (u *userActor) sessionsEnded(ctx actor.Context, done ...chan struct{}) {
	d := u.deadman
	if u.state.Effective(u.venue, u.env).CancelOnDisconnect {
		u.fireDeadman(ctx, messages.DeadmanDisconnect)
	}
	for _, ch := range done {
		switch {
		case ch == nil:
		case d.running:
			d.waiters = append(d.waiters, ch)
		default:
			close(ch)
		}
	}
}

// armHeartbeat starts the heartbeat timer if heartbeat_s is on and none
// is pending: it fires at the deadline, or after deadmanTickMax if that is
// sooner.
func (u *userActor) armHeartbeat(ctx actor.Context) {
	d := u.deadman
	hb := u.state.Effective(u.venue, u.env).HeartbeatS
	if hb <= 0 || d.tickArmed || d.silentFired || d.lastHeard.IsZero() {
		return
	}
	wait := min(d.lastHeard.Add(time.Duration(hb)*time.Second).Sub(u.now()), deadmanTickMax)
	if wait < 0 {
		wait = 0
	}
	d.tickArmed = true
	root, self := ctx.ActorSystem().Root, ctx.Self()
	time.AfterFunc(wait, func() { root.Send(self, &deadmanTick{}) })
}

// checkHeartbeat fires the silence trigger when nothing was heard for
// heartbeat_s, else waits again.
func (u *userActor) checkHeartbeat(ctx actor.Context) {
	d := u.deadman
	hb := u.state.Effective(u.venue, u.env).HeartbeatS
	if hb <= 0 || d.silentFired || d.lastHeard.IsZero() {
		return
	}
	if d.calls > 0 {
		d.lastHeard = u.now() // a call in flight: alive while it lasts
	}
	if u.now().Sub(d.lastHeard) >= time.Duration(hb)*time.Second {
		d.silentFired = true
		u.fireDeadman(ctx, messages.DeadmanSilence)
		return
	}
	u.armHeartbeat(ctx)
}

// fireDeadman starts a trigger: the venue actor reads the open orders.
func (u *userActor) fireDeadman(ctx actor.Context, reason string) {
	d := u.deadman
	if d.running {
		return
	}
	d.running = true
	u.logger.Info("dead-man switch fired", "user", u.state.User, "reason", reason)
	u.toVenue(ctx, &deadmanFetch{reason: reason}, ctx.Self())
}

// retryDeadman starts the trigger again after wait.
func (u *userActor) retryDeadman(ctx actor.Context, reason string, wait time.Duration) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	time.AfterFunc(wait, func() { root.Send(self, &deadmanRetry{reason: reason}) })
}

// onDeadmanOrders journals deadman_triggered, then cancels the server's
// plain open orders one by one.
func (u *userActor) onDeadmanOrders(ctx actor.Context, m *deadmanOrders) {
	d := u.deadman
	if u.recovering > 0 {
		// Writes wait for the recovery phase; read again after it.
		u.retryDeadman(ctx, m.reason, 500*time.Millisecond)
		return
	}
	p := u.state.Effective(u.venue, u.env)
	ev := messages.DeadmanTriggeredEvent{At: u.now().UTC(), Reason: m.reason, HeartbeatS: p.HeartbeatS}
	var cancel []messages.Order
	if m.err != nil {
		ev.Error = m.err.Code
	}
	for _, o := range m.orders {
		switch {
		case o.Status != "New" && o.Status != "PartiallyFilled":
		case u.state.OrderOrigin(o.OrderLinkID) != messages.OriginSystem:
			ev.External++
		case o.ReduceOnly:
			ev.Protective++
		default:
			cancel = append(cancel, o)
		}
	}
	ev.Orders = len(cancel)
	// A trigger is journaled when it cancels something, and one that
	// could not read the orders at most once a deadmanFailureRecordEvery:
	// sessions opened and closed in a loop must not grow the journal (D86).
	switch {
	case m.err == nil && len(cancel) == 0:
		u.logger.Info("dead-man switch: nothing to cancel", "user", u.state.User, "reason", m.reason,
			"external", ev.External, "protective", ev.Protective)
		u.deadmanDone()
		return
	case m.err != nil && !d.failureJournaled.IsZero() && u.now().Sub(d.failureJournaled) < deadmanFailureRecordEvery:
		u.deadmanReadFailed(ctx, m)
		return
	case m.err != nil:
		d.failureJournaled = u.now()
	}
	u.write(ctx, state.Event{Type: messages.RecordDeadmanTriggered, Payload: ev}, deadmanOrigin, func(_ wal.Record, err error) {
		if err != nil {
			u.logger.Error("dead-man switch: could not journal its trigger; nothing cancelled", "user", u.state.User, "code", string(messages.CodeOf(err)))
			u.deadmanDone()
			return
		}
		u.logger.Info("dead-man switch trigger journaled", "user", u.state.User, "reason", m.reason, "orders", len(cancel))
		if m.err != nil {
			u.deadmanReadFailed(ctx, m)
			return
		}
		d.retries = 0
		u.cancelForDeadman(ctx, cancel, 0)
	})
}

// deadmanReadFailed tries the trigger again, or gives up after
// deadmanRetries.
func (u *userActor) deadmanReadFailed(ctx actor.Context, m *deadmanOrders) {
	d := u.deadman
	if d.retries < deadmanRetries {
		d.retries++
		u.retryDeadman(ctx, m.reason, deadmanRetryWait)
		return
	}
	u.logger.Error("dead-man switch: the open orders could not be read; nothing cancelled", "user", u.state.User, "code", string(m.err.Code))
	u.deadmanDone()
}

// cancelForDeadman cancels orders[i:], one at a time, each through the
// action path under system:deadman.
func (u *userActor) cancelForDeadman(ctx actor.Context, orders []messages.Order, i int) {
	if i == len(orders) {
		u.logger.Info("dead-man switch done", "user", u.state.User, "cancelled", len(orders))
		u.deadmanDone()
		return
	}
	o := orders[i]
	plan := risk.Plan{Tool: "cancel_order", Category: o.Category, Symbol: o.Symbol, SettleLinkID: o.OrderLinkID, Changes: &o,
		Cancel: &messages.CancelOrderRequest{Category: o.Category, Symbol: o.Symbol, OrderID: o.OrderID}}
	a := u.execute(ctx, plan, deadmanOrigin, nil)
	a.after = func() { u.cancelForDeadman(ctx, orders, i+1) }
}

// deadmanDone ends the running trigger and releases who waits for it.
func (u *userActor) deadmanDone() {
	d := u.deadman
	d.running, d.retries = false, 0
	for _, w := range d.waiters {
		close(w)
	}
	d.waiters = nil
}

// fetchAllOpenOrders reads every open order of the user (linear orders
// settled in USDT, and spot), off the mailbox, for the dead-man switch.
func (v *venueActor) fetchAllOpenOrders(ctx actor.Context, m *deadmanFetch) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	if v.session == nil {
		err := v.noSessionError()
		ctx.Send(userPID, &deadmanOrders{reason: m.reason, err: err})
		return
	}
	s := v.session
	offMailbox(ctx, v.logger, nil, 4*v.timeout, userPID, func(c context.Context) any {
		out := &deadmanOrders{reason: m.reason}
		for _, cat := range []messages.Category{messages.CategoryLinear, messages.CategorySpot} {
			cursor := ""
			for page := 0; ; page++ {
				if page == deadmanMaxPages {
					out.err = messages.Internal(fmt.Errorf("dead-man switch: more than %d pages of open orders", deadmanMaxPages))
					return out
				}
				res, err := s.OpenOrders(c, venue.OrderQuery{Category: cat, Limit: venue.MaxOpenOrdersLimit, Cursor: cursor})
				if err != nil {
					out.err = messages.AsError(err)
					return out
				}
				out.orders = append(out.orders, res.Items...)
				if res.NextCursor == "" {
					break
				}
				cursor = res.NextCursor
			}
		}
		return out
	}, func(err *messages.Error) any { return &deadmanOrders{reason: m.reason, err: err} })
}

// SessionEvent tells the user's actor that one of the user's agent
// sessions opened, spoke or ended (the MCP layer calls it for every
// message). It does not wait, except for SessionClosed: that returns once
// the dead-man switch it may trigger has finished its cancels, or when ctx
// ends. A user that does not exist is ignored.
func (s *System) SessionEvent(ctx context.Context, user string, kind messages.SessionEventKind) {
	if s.users == nil || !messages.UserNamePattern.MatchString(user) || s.homeUser(user) != nil {
		return
	}
	m := &sessionSignal{kind: kind}
	if kind == messages.SessionClosed {
		m.done = make(chan struct{})
	}
	s.tellUser(user, m)
	if m.done != nil {
		select {
		case <-m.done:
		case <-ctx.Done():
		}
	}
}

// tellUser sends msg to the user's actor without waiting for an answer,
// starting the actor first if it is not running.
func (s *System) tellUser(user string, msg any) {
	if pid := s.registry.get(user); pid != nil {
		s.sys.Root.Send(pid, msg)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout+5*time.Second)
	defer cancel()
	ens, err := ask[*ensureUserResponse](ctx, s, s.users, &ensureUserRequest{user: user})
	if err != nil || ens.err != nil {
		return
	}
	s.sys.Root.Send(ens.pid, msg)
}
