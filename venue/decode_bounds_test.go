package venue_test

import (
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// Every decimal the venue sends is bounded, on the stream as on REST (one
// parser): a position size of 200,000 digits, an exponent of a million or
// more significant decimals than any amount has drop the push as a whole
// (a gap, then a REST resync); an ordinary value goes through.
func TestStreamRefusesUnboundedDecimals(t *testing.T) {
	push := func(ms int, size string) string {
		return `{"topic":"position","creationTime":17000000000` + string(rune('0'+ms)) + `,"data":[{"category":"linear","symbol":"BTCUSDT","side":"Buy","positionIdx":0,` +
			`"size":"` + size + `","entryPrice":"50000","markPrice":"50000","leverage":"10","positionValue":"0","unrealisedPnl":"0","cumRealisedPnl":"0"}]}`
	}
	huge := "1" + strings.Repeat("0", 200000)
	script := []string{push(1, huge), push(2, "1e1000000"), push(3, "0."+strings.Repeat("0", 30)+"1"), push(4, "123456789012345678901234567"), push(5, "0.01")}
	url, _ := scriptedServer(t, script)
	s := newStream(t, venue.StreamConfig{URL: url, APIKey: "K1234", APISecret: "S1234"})
	nextEvent(t, s, nil, messages.StreamConnected)
	var skipped []messages.StreamEvent
	ev := nextEvent(t, s, &skipped, messages.StreamPositions)
	if len(ev.Positions) != 1 || !ev.Positions[0].Size.Equal(dec("0.01")) {
		t.Fatalf("the first position delivered is %+v, want the bounded 0.01 (the others refused)", ev.Positions)
	}
	for _, e := range skipped {
		if e.Kind == messages.StreamPositions {
			t.Fatalf("an unbounded decimal was delivered: %+v", e)
		}
	}
	gaps := 0
	for _, e := range skipped {
		if e.Kind == messages.StreamGap {
			gaps += e.Dropped
		}
	}
	if gaps == 0 {
		t.Fatal("the refused pushes were not reported as a gap")
	}
}
