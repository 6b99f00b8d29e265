package actors

import (
	"testing"
	"time"
)

// TestSendClockCountsWritesInFlight: while a write of a user is in flight
// its sends reach up to the moment asked; once every write ended, up to
// the last end; other users are apart (D199).
func TestSendClockCountsWritesInFlight(t *testing.T) {
	var s sendClocks
	c := s.of("ann")
	if !c.sendsUntil().IsZero() || s.of("ann") != c {
		t.Fatal("a fresh clock says a write was sent, or a user has two clocks")
	}
	end1, end2 := c.begin(), c.begin()
	end1()
	before := time.Now()
	if got := c.sendsUntil(); got.Before(before) {
		t.Fatalf("with a write in flight sendsUntil is %v, before the call at %v", got, before)
	}
	end2()
	last := c.sendsUntil()
	if last.IsZero() || !c.sendsUntil().Equal(last) {
		t.Fatalf("after every write ended sendsUntil moves: %v", last)
	}
	if !s.of("bob").sendsUntil().IsZero() {
		t.Fatal("another user's clock shows ann's writes")
	}
}
