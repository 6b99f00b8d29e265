package venue_test

import (
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// Pongs prove the connection, not that pushes reach the server: a pinged,
// quiet connection moves LastRead and never LastPush (what get_posture's
// stream.last_message_age_s shows); a push moves LastPush.
func TestStreamLastPushIgnoresPongs(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	s := newStream(t, venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret,
		PingInterval: 50 * time.Millisecond, ReadTimeout: 2 * time.Second})
	nextEvent(t, s, nil, messages.StreamConnected)
	connected := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for !s.LastRead().After(connected.Add(150 * time.Millisecond)) { // pongs only
		if time.Now().After(deadline) {
			t.Fatal("no pong read")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := s.LastPush(); !at.IsZero() {
		t.Fatalf("pongs counted as a push (last push %v)", at)
	}

	url, _ := scriptedServer(t, []string{`{"topic":"position","creationTime":1700000000000,"data":[{"category":"linear","symbol":"BTCUSDT","side":"Buy","positionIdx":0,"size":"0.01","avgPrice":"60000","markPrice":"60000","unrealisedPnl":"0","cumRealisedPnl":"0"}]}`})
	s2 := newStream(t, venue.StreamConfig{URL: url, APIKey: "k", APISecret: "s", PingInterval: time.Second, ReadTimeout: 5 * time.Second})
	nextEvent(t, s2, nil, messages.StreamPositions)
	if s2.LastPush().IsZero() {
		t.Fatal("a push did not move LastPush")
	}
}
