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
// It spawns the venue actor first and hands its PID to the user actor,
// which sends to it directly (toVenue): a restarted child keeps its PID,
// so the PID stays good for as long as the supervisor runs. It forwards the
// venue actor's notices to the user actor. If a child is stopped for good
// (it failed too often), the supervisor stops too, and the user's next
// message starts a fresh pair.
type userSupervisor struct {
	deps  *userDeps
	snap  *committed
	user  string
	state *actor.PID
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

// toVenue sends msg to the user's venue actor, its sibling, straight to
// the PID their supervisor handed over. sender is who the venue actor
// answers: the user actor for outcomes it journals, the original caller
// for reads, nil for rekey.
func (u *userActor) toVenue(ctx actor.Context, msg any, sender *actor.PID) {
	ctx.RequestWithCustomSender(u.venuePID, msg, sender)
}

func (s *userSupervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		deps, snap := s.deps, s.snap
		if s.cache == nil {
			s.cache = newStreamCache()
		}
		if s.ids == nil {
			s.ids = newOrderIDBook()
		}
		cache, ids := s.cache, s.ids
		// The venue actor starts with the user actor, not on its first
		// message: the user actor must hold its PID before it sends
		// anything, or a message sent straight could overtake one sent
		// before the PID was known. Starting it waits on nothing: its
		// session is built from the stored key and its private stream
		// connects on a goroutine of its own.
		venuePID, err := ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
			return &venueActor{userDeps: deps, snap: snap, cache: cache, ids: ids}
		}, deps.mw), "venue")
		if err != nil {
			panic("user supervisor: spawn venue actor: " + err.Error())
		}
		s.state, err = ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
			return &userActor{userDeps: deps, snap: snap, cache: cache, venuePID: venuePID}
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
