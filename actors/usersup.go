package actors

import (
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// userSupervisor is the per-user supervisor: its children are the user
// actor ("state", policy, kill switch, keys, actions in flight) and the
// venue actor ("venue", the user's venue session). They are siblings, so a
// crash of one restarts it alone and the other keeps its state: a venue
// actor that panics does not lose the user's actions, a user actor that
// panics does not drop the venue session. Both rebuild from the user's
// committed state.
//
// It starts the venue actor when the user actor first needs it (a user
// who never touches the venue costs no venue actor) and hands its PID
// over; from then on the user actor sends to it straight (toVenue). A
// restarted child keeps its PID, so the PID stays good for as long as the
// supervisor runs. It forwards the venue actor's notices to the user
// actor. If a child is stopped for good (it failed too often), the
// supervisor stops too, and the user's next message starts a fresh pair.
type userSupervisor struct {
	deps  *userDeps
	snap  *committed
	user  string
	state *actor.PID
	venue *actor.PID // spawned on the user actor's first startVenue
	// venueRef publishes venue to the user actor's next incarnation
	// (its producer runs on the restarting actor's goroutine).
	venueRef *atomic.Pointer[actor.PID]
	// stopping: the supervisor itself is stopping (the system shuts
	// down), so its children stop with it and that is no news.
	stopping bool
	// cache is the user's stream cache: the venue actor writes it, the
	// user actor reads it (posturecache.go).
	cache *streamCache
	// ids are the venue order ids the venue actor applied (orderids.go);
	// they outlive a restart of the venue actor.
	ids *orderIDBook
}

// startVenue asks the user's supervisor to start the venue actor if it
// does not run; it answers *venueStarted to the user actor.
type startVenue struct{}

// venueStarted gives the user actor its venue actor's PID.
type venueStarted struct{ pid *actor.PID }

// toVenue sends msg to the user's venue actor, its sibling, straight to
// the PID their supervisor handed over. sender is who the venue actor
// answers: the user actor for outcomes it journals, the original caller
// for reads, nil for rekey. Until the PID is known, messages wait here, in
// order, behind one startVenue to the supervisor: sent straight before
// then, a later message could overtake an earlier one.
func (u *userActor) toVenue(ctx actor.Context, msg any, sender *actor.PID) {
	if u.venuePID == nil {
		u.venuePID = u.venueRef.Load() // started for an earlier incarnation
	}
	if u.venuePID != nil {
		ctx.RequestWithCustomSender(u.venuePID, msg, sender)
		return
	}
	if _, isRekey := msg.(*rekey); isRekey {
		return // a venue actor started later reads the new key anyway
	}
	if len(u.toStartedVenue) == 0 {
		ctx.Request(ctx.Parent(), &startVenue{})
	}
	u.toStartedVenue = append(u.toStartedVenue, queued{msg, sender})
}

// onVenueStarted sends what waited for the venue actor's PID, in order.
func (u *userActor) onVenueStarted(ctx actor.Context, m *venueStarted) {
	u.venuePID = m.pid
	for _, q := range u.toStartedVenue {
		ctx.RequestWithCustomSender(m.pid, q.msg, q.sender)
	}
	u.toStartedVenue = nil
}

// failVenueWaiting answers the callers of the reads that waited for the
// venue actor's PID when this incarnation is replaced (the steps of
// actions are answered by failInFlight).
func (u *userActor) failVenueWaiting(ctx actor.Context) {
	e := messages.Internal(errActorRestarted)
	for _, q := range u.toStartedVenue {
		if q.sender != nil && !q.sender.Equal(ctx.Self()) {
			ctx.Send(q.sender, e)
		}
	}
	u.toStartedVenue = nil
}

func (s *userSupervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		deps, snap := s.deps, s.snap
		if s.cache == nil {
			s.cache = newStreamCache()
		}
		s.venueRef = &atomic.Pointer[actor.PID]{}
		cache, venueRef := s.cache, s.venueRef
		var err error
		s.state, err = ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
			return &userActor{userDeps: deps, snap: snap, cache: cache, venueRef: venueRef}
		}, deps.mw), "state")
		if err != nil {
			panic("user supervisor: spawn user actor: " + err.Error())
		}
		// Registered only now that both children exist: a message sent
		// to the registered PID can never be a dead letter for a user
		// that is starting.
		deps.registry.set(s.user, s.state)
	case *actor.Stopping:
		s.stopping = true
	case *actor.Terminated:
		if s.stopping {
			return // a child stopped with its supervisor, as at every shutdown
		}
		s.deps.logger.Warn("a user's actor stopped; stopping the user's supervisor", "actor", m.Who.Id)
		ctx.Stop(ctx.Self())
	case *startVenue:
		if s.venue == nil {
			if s.ids == nil {
				s.ids = newOrderIDBook()
			}
			deps, snap, cache, ids := s.deps, s.snap, s.cache, s.ids
			pid, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
				return &venueActor{userDeps: deps, snap: snap, cache: cache, ids: ids, sends: deps.sends.of(s.user)}
			}, deps.mw), "venue")
			if err != nil {
				panic("user supervisor: spawn venue actor: " + err.Error())
			}
			s.venue = pid
			s.venueRef.Store(pid)
		}
		ctx.Respond(&venueStarted{pid: s.venue})
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		// The venue actor's notices (streamResync, streamOrdersReady,
		// orderIDsReused), and the first message for a user that was
		// just started (the supervisor runs Started before it), go on to
		// the user actor with their sender.
		if s.state != nil {
			ctx.Forward(s.state)
		}
	}
}

// userRegistry maps each running user to its user actor, and each
// created user to their committed state. The users supervisor writes it
// (on spawn, on termination and on user creation); System reads it to send
// a user's messages without a round trip through the supervisor, and to
// read the caller's profile without an ask (System.CallerProfile).
type userRegistry struct {
	mu sync.RWMutex
	m  map[string]*actor.PID
	// states holds every created user's committed state, running or not:
	// the user actor publishes into it after each durable change.
	states map[string]*committed
}

func newUserRegistry() *userRegistry {
	return &userRegistry{m: map[string]*actor.PID{}, states: map[string]*committed{}}
}

func (r *userRegistry) get(user string) *actor.PID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[user]
}

func (r *userRegistry) set(user string, pid *actor.PID) {
	r.mu.Lock()
	r.m[user] = pid
	r.mu.Unlock()
}

func (r *userRegistry) remove(user string) {
	r.mu.Lock()
	delete(r.m, user)
	r.mu.Unlock()
}

// running returns how many users have running actors.
func (r *userRegistry) running() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m)
}

// publish names the committed state of a created user.
func (r *userRegistry) publish(user string, c *committed) {
	r.mu.Lock()
	r.states[user] = c
	r.mu.Unlock()
}

// committedOf is the committed state of a created user, nil for any other
// name.
func (r *userRegistry) committedOf(user string) *committed {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.states[user]
}
