package mcp

import (
	"sync"
	"testing"
	"time"
)

// TestSessionCapsKeepCountingASessionOpenedDuringTheLiveRead: admit reads
// the SDK's list of live sessions outside its lock. A session of the same
// token that finishes opening while that list is read (its opened() runs
// in the window) is missing from the list but still open: it must stay
// counted, so the second admit evicts it rather than letting the token
// hold more sessions than its bound. The interleaving is made
// deterministic by opening the session from inside the live read.
func TestSessionCapsKeepCountingASessionOpenedDuringTheLiveRead(t *testing.T) {
	var mu sync.Mutex
	sdkLive := map[string]bool{} // what the SDK holds
	snapshot := func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]bool{}
		for k := range sdkLive {
			out[k] = true
		}
		return out
	}
	var hook func()
	c := &sessionCaps{perToken: 1, total: 100, now: time.Now,
		open: map[string]*openSession{}, pending: map[string]int{}, refused: map[string]*sessionRefusals{}}
	c.live = func() map[string]bool {
		s := snapshot()
		if h := hook; h != nil {
			hook = nil
			h() // another request's session finishes opening in the window
		}
		return s
	}
	c.end = func(id string) {
		mu.Lock()
		delete(sdkLive, id)
		mu.Unlock()
	}
	a := authenticated{user: "alice", tokenID: "tok_a"}

	openedA, _, ok := c.admit(a)
	if !ok {
		t.Fatal("first session refused")
	}
	hook = func() {
		mu.Lock()
		sdkLive["A"] = true
		mu.Unlock()
		openedA("A")
	}
	openedB, scope, ok := c.admit(a)
	if ok {
		mu.Lock()
		sdkLive["B"] = true
		mu.Unlock()
		openedB("B")
	}
	live := snapshot()
	if len(live) > c.perToken {
		t.Fatalf("token tok_a holds %d live sessions with a bound of %d (second admit ok=%v scope=%q, ended=%d); "+
			"session A was dropped from the count while still open", len(live), c.perToken, ok, scope, c.ended)
	}
}
