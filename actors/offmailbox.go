package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// offMailbox runs call on its own goroutine, bounded by the caller's
// context (parent, may be nil) and timeout, and sends its result to to, so
// the actor's mailbox never waits on the network. A panic in call is
// logged and answered with onPanic(internal_error) instead of killing the
// process.
func offMailbox(ctx actor.Context, logger *slog.Logger, parent context.Context, timeout time.Duration, to *actor.PID, call func(context.Context) any, onPanic func(*messages.Error) any) {
	root := ctx.ActorSystem().Root
	go func() {
		var res any
		defer func() {
			if p := recover(); p != nil {
				res = onPanic(venuePanic(logger, p))
			}
			root.Send(to, res)
		}()
		c, cancel := venueTimeout(parent, timeout)
		defer cancel()
		res = call(c)
	}()
}

// venuePanic logs a panic recovered from a venue request, with its stack,
// and is the internal_error its caller is answered with.
func venuePanic(logger *slog.Logger, p any) *messages.Error {
	logger.Error("venue request panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return messages.Internal(fmt.Errorf("venue request panicked"))
}
