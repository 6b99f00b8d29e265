package app

import (
	"context"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// startupWork is the work serve does after its first answers, not before
// them (docs/decisions.md D153): the policy warnings and the re-check of
// the stored key, which start the user's actors, its private stream and
// their reconciliation. It begins at the second answer on stdout, at the
// first tools/call of any session, or after startupWorkBound, whichever
// comes first. Until the key re-check is done, the user's trading calls
// wait for it, as the user actor holds them while a re-check is in flight
// (D63): at most holdFor, then they are answered exchange_unavailable
// (checking_key) with nothing decided or sent. Every other call goes on.
type startupWork struct {
	user    string
	run     func()
	holdFor time.Duration

	once sync.Once
	done chan struct{}
}

// startupWorkBound is how long serve waits for a first call before it
// begins the start-up work anyway; startupWorkGrace is how long, at the
// end of a session, it lets the work finish (its outcome journaled, as
// when it ran before the first answer) before it cancels the re-check.
const (
	startupWorkBound = time.Second
	startupWorkGrace = 2 * time.Second
)

func newStartupWork(user string, run func()) *startupWork {
	return &startupWork{user: user, run: run, holdFor: actors.DefaultRecoveryWait, done: make(chan struct{})}
}

// Begin starts the work, once.
func (w *startupWork) Begin() {
	w.once.Do(func() {
		go func() {
			defer close(w.done)
			w.run()
		}()
	})
}

// Wait begins the work and waits until it is done.
func (w *startupWork) Wait() {
	w.Begin()
	<-w.done
}

// WaitFor begins the work and waits until it is done or d has passed.
func (w *startupWork) WaitFor(d time.Duration) {
	w.Begin()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
}

// HoldTrading begins the work and, for the serving user, waits until it
// is done (mcp.StartupHold).
func (w *startupWork) HoldTrading(ctx context.Context, user string) error {
	w.Begin()
	if user != w.user {
		return nil
	}
	select {
	case <-w.done:
		return nil
	default:
	}
	t := time.NewTimer(w.holdFor)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return &messages.Error{
		Code: messages.CodeExchangeUnavailable,
		Message: "the server is still re-checking the exchange key's permissions with the venue, " +
			"and waited for it as long as it may; nothing was decided or sent",
		NextStep:    "call again after retry_after_s",
		RetryAfterS: max(int((w.holdFor+time.Second-1)/time.Second), 1),
		Details:     map[string]any{"reason": "checking_key"},
	}
}
