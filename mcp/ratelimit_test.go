package mcp

import (
	"testing"
	"time"
)

// The token bucket keeps its contract on a pinned clock: a new key starts
// full, refusals name the whole seconds until the next token, tokens come
// back at the rate up to the burst, keys are independent, and a refused
// request takes nothing.
func TestRateLimiterBucketOnAPinnedClock(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := newRateLimiter(2, 3, func() time.Time { return now })
	step := func(key string, wantOK bool, wantWait int) {
		t.Helper()
		wait, ok := l.allow(key)
		if ok != wantOK || wait != wantWait {
			t.Fatalf("allow(%q) at %s = %d, %v; want %d, %v", key, now.Format(time.StampMilli), wait, ok, wantWait, wantOK)
		}
	}
	for range 3 {
		step("a", true, 0)
	}
	step("a", false, 1) // empty: half a second to the next token, rounded up
	step("a", false, 1) // a refusal takes nothing
	step("b", true, 0)  // another key has its own bucket
	now = now.Add(500 * time.Millisecond)
	step("a", true, 0)
	step("a", false, 1)
	now = now.Add(10 * time.Second) // refills to the burst, not beyond
	for range 3 {
		step("a", true, 0)
	}
	step("a", false, 1)

	slow := newRateLimiter(0.25, 1, func() time.Time { return now })
	step2 := func(wantOK bool, wantWait int) {
		t.Helper()
		if wait, ok := slow.allow("k"); ok != wantOK || wait != wantWait {
			t.Fatalf("slow allow = %d, %v; want %d, %v", wait, ok, wantWait, wantOK)
		}
	}
	step2(true, 0)
	step2(false, 4)
	now = now.Add(time.Second)
	step2(false, 3)
	now = now.Add(3 * time.Second)
	step2(true, 0)

	// Keys unused for more than a minute are forgotten at the next sweep.
	now = now.Add(2 * time.Minute)
	step("c", true, 0)
	l.mu.Lock()
	n := len(l.buckets)
	l.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d buckets after the sweep, want 1", n)
	}
}

// BenchmarkRateLimiterAllow is the cost of one admitted call through the
// per-key token bucket, the check every HTTP request and tool call pays.
func BenchmarkRateLimiterAllow(b *testing.B) {
	l := newRateLimiter(1e9, 1<<30, time.Now)
	for b.Loop() {
		l.allow("token")
	}
}
