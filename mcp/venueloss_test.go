package mcp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The day's realised loss belongs to the venue it was realised on: a loss
// on paper makes the user REDUCING on paper, is journaled as paper's, and
// counts nothing on the demo venue when the server is restarted there;
// back on paper it counts again (decisions D100).
func TestDailyLossBelongsToTheVenue(t *testing.T) {
	s := newLossStack(t)
	e, cs := lossAfterClose(t, s, "0.01")
	// Ten posture evaluations: the count after the close is journaled at
	// the first.
	time.Sleep(500 * time.Millisecond)
	cs.Close()
	var noted *messages.DailyPnlEvent
	for _, r := range e.records(t) {
		if messages.RecordType(r.Type) == messages.RecordDailyPnlNoted && r.User == "alice" {
			noted = &messages.DailyPnlEvent{}
			if err := json.Unmarshal(r.Payload, noted); err != nil {
				t.Fatal(err)
			}
		}
	}
	if noted == nil || noted.Environment != "paper" || len(noted.Rows) != 1 {
		t.Fatalf("the day's realised loss is not journaled as paper's: %+v", noted)
	}

	s.environment, s.venue = "bybit-demo", messages.VenueDemo
	e = s.start(t)
	cs = connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), Venue: "bybit-demo"}, "")
	p := waitPosture(t, cs, 10*time.Second, "ACTIVE on the demo venue", stateIs("ACTIVE"))
	if p["venue"] != "bybit-demo" || !lossOf(p).IsZero() {
		t.Fatalf("the demo venue's posture counts paper's loss: venue %v, loss %s", p["venue"], lossOf(p))
	}
	cs.Close()
	e.stop()

	s.environment, s.venue = "", ""
	e = s.start(t)
	cs = connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	// The demo venue's evaluation ended the daily_loss cause; paper's
	// first evaluation starts it again from paper's journaled count.
	waitPosture(t, cs, 10*time.Second, "connected again on paper, REDUCING for daily_loss", func(p map[string]any) bool {
		st, _ := p["stream"].(map[string]any)
		return st["connected"] == true && stateIs("REDUCING", messages.CauseDailyLoss)(p)
	})
	wantLossKept(t, cs, "back on paper")
}
