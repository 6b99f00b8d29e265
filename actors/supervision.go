package actors

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// answerPanics is a receiver middleware: when the wrapped Receive panics on
// a request, the requester gets *messages.Error{Code: internal_error} at
// once, then the panic continues so the supervisor restarts the actor.
// Without it the crashing message is lost and its caller waits for a
// timeout.
func answerPanics(logger *slog.Logger) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				logger.Error("actor panic",
					"actor", c.Self().String(),
					"message_type", fmt.Sprintf("%T", env.Message),
					"panic", fmt.Sprint(p),
					"stack", string(debug.Stack()))
				if env.Sender != nil {
					c.ActorSystem().Root.Send(env.Sender, messages.Internal(fmt.Errorf("actor %s panicked", c.Self().Id)))
				}
				panic(p)
			}()
			next(c, env)
		}
	}
}

// restartStrategy restarts a failing child, up to 10 times in 10 s, then
// stops it (its callers then get dead letters, which ask maps to
// internal_error: fail closed rather than crash-loop).
func restartStrategy() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, 10*time.Second, func(any) actor.Directive {
		return actor.RestartDirective
	})
}

// stopStrategy stops a failing child at once: the strategy of a child
// registered without one of its own.
func stopStrategy() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, time.Second, func(any) actor.Directive {
		return actor.StopDirective
	})
}

// childSpec asks the root supervisor to spawn a named child.
type childSpec struct {
	name     string
	props    *actor.Props
	strategy actor.SupervisorStrategy
}

type spawnChildRequest struct{ spec childSpec }

type spawnChildResponse struct {
	pid *actor.PID
	err error
}

// rootActor is the root supervisor. It spawns the server's long-lived actors
// as its children and applies each child's own strategy to its failures.
type rootActor struct {
	logger     *slog.Logger
	strategies map[string]actor.SupervisorStrategy // by child id
}

func (r *rootActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *spawnChildRequest:
		pid, err := ctx.SpawnNamed(m.spec.props, m.spec.name)
		if err == nil {
			r.strategies[pid.Id] = m.spec.strategy
		}
		ctx.Respond(&spawnChildResponse{pid: pid, err: err})
	case *actor.Terminated:
		r.logger.Debug("actor stopped", "actor", m.Who.Id)
	}
}

// HandleFailure makes rootActor its own supervisor strategy, so each child
// is governed by the strategy it was registered with.
func (r *rootActor) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, message any) {
	r.logger.Error("actor failed", "actor", child.String(), "reason", fmt.Sprint(reason))
	s, ok := r.strategies[child.Id]
	if !ok {
		s = stopStrategy()
	}
	s.HandleFailure(sys, sup, child, rs, reason, message)
}
