package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// userSupervisor is the per-user supervisor: its children are the user
// actor ("state", policy, kill switch, keys, actions in flight) and the
// venue actor ("venue", the user's venue session). They are siblings, so a
// crash of one restarts it alone and the other keeps its state: a venue
// actor that panics does not lose the user's actions, a user actor that
// panics does not drop the venue session. Both rebuild from the user's
// committed state.
//
// It holds no state of its own. If a child is stopped for good (it failed
// too often), the supervisor stops too, and the user's next message starts
// a fresh pair.
type userSupervisor struct {
	deps  *userDeps
	snap  *committed
	user  string
	state *actor.PID
	venue *actor.PID // spawned on the first message for it
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

// toVenue carries a message from the user actor to its sibling, the venue
// actor, through their supervisor, which starts the venue actor on first
// use (a user who never touches the venue costs no venue actor). sender is
// who the venue actor answers: the user actor for outcomes it journals, the
// original caller for reads, nil for rekey.
type toVenue struct {
	msg    any
	sender *actor.PID
}

// toVenue sends msg to the user's venue actor.
func (u *userActor) toVenue(ctx actor.Context, msg any, sender *actor.PID) {
	ctx.Send(ctx.Parent(), &toVenue{msg: msg, sender: sender})
}

func (s *userSupervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		deps, snap := s.deps, s.snap
		if s.cache == nil {
			s.cache = newStreamCache()
		}
		cache := s.cache
		var err error
		s.state, err = ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
			return &userActor{userDeps: deps, snap: snap, cache: cache}
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
	case *toVenue:
		if s.venue == nil {
			if _, isRekey := m.msg.(*rekey); isRekey {
				return // a venue actor started later reads the new key anyway
			}
			if s.ids == nil {
				s.ids = newOrderIDBook()
			}
			deps, snap, cache, ids := s.deps, s.snap, s.cache, s.ids
			pid, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
				return &venueActor{userDeps: deps, snap: snap, cache: cache, ids: ids}
			}, deps.mw), "venue")
			if err != nil {
				panic("user supervisor: spawn venue actor: " + err.Error())
			}
			s.venue = pid
		}
		ctx.RequestWithCustomSender(s.venue, m.msg, m.sender)
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		// The first message for a user that was just started comes here
		// (the supervisor runs Started before it); it goes on to the user
		// actor with its sender.
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
