package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/journal"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// userCommand carries a command to a user actor with its structured
// origin, which the server sets from the channel, never from the command;
// its journal actor and channel are journaled with every change.
type userCommand struct {
	ctx    context.Context // the caller's: bounds any venue step
	cmd    messages.Command
	origin messages.Origin
	// checked says the boundary (Submit) validated a trading command's
	// arguments: the driver trusts them (D139).
	checked bool
}

// decideAsk carries a DecideActionRequest with the caller's context.
type decideAsk struct {
	ctx context.Context
	req *messages.DecideActionRequest
}

// lateRecord is a record that became durable for an earlier incarnation of
// the user actor (it crashed while the write was in flight); the new one
// applies it so its state matches the journal.
type lateRecord struct{ rec wal.Record }

// ensureUserRequest asks the users supervisor to make sure the user's actors
// run (user actors are spawned on first use). Answer: *ensureUserResponse.
type ensureUserRequest struct{ user string }

type ensureUserResponse struct {
	pid *actor.PID // the user's supervisor: it forwards to the user actor
	err *messages.Error
}

var errActorRestarted = errors.New("the user actor restarted while this request was in flight")

// committed holds the last durable state of one user, for a restart. Only
// the user actor writes it, after each journaled change; the actor's
// producer reads it when the supervisor restarts the actor, and readers on
// other goroutines (venue actor, user list, token lookup) read it any
// time. Apply replaces the fields those readers see with new values, never
// changing them in place, so a shallow copy is a safe snapshot of them.
// The order part (state/orders.go) and the confirmations
// (state/confirm.go) change in place and are the user actor's own (D77):
// load leaves them out, resume copies them for the next incarnation.
type committed struct{ p atomic.Pointer[state.User] }

func (c *committed) store(s *state.User) { cp := *s; c.p.Store(&cp) }

// load is a snapshot for a reader on another goroutine, without the
// order part.
func (c *committed) load() *state.User { return c.p.Load().WithoutOrderPart() }

// resume is the state a new incarnation of the user actor starts from: the
// last durable state with a private copy of the order part.
func (c *committed) resume() *state.User { return c.p.Load().OwnOrderPart() }

// queued is a message that arrived while a journal write was in flight.
type queued struct {
	msg    any
	sender *actor.PID
}

// serial gives an actor strict one-at-a-time journal writes without
// blocking its mailbox: while a write is in flight, later messages wait in
// a FIFO (protoactor's Stash is LIFO and replays only on restart, so it is
// not used), and run in order once the write is durable. Venue calls never
// set busy: they are actions (actions.go).
type serial struct {
	busy  bool
	queue []queued
}

// userDeps is what every user actor is given: fixed at construction and
// shared read-only.
type userDeps struct {
	venue     messages.VenueLevel // arming level of this process's venue
	env       string              // this process's venue: paper, bybit-demo, ...
	journal   *journal.Writer     // also the journal's health: refuses once down
	logger    *slog.Logger
	masterKey []byte        // opens the sealed keys; never logged
	factory   ClientFactory // builds the user's venue client
	streams   StreamFactory // opens the user's private stream (nil: none)
	// settleWait bounds the wait for an unknown outcome on the stream.
	settleWait time.Duration
	// recoveryWait bounds a write's wait for the recovery phase.
	recoveryWait time.Duration
	timeout      time.Duration // one venue call
	now          func() time.Time
	mw           actor.PropsOption
	// registry maps each running user to its user actor (written by the
	// users supervisor, read by System).
	registry *userRegistry
	// tokens finds the user of a bearer token (tokens.go).
	tokens *tokenIndex
	// disk watches the journal's free space (posture; nil: not watched).
	disk *journal.DiskWatch
	// postureEvery is how often the automatic posture causes are
	// evaluated; positionPoll how often an open position's mark is read.
	postureEvery, positionPoll time.Duration
	// confirmCLI: the server runs with GX_CONFIRM_CLI_ENABLED=true, so
	// the CLI may decide confirmations (confirm.go).
	confirmCLI bool
	// tickets tie a trading call's ask to its action (askbound.go): an
	// action whose caller stopped waiting before it committed never
	// sends.
	tickets *sendTickets
	// feed serves decisions' market data from caches (nil: REST).
	feed *venue.MarketFeed
	// fence says whether this process may still send venue writes for
	// its users (Config.Fence; nil: always).
	fence func() bool
	// sendsFrom is when this System started (wall clock): a write of an
	// earlier owner of the journal left before it (recovery.go).
	sendsFrom time.Time
	// sends are the users' venue writes in flight in this System
	// (recovery.go).
	sends *sendClocks
}

// userActor is the thin shell around one user's state (state.User): it
// decides, journals, applies and replies. Decisions for one user are strictly
// ordered; different users run in parallel. Work that waits on the venue
// is an action in the table (actions.go), never a blocked mailbox. Its
// sibling under the user's supervisor, the venue actor, owns the session.
type userActor struct {
	*userDeps
	state   *state.User
	snap    *committed
	actions map[uint64]*action
	// venuePID is the user's venue actor, the sibling every venue call
	// goes to (toVenue), once their supervisor started it (venueRef
	// holds it for the next incarnation); toStartedVenue are the
	// messages waiting for it, in order.
	venuePID       *actor.PID
	venueRef       *atomic.Pointer[actor.PID]
	toStartedVenue []queued
	// replaced is set when this incarnation is being restarted: a journal
	// write it started and that completes later is handed to the new one.
	replaced bool
	// recovering counts the open attempts still being reconciled at start;
	// while it is above zero, writes wait (recovery.go).
	recovering int
	// rechecking counts the key re-checks in flight; while it is above
	// zero, trading calls wait (recovery.go).
	rechecking int
	// foreignAttemptsLogged: the warning about open attempts of another
	// venue was logged once.
	foreignAttemptsLogged bool
	// anomalies rate-limits the venue_anomaly records (anomaly.go).
	anomalies anomalyLimiter
	// cancelPace paces the cancels of cancel_all_orders (cancelall.go).
	cancelPace cancelPacer
	// deadman is the dead-man switch's state (deadman.go).
	deadman *deadmanState
	// executing counts the writes of each approved confirmation this
	// incarnation runs (confirm.go).
	executing map[string]int
	// runEnded names the runs whose end record went out with their last
	// order_outcome (runEnd).
	runEnded map[string]bool
	// qtySteps remembers the qty step of each instrument a place_order
	// decision saw ("category:symbol"), so that the safety net can
	// recognise another spelling of a keyless order before the gate
	// (driver.go). In memory only: unknown, the exact spelling still
	// matches.
	qtySteps map[string]decimal.Decimal
	serial
	// cache is the user's stream cache, written by the venue actor
	// (posturecache.go).
	cache *streamCache
	postureRun
	// droppedTally counts the stream's drops for stream_dropped
	// (venueupdates.go).
	droppedTally droppedTally
}

// afterJournal is the continuation of one journal write.
type afterJournal func(rec wal.Record, err error)

func (u *userActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		u.state = u.snap.resume()
		u.actions = map[uint64]*action{}
		u.startRecovery(ctx)
		if u.cache != nil {
			u.cache.restoreDay(u.state.DailyPnlOn(u.env), u.now())
		}
		u.startPostureTicker(ctx)
		u.wakeVenue(ctx)
		u.heartbeatPolicy(ctx) // silence counts from the start (deadman.go)
		// Confirmations left waiting, approved or executing by an earlier
		// process are looked at once the recovery phase is over.
		ctx.Send(ctx.Self(), &confirmSweep{})
	case *actor.Restarting:
		u.stopPostureTicker()
		u.replaced = true
		u.failInFlight(ctx)
		u.failVenueWaiting(ctx)
	case *actor.Stopping:
		u.stopPostureTicker()
	case *postureTick:
		u.onPostureTick(ctx)
	case *lateRecord:
		if ev, ok, err := state.DecodeEvent(messages.RecordType(m.rec.Type), m.rec.Payload); ok && err == nil {
			u.commit(ev)
		}
	case *userCommand, *decideAsk, *accountAsk, *keyChecked, *orderLookedUp, *crashRequest, *confirmExecute, *confirmDone, *confirmSweep:
		u.handle(ctx, m, ctx.Sender())
	case *venueStarted:
		u.onVenueStarted(ctx, m)
	case *recoveryHoldExpired:
		u.onRecoveryHoldExpired(ctx, m)
	case *attemptRelook:
		u.onAttemptRelook(ctx, m)
	case *orderIDsReused:
		u.noteReused(ctx, m) // journaled without waiting, like every anomaly
	default:
		if isOrderMessage(m) || isDeadmanMessage(m) {
			u.handle(ctx, m, ctx.Sender())
		}
	}
}

// handle runs one message now, or queues it while a write is in flight.
func (u *userActor) handle(ctx actor.Context, msg any, sender *actor.PID) {
	if !u.busy && !u.held(msg) && isTradingCall(msg) && u.keyCheckDue() {
		u.recheckThen(ctx, msg, sender)
		return
	}
	if held := u.held(msg); u.busy || held {
		u.queue = append(u.queue, queued{msg, sender})
		if held && sender != nil && !systemCommand(msg) {
			u.boundRecoveryHold(ctx, msg)
		}
		return
	}
	if e := refuseCancelled(msg); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	switch m := msg.(type) {
	case *userCommand:
		switch c := m.cmd.(type) {
		case *messages.AddCredentialRequest:
			u.addCredential(ctx, m, c, sender)
		case *messages.IssueTokenRequest, *messages.RevokeTokenRequest, *messages.ListTokensRequest:
			u.tokenCommand(ctx, m, sender)
		case *messages.ShowPostureRequest, *messages.SetPostureRequest:
			u.postureCommand(ctx, m, sender)
		case *messages.RecheckCredentialRequest:
			if e := u.refuseCredentialCommand(c.Environment); e != nil {
				u.reply(ctx, sender, e)
				return
			}
			u.recheck(ctx, m, sender, func(a *action, err *messages.Error) {
				if err != nil {
					u.finish(ctx, a, err)
					return
				}
				u.finish(ctx, a, u.state.CredentialView(u.env))
			})
		default:
			if !u.tradingCommand(ctx, m, sender) {
				u.command(ctx, m, sender)
			}
		}
	case *decideAsk:
		u.decide(ctx, m, sender)
	case *accountAsk:
		u.accountRead(ctx, m, sender)
	case *keyChecked:
		u.onKeyChecked(m)
	case *orderLookedUp:
		u.onOrderLookedUp(ctx, m)
	case *crashRequest:
		panic("user: crash requested by test")
	case *confirmExecute:
		u.onConfirmExecute(ctx, m)
	case *confirmDone:
		u.onConfirmDone(ctx, m)
	case *confirmSweep:
		u.onConfirmSweep(ctx)
	case *postureDue:
		u.evaluatePosture(ctx)
	default:
		if isDeadmanMessage(msg) {
			u.handleDeadman(ctx, msg, sender)
			return
		}
		u.handleOrder(ctx, msg, sender)
	}
}

// refuseCancelled refuses a command or decision whose caller has stopped
// waiting (its context is done), typically one held in the queue behind a
// journal write or the recovery phase: the caller was told it failed, so it
// must never take effect later.
func refuseCancelled(msg any) *messages.Error {
	var c context.Context
	switch m := msg.(type) {
	case *userCommand:
		c = m.ctx
	case *decideAsk:
		c = m.ctx
	}
	if c == nil || c.Err() == nil {
		return nil
	}
	return &messages.Error{
		Code:     messages.CodeInternalError,
		Message:  "cancelled before it was applied; nothing journaled",
		NextStep: "check the state (policy show) and send the command again if it is still wanted",
		Details:  map[string]any{"reason": "cancelled"},
		Err:      c.Err(),
	}
}

// commit applies a durable event and records the new committed state.
func (u *userActor) commit(ev state.Event) {
	u.state.Prune(u.now())
	u.state.Apply(ev)
	u.snap.store(u.state)
	u.tokens.note(ev, u.state.User, u.snap)
	u.logActivity(ev)
}

func (u *userActor) reply(ctx actor.Context, to *actor.PID, v any) {
	if to != nil {
		ctx.Send(to, v)
	}
}

func (u *userActor) command(ctx actor.Context, m *userCommand, sender *actor.PID) {
	switch c := m.cmd.(type) {
	case *messages.ShowCredentialRequest, *messages.DeleteCredentialRequest:
		env := ""
		if sc, ok := c.(*messages.ShowCredentialRequest); ok {
			env = sc.Environment
		} else {
			env = c.(*messages.DeleteCredentialRequest).Environment
		}
		if e := u.refuseCredentialCommand(env); e != nil {
			u.reply(ctx, sender, e)
			return
		}
	}
	ev, err := u.state.Decide(m.cmd, u.venue, u.env)
	if err != nil {
		u.reply(ctx, sender, messages.AsError(err))
		return
	}
	if ev == nil {
		u.reply(ctx, sender, u.answer(m.cmd, false))
		return
	}
	u.writeCommand(ctx, *ev, m.origin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, sender, messages.AsError(err))
			return
		}
		u.commit(*ev)
		u.heartbeatPolicy(ctx) // a heartbeat_s turned on is armed at once
		if ev.Type == messages.RecordCredentialDeleted {
			u.toVenue(ctx, &rekey{}, nil)
		}
		if _, ok := m.cmd.(*messages.DeleteCredentialRequest); ok {
			v := u.state.CredentialView(u.env)
			v.Changed = true
			u.reply(ctx, sender, v)
			return
		}
		view := u.state.View(u.venue, u.env)
		view.Changed = true
		if pc, ok := ev.Payload.(messages.PolicyChangedEvent); ok && ev.Type == messages.RecordPolicyOverridesReset {
			view.Removed = pc.Fields
		}
		u.reply(ctx, sender, view)
	})
}

// answer is the reply to a command that changed nothing.
func (u *userActor) answer(cmd messages.Command, changed bool) any {
	switch cmd.(type) {
	case *messages.ShowCredentialRequest, *messages.DeleteCredentialRequest:
		v := u.state.CredentialView(u.env)
		v.Changed = changed
		return v
	}
	v := u.state.View(u.venue, u.env)
	v.Changed = changed
	return v
}

// keyCheckDue reports whether the stored key's permission check is older
// than permissionsMaxAge: before a trading call it is done again, so a
// key whose permissions grew on the exchange stops trading within the
// hour (decisions D121).
func (u *userActor) keyCheckDue() bool {
	c, ok := u.state.CredentialFor(u.env)
	return ok && u.now().Sub(c.CheckedAt) > permissionsMaxAge && u.state.Exists && !u.state.Disabled
}

// recheckThen checks the key again, then handles the trading call msg on
// the state the check left (a key that may now withdraw refuses it with
// credentials_permissions_changed); a key that cannot be checked refuses
// the call. Other trading calls wait meanwhile (held).
func (u *userActor) recheckThen(ctx actor.Context, msg any, sender *actor.PID) {
	uc := &userCommand{ctx: callContext(msg), origin: systemOrigin}
	u.recheck(ctx, uc, nil, func(a *action, err *messages.Error) {
		delete(u.actions, a.id)
		if err != nil {
			u.reply(ctx, sender, err)
			return
		}
		u.handle(ctx, msg, sender)
	})
}

// callContext is the caller's context of a trading call.
func callContext(msg any) context.Context {
	switch m := msg.(type) {
	case *tradingAsk:
		return m.ctx
	case *userCommand:
		return m.ctx
	}
	return context.Background()
}

func (u *userActor) decide(ctx actor.Context, m *decideAsk, sender *actor.PID) {
	r := m.req
	// Before a trading decision, a permission check older than an hour is
	// done again (docs/invariants.md "Keys"); an unverifiable key refuses the action. The
	// check is an action: the user's other messages flow meanwhile, and the
	// decision is made on the state as it is when the check comes back.
	if c, ok := u.state.CredentialFor(u.env); ok && slices.Contains(messages.TradingTools, r.Tool) &&
		u.now().Sub(c.CheckedAt) > permissionsMaxAge && u.state.Exists && !u.state.Disabled {
		uc := &userCommand{ctx: m.ctx, origin: systemOrigin}
		u.recheck(ctx, uc, sender, func(a *action, err *messages.Error) {
			delete(u.actions, a.id)
			if err != nil {
				u.reply(ctx, sender, &messages.Decision{Err: err})
				return
			}
			u.decideNow(ctx, r, sender)
		})
		return
	}
	u.decideNow(ctx, r, sender)
}

func (u *userActor) decideNow(ctx actor.Context, r *messages.DecideActionRequest, sender *actor.PID) {
	refusal := u.state.DecideAction(r, u.venue, u.env)
	if refusal == nil || !r.JournalRefusal {
		u.reply(ctx, sender, &messages.Decision{Allowed: refusal == nil, Err: refusal})
		return
	}
	ev := state.Event{Type: messages.RecordOrderRefused, Payload: map[string]any{
		"tool": r.Tool, "category": r.Category, "symbol": r.Symbol, "code": refusal.Code, "details": refusal.Details,
	}}

	u.write(ctx, ev, agentOrigin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, sender, messages.AsError(err))
			return
		}
		u.reply(ctx, sender, &messages.Decision{Err: refusal})
	})
}

// write journals ev and runs then once it is durable (or failed), on the
// actor's goroutine. Messages arriving meanwhile are queued and run after,
// in order. State changes only in then, after the record is durable, so a
// failed write leaves the state as it was. A write refused before it
// starts calls then at once and leaves busy unset, so nothing can be
// stranded in the queue: the queue only grows while busy, and only the
// write's own continuation clears busy, and it drains.
func (u *userActor) write(ctx actor.Context, ev state.Event, o messages.Origin, then afterJournal) {
	origin := o.Actor()
	if !state.OriginAllowed(ev, origin) {
		then(wal.Record{}, state.RefuseOrigin(ev, origin))
		return
	}
	if u.journal.IsDown() {
		then(wal.Record{}, errJournalDown(u.journal))
		return
	}
	payload, err := json.Marshal(ev.Payload)
	if err != nil {
		then(wal.Record{}, messages.Internal(err))
		return
	}
	u.busy = true
	f := appendFuture(ctx, u.journal, wal.Entry{
		Time: u.now().UTC(), Type: uint16(ev.Type), User: u.state.User, Actor: origin, Channel: o.ChannelText(), Payload: payload,
	}, journal.Sync)
	ctx.ReenterAfter(f, func(res any, ferr error) {
		rec, err := journalAnswer(u.journal, u.logger, res, ferr)
		if u.replaced {
			// This incarnation crashed while the write was in flight; its
			// waiters were answered. A durable record still changes the
			// state: hand it to the new incarnation.
			if err == nil {
				ctx.Send(ctx.Self(), &lateRecord{rec: rec})
			}
			return
		}
		u.busy = false
		then(rec, err)
		u.drain(ctx)
	})
}

// drain runs queued messages, in order, until one starts another write.
// During recovery, messages that wait for it stay queued, in order, and the
// others run.
func (u *userActor) drain(ctx actor.Context) {
	for len(u.queue) > 0 && !u.busy {
		i := 0
		if u.recovering > 0 || u.rechecking > 0 {
			i = slices.IndexFunc(u.queue, func(q queued) bool { return !u.held(q.msg) })
			if i < 0 {
				break
			}
		}
		q := u.queue[i]
		u.queue = slices.Delete(u.queue, i, i+1)
		u.handle(ctx, q.msg, q.sender)
	}
	if len(u.queue) == 0 {
		u.queue = nil
	}
}

func summaryOf(s *state.User, venue messages.VenueLevel, env string) messages.UserSummary {
	return messages.UserSummary{
		User: s.User, Disabled: s.Disabled, KillSwitch: s.KillSwitch,
		Profile: s.Effective(venue, env).Profile,
	}
}

// usersActor supervises the per-user supervisors: it owns the set of users
// and creates new ones (journaling user_created first). A user's actors are
// spawned on first use, so start-up costs nothing per idle user; the
// registry lets System reach a running user actor directly.
//
// holders outlives any one incarnation of this actor (it is created in
// Start and handed to every incarnation by the producer, and only ever used
// on this actor's mailbox), so after a restart of the supervisor each user
// is respawned, on its next message, from its last committed state. Each
// holder is written only by its user's actor (atomically) and read here for
// listing.
type usersActor struct {
	*userDeps
	holders map[string]*committed

	running map[string]*actor.PID
	// userOf maps a running user supervisor's PID id back to its user, for
	// Terminated (a PID's id is never parsed for the name).
	userOf map[string]string
	serial
}

// ensure spawns the user's supervisor (and with it the user and venue
// actors) if it does not run, and returns the supervisor, which forwards
// what it is sent to the user actor.
func (us *usersActor) ensure(ctx actor.Context, user string) (*actor.PID, *messages.Error) {
	snap, ok := us.holders[user]
	if !ok {
		return nil, noSuchUser()
	}
	if pid, running := us.running[user]; running {
		return pid, nil
	}
	deps := us.userDeps
	props := actor.PropsFromProducer(func() actor.Actor {
		return &userSupervisor{deps: deps, snap: snap, user: user}
	}, us.mw, actor.WithSupervisor(restartStrategy()))
	sup, err := ctx.SpawnNamed(props, user)
	if err != nil && !errors.Is(err, actor.ErrNameExists) {
		return nil, messages.Internal(err)
	}
	us.running[user] = sup
	us.userOf[sup.Id] = user
	return sup, nil
}

// noSuchUser is the refusal of anything for a user never created.
func noSuchUser() *messages.Error {
	return &messages.Error{Code: messages.CodeNotFound, Message: "no such user", NextStep: "create it with `guarded-exchange admin user create`"}
}

func (us *usersActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		us.running = map[string]*actor.PID{}
		us.userOf = map[string]string{}
	case *ensureUserRequest:
		pid, err := us.ensure(ctx, m.user)
		ctx.Respond(&ensureUserResponse{pid: pid, err: err})
	case *userCommand:
		us.handle(ctx, m, ctx.Sender())
	case *actor.Terminated:
		user, ok := us.userOf[m.Who.Id]
		if !ok {
			return
		}
		delete(us.userOf, m.Who.Id)
		if pid := us.running[user]; pid != nil && pid.Id == m.Who.Id {
			delete(us.running, user)
			us.registry.remove(user)
		}
		us.logger.Debug("user actors stopped", "actor", m.Who.Id)
	}
}

func (us *usersActor) handle(ctx actor.Context, m *userCommand, sender *actor.PID) {
	if us.busy {
		us.queue = append(us.queue, queued{m, sender})
		return
	}
	reply := func(v any) {
		if sender != nil {
			ctx.Send(sender, v)
		}
	}
	if e := refuseCancelled(m); e != nil {
		reply(e)
		return
	}
	switch c := m.cmd.(type) {
	case *messages.ListUsersRequest:
		out := &messages.UserList{Users: make([]messages.UserSummary, 0, len(us.holders))}
		for _, snap := range us.holders {
			out.Users = append(out.Users, summaryOf(snap.load(), us.venue, us.env))
		}
		slices.SortFunc(out.Users, func(a, b messages.UserSummary) int {
			if a.User < b.User {
				return -1
			}
			if a.User > b.User {
				return 1
			}
			return 0
		})
		reply(out)
	case *messages.CreateUserRequest:
		if !messages.UserNamePattern.MatchString(c.User) {
			reply(messages.InvalidParams("user", "must be 1-64 of lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"))
			return
		}
		if _, exists := us.holders[c.User]; exists {
			pid, err := us.ensure(ctx, c.User)
			if err != nil {
				reply(err)
				return
			}
			ctx.RequestWithCustomSender(pid, &userCommand{ctx: m.ctx, cmd: &messages.ShowPolicyRequest{User: c.User}, origin: m.origin}, sender)
			return
		}
		ev := state.NewUserEvent(c.User, messages.PolicySettings{})
		if !state.OriginAllowed(ev, m.origin.Actor()) {
			reply(state.RefuseOrigin(ev, m.origin.Actor()))
			return
		}
		payload, _ := json.Marshal(ev.Payload)
		us.busy = true
		f := appendFuture(ctx, us.journal, wal.Entry{
			Time: us.now().UTC(), Type: uint16(ev.Type), User: c.User, Actor: m.origin.Actor(), Channel: m.origin.ChannelText(), Payload: payload,
		}, journal.Sync)
		ctx.ReenterAfter(f, func(res any, ferr error) {
			us.busy = false
			defer us.drainUsers(ctx)
			_, err := journalAnswer(us.journal, us.logger, res, ferr)
			if err != nil {
				reply(messages.AsError(err))
				return
			}
			s := state.New(c.User)
			s.Apply(ev)
			snap := &committed{}
			snap.store(s)
			us.holders[c.User] = snap
			us.registry.publish(c.User, snap)
			view := s.View(us.venue, us.env)
			view.Changed = true
			reply(view)
		})
	default:
		reply(messages.Internal(fmt.Errorf("users: unexpected command %T", m.cmd)))
	}
}

func (us *usersActor) drainUsers(ctx actor.Context) {
	for len(us.queue) > 0 && !us.busy {
		q := us.queue[0]
		us.queue = us.queue[1:]
		us.handle(ctx, q.msg.(*userCommand), q.sender)
	}
}

// UserReplay rebuilds every user's state from the journal (state.Replay,
// which also refuses a record the server could not have written) and
// remembers each user's recent records for get_my_journal. Pass OnRecord
// as wal.Options.OnRecord, then hand the replay to Config.Users.
type UserReplay struct {
	users *state.Replay
	// index remembers each user's recent records for get_my_journal; the
	// system started from this replay keeps it up to date.
	index *journal.Index
	// fronts counts the agent sessions still open per user and front
	// (a shard's journal; sessionfronts.go).
	fronts *frontSessions
}

// NewUserReplay returns an empty replay.
func NewUserReplay() *UserReplay {
	return &UserReplay{users: state.NewReplay(), index: journal.NewIndex(), fronts: newFrontSessions()}
}

// OnRecord notes one journal record (state.Replay.OnRecord): a record the
// server could not have written refuses start, naming its seq.
func (r *UserReplay) OnRecord(rec wal.Record) error {
	if err := r.users.OnRecord(state.Record{Seq: rec.Seq, Time: rec.Time, Type: messages.RecordType(rec.Type), User: rec.User, Actor: rec.Actor, Payload: rec.Payload}); err != nil {
		return err
	}
	r.index.Add([]wal.Record{rec}, true)
	r.fronts.onRecord(rec)
	return nil
}

// states is the state of every created user, its windows as of now.
func (r *UserReplay) states(now time.Time) (map[string]*state.User, error) {
	return r.users.States(now)
}

// holders returns the committed state of every created user.
func (r *UserReplay) holders(now time.Time) (map[string]*committed, error) {
	states, err := r.states(now)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*committed, len(states))
	for u, s := range states {
		c := &committed{}
		c.store(s)
		out[u] = c
	}
	return out, nil
}
