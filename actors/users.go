package actors

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// userCommand carries a command to a user actor with the journal actor
// name of its origin (mcp:agent, cli:user, cli:admin), which the server sets
// from the channel, never from the command.
type userCommand struct {
	cmd    messages.Command
	origin string
}

// userChanged tells the users supervisor a user's summary after a change.
type userChanged struct{ summary messages.UserSummary }

// committed holds the last durable state of one user, for a restart. Only
// the user actor writes it, after each journaled change; the actor's
// producer reads it when the supervisor restarts the actor. The state is
// never mutated in place (Apply replaces fields with new values), so a
// shallow copy is a safe snapshot.
type committed struct{ p atomic.Pointer[UserState] }

func (c *committed) store(s *UserState) { cp := *s; c.p.Store(&cp) }

func (c *committed) load() *UserState { cp := *c.p.Load(); return &cp }

// journalTimeout bounds one wait for the journal.
const journalTimeout = 30 * time.Second

// queued is a message that arrived while a journal write was in flight.
type queued struct {
	msg    any
	sender *actor.PID
}

// serial gives an actor strict one-at-a-time decisions without blocking its
// mailbox: while a journal write is in flight, later messages wait in a
// FIFO (protoactor's Stash is LIFO and replays only on restart, so it is not
// used), and run in order once the write is durable.
type serial struct {
	busy  bool
	queue []queued
}

// userActor is the thin shell around one user's UserState: it decides,
// journals, applies and replies. Decisions for one user are strictly
// ordered; different users run in parallel.
type userActor struct {
	state   *UserState
	snap    *committed
	venue   messages.VenueLevel
	journal *actor.PID
	logger  *slog.Logger
	serial
}

// afterJournal is the continuation of one journal write.
type afterJournal func(rec wal.Record, err error)

func (u *userActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		u.state = u.snap.load()
	case *userCommand, *messages.DecideActionRequest, *crashRequest:
		u.handle(ctx, m, ctx.Sender())
	}
}

// handle runs one message now, or queues it while a write is in flight.
func (u *userActor) handle(ctx actor.Context, msg any, sender *actor.PID) {
	if u.busy {
		u.queue = append(u.queue, queued{msg, sender})
		return
	}
	switch m := msg.(type) {
	case *userCommand:
		u.command(ctx, m, sender)
	case *messages.DecideActionRequest:
		u.decide(ctx, m, sender)
	case *crashRequest:
		panic("user: crash requested by test")
	}
}

func (u *userActor) reply(ctx actor.Context, to *actor.PID, v any) {
	if to != nil {
		ctx.Send(to, v)
	}
}

func (u *userActor) command(ctx actor.Context, m *userCommand, sender *actor.PID) {
	ev, err := u.state.Decide(m.cmd, u.venue)
	if err != nil {
		u.reply(ctx, sender, messages.AsError(err))
		return
	}
	if ev == nil {
		u.reply(ctx, sender, u.state.View(u.venue))
		return
	}
	u.write(ctx, *ev, m.origin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, sender, messages.AsError(err))
			return
		}
		u.state.Apply(*ev)
		u.snap.store(u.state)
		ctx.Send(ctx.Parent(), &userChanged{summary: summaryOf(u.state, u.venue)})
		view := u.state.View(u.venue)
		view.Changed = true
		if pc, ok := ev.Payload.(messages.PolicyChangedEvent); ok && ev.Type == messages.RecordPolicyOverridesReset {
			view.Removed = pc.Fields
		}
		u.reply(ctx, sender, view)
	})
}

func (u *userActor) decide(ctx actor.Context, r *messages.DecideActionRequest, sender *actor.PID) {
	refusal := u.state.DecideAction(r)
	if refusal == nil || !r.JournalRefusal {
		u.reply(ctx, sender, &messages.Decision{Allowed: refusal == nil, Err: refusal})
		return
	}
	ev := Event{Type: messages.RecordOrderRefused, Payload: map[string]any{
		"tool": r.Tool, "category": r.Category, "symbol": r.Symbol, "code": refusal.Code, "details": refusal.Details,
	}}
	u.write(ctx, ev, messages.ActorAgent, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, sender, messages.AsError(err))
			return
		}
		u.reply(ctx, sender, &messages.Decision{Err: refusal})
	})
}

// write journals ev and runs then once it is durable (or failed), on the
// actor's goroutine. Messages arriving meanwhile are queued and run after.
// A failed write crashes the actor after answering, so it restarts from its
// last committed state.
func (u *userActor) write(ctx actor.Context, ev Event, origin string, then afterJournal) {
	payload, err := json.Marshal(ev.Payload)
	if err != nil {
		then(wal.Record{}, messages.Internal(err))
		return
	}
	u.busy = true
	f := ctx.RequestFuture(u.journal, &AppendRequest{Entry: wal.Entry{
		Time: time.Now().UTC(), Type: uint16(ev.Type), User: u.state.User, Actor: origin, Payload: payload,
	}}, journalTimeout)
	ctx.ReenterAfter(f, func(res any, ferr error) {
		u.busy = false
		var rec wal.Record
		switch {
		case ferr != nil:
			err = messages.Internal(fmt.Errorf("journal: %w", ferr))
		case res.(*AppendResponse).Err != nil:
			err = res.(*AppendResponse).Err
		default:
			rec = res.(*AppendResponse).Record
		}
		then(rec, err)
		u.drain(ctx)
	})
}

// drain runs queued messages until one starts another write.
func (u *userActor) drain(ctx actor.Context) {
	for len(u.queue) > 0 && !u.busy {
		q := u.queue[0]
		u.queue = u.queue[1:]
		u.handle(ctx, q.msg, q.sender)
	}
	if len(u.queue) == 0 {
		u.queue = nil
	}
}

func summaryOf(s *UserState, venue messages.VenueLevel) messages.UserSummary {
	return messages.UserSummary{
		User: s.User, Disabled: s.Disabled, KillSwitch: s.KillSwitch,
		Profile: messages.Effective(venue, s.Ceiling, s.Own).Profile,
	}
}

// usersActor supervises the user actors: it owns the set of users, creates
// new ones (journaling user_created first) and keeps a summary of each for
// listing.
//
// holders outlives any one incarnation of this actor (it is created in
// Start and handed to every incarnation by the producer, and only ever used
// on this actor's mailbox), so a restart of the supervisor respawns every
// user from its last committed state.
type usersActor struct {
	holders map[string]*committed
	venue   messages.VenueLevel
	journal *actor.PID
	logger  *slog.Logger
	mw      actor.PropsOption

	summaries map[string]messages.UserSummary
	serial
}

func (us *usersActor) spawnUser(ctx actor.Context, snap *committed) error {
	s := snap.load()
	venue, journal, logger := us.venue, us.journal, us.logger
	props := actor.PropsFromProducer(func() actor.Actor {
		return &userActor{snap: snap, venue: venue, journal: journal, logger: logger}
	}, us.mw)
	if _, err := ctx.SpawnNamed(props, s.User); err != nil {
		return err
	}
	us.summaries[s.User] = summaryOf(s, us.venue)
	return nil
}

func (us *usersActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		us.summaries = make(map[string]messages.UserSummary, len(us.holders))
		for user, snap := range us.holders {
			if err := us.spawnUser(ctx, snap); err != nil {
				us.logger.Error("cannot start user actor", "user", user, "err", err.Error())
			}
		}
	case *userChanged:
		us.summaries[m.summary.User] = m.summary
	case *userCommand:
		us.handle(ctx, m, ctx.Sender())
	case *actor.Terminated:
		us.logger.Debug("user actor stopped", "actor", m.Who.Id)
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
	switch c := m.cmd.(type) {
	case *messages.ListUsersRequest:
		out := &messages.UserList{Users: make([]messages.UserSummary, 0, len(us.summaries))}
		for _, s := range us.summaries {
			out.Users = append(out.Users, s)
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
		if _, exists := us.summaries[c.User]; exists {
			child := actor.NewPID(ctx.Self().Address, ctx.Self().Id+"/"+c.User)
			ctx.RequestWithCustomSender(child, &userCommand{cmd: &messages.ShowPolicyRequest{User: c.User}, origin: m.origin}, sender)
			return
		}
		ev := NewUserEvent(c.User, messages.PolicySettings{})
		payload, _ := json.Marshal(ev.Payload)
		us.busy = true
		f := ctx.RequestFuture(us.journal, &AppendRequest{Entry: wal.Entry{
			Time: time.Now().UTC(), Type: uint16(ev.Type), User: c.User, Actor: m.origin, Payload: payload,
		}}, journalTimeout)
		ctx.ReenterAfter(f, func(res any, err error) {
			us.busy = false
			defer us.drainUsers(ctx)
			if err == nil && res.(*AppendResponse).Err != nil {
				err = res.(*AppendResponse).Err
			}
			if err != nil {
				reply(messages.AsError(err))
				return
			}
			s := newUserState(c.User)
			s.Apply(ev)
			snap := &committed{}
			snap.store(s)
			us.holders[c.User] = snap
			if err := us.spawnUser(ctx, snap); err != nil {
				reply(messages.Internal(err))
				return
			}
			view := s.View(us.venue)
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

// NewUserEvent is the user_created event for a new user: the default policy
// (read_only, empty allowlist, ceiling demo) unless ceiling sets fields.
func NewUserEvent(user string, ceiling messages.PolicySettings) Event {
	ro, demo, empty := messages.ProfileReadOnly, messages.VenueDemo, []string{}
	base := messages.PolicySettings{Profile: &ro, Allow: &empty, VenueCeiling: &demo}
	return Event{Type: messages.RecordUserCreated, Payload: messages.UserCreatedEvent{User: user, Ceiling: base.Merge(ceiling)}}
}

// UserReplay rebuilds every user's state from the journal, through the same
// Apply the live actors use. Pass OnRecord as wal.Options.OnRecord, then
// hand States to Config.Users.
type UserReplay struct {
	states map[string]*UserState
}

// NewUserReplay returns an empty replay.
func NewUserReplay() *UserReplay { return &UserReplay{states: map[string]*UserState{}} }

// OnRecord applies one journal record. Records of other types are skipped
// without decoding.
func (r *UserReplay) OnRecord(rec wal.Record) error {
	ev, ok, err := DecodeEvent(messages.RecordType(rec.Type), rec.Payload)
	if !ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("replay seq %d (%s): %w", rec.Seq, messages.RecordType(rec.Type), err)
	}
	s := r.states[rec.User]
	if s == nil {
		s = newUserState(rec.User)
		r.states[rec.User] = s
	}
	s.Apply(ev)
	return nil
}

// holders returns the committed state of every created user.
func (r *UserReplay) holders() map[string]*committed {
	out := make(map[string]*committed, len(r.states))
	for u, s := range r.states {
		if s.Exists {
			c := &committed{}
			c.store(s)
			out[u] = c
		}
	}
	return out
}

// Users lists the created users' names, sorted.
func (r *UserReplay) Users() []string {
	var out []string
	for u, s := range r.states {
		if s.Exists {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}
