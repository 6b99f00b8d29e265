package app

import (
	"context"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The start-up work holds the serving user's trading calls until it is
// done, at most holdFor (then checking_key, retry_after_s); another
// user's calls and the calls after it are done go on at once.
func TestStartupWorkHoldsTheUsersTradingCalls(t *testing.T) {
	release := make(chan struct{})
	w := newStartupWork("local", func() { <-release })
	w.holdFor = 100 * time.Millisecond
	ctx := context.Background()
	if err := w.HoldTrading(ctx, "other"); err != nil {
		t.Fatalf("another user's call: %v", err)
	}
	start := time.Now()
	err := w.HoldTrading(ctx, "local")
	e := messages.AsError(err)
	if err == nil || e.Code != messages.CodeExchangeUnavailable || e.Details["reason"] != "checking_key" || e.RetryAfterS != 1 {
		t.Fatalf("a call during the work: %v", err)
	}
	if d := time.Since(start); d < w.holdFor {
		t.Fatalf("answered after %s, before the hold's bound %s", d, w.holdFor)
	}
	go func() { time.Sleep(20 * time.Millisecond); close(release) }()
	if err := w.HoldTrading(ctx, "local"); err != nil {
		t.Fatalf("a call released when the work ends: %v", err)
	}
	w.Wait()
	if err := w.HoldTrading(ctx, "local"); err != nil {
		t.Fatalf("a call after the work: %v", err)
	}
}
