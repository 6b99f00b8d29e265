package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

// Prepared is a protoactor system built ahead of Start, on its own
// goroutine: building one allocates about 67,000 objects (its process
// registry's shards) and takes a few milliseconds, which serve overlaps
// with opening the journal instead of adding them to its start-up.
type Prepared struct {
	ready chan struct{}
	sys   *actor.ActorSystem
}

// Prepare starts building the actor system Start will run on with
// logger (the same logger as Config.Logger); pass it as Config.Prepared.
func Prepare(logger *slog.Logger) *Prepared {
	p := &Prepared{ready: make(chan struct{})}
	go func() {
		defer close(p.ready)
		p.sys = newActorSystem(orDiscard(logger))
	}()
	return p
}

// Close shuts a prepared system that no Start took down.
func (p *Prepared) Close() {
	if p == nil {
		return
	}
	<-p.ready
	if p.sys != nil {
		p.sys.Shutdown()
		p.sys = nil
	}
}

// take returns the prepared system, once built; a second take gets nil.
func (p *Prepared) take() *actor.ActorSystem {
	if p == nil {
		return nil
	}
	<-p.ready
	sys := p.sys
	p.sys = nil
	return sys
}

func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}

// newActorSystem is the protoactor system of Start. protoactor's logger is
// fixed at construction (docs/invariants.md "Libraries: what to keep in
// mind"): route it into ours, never the default tint handler, never
// developer supervision logging (which prints to stdout).
func newActorSystem(logger *slog.Logger) *actor.ActorSystem {
	return actor.NewActorSystem(
		actor.WithLoggerFactory(func(as *actor.ActorSystem) *slog.Logger {
			// protoactor's Info lines (system started, dead letters) are
			// noise for an operator; keep its warnings and errors.
			return slog.New(minLevel{Handler: logger.Handler(), min: slog.LevelWarn}).With("component", "protoactor", "system", as.ID)
		}),
		actor.WithDeadLetterThrottleCount(10),
	)
}
