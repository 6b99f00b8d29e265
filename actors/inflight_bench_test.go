package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// slowVenue is a user system over a real simulator whose key check
// (/v5/user/query-api) answers only after delay.
type slowVenue struct {
	*testSystem
	url string
}

func newSlowVenue(tb testing.TB, delay time.Duration) *slowVenue {
	tb.Helper()
	ts := startStack(tb, stack{SimOptions: funded, MasterKey: make([]byte, 32), Users: []string{"kim"},
		Configure: func(c *Config) { c.RequestTimeout = 4 * delay }})
	sv := &slowVenue{testSystem: ts, url: ts.sim.URL}
	ts.addDefaultKey(tb, "kim")
	body, _ := json.Marshal(map[string]any{"kind": "delay", "path": venue.PathQueryAPI, "delay_ms": delay.Milliseconds()})
	resp, err := http.Post(sv.url+"/sim/faults", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return sv
}

// recheck starts a permission re-check (one venue call that the fault
// delays) and returns a channel that receives its answer.
func (sv *slowVenue) recheck() <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := sv.Handle(context.Background(), &messages.RecheckCredentialRequest{User: "kim", Environment: "paper"}, messages.ActorSystem)
		done <- err
	}()
	return done
}

// BenchmarkKillSwitchWhileVenueWaits measures activate_kill_switch (the
// agent's kill_switch_on, one journaled change) for a user whose other
// action waits 5 s on the venue. Target: p50 ≤ 1 ms plus one fsync. Each
// iteration turns the switch on (timed) and off again (not timed), so every
// timed call journals one record.
func BenchmarkKillSwitchWhileVenueWaits(b *testing.B) {
	sv := newSlowVenue(b, 5*time.Second)
	ctx := context.Background()
	pending := sv.recheck()
	time.Sleep(50 * time.Millisecond) // let the re-check reach the venue
	var ds []time.Duration
	for b.Loop() {
		select {
		case <-pending:
			pending = sv.recheck()
			time.Sleep(50 * time.Millisecond)
		default:
		}
		start := time.Now()
		v, err := sv.Handle(ctx, &messages.SetKillSwitchRequest{User: "kim", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
		if err != nil || !v.(*messages.PolicyView).Changed {
			b.Fatalf("kill switch: %v %+v", err, v)
		}
		ds = append(ds, time.Since(start))
		b.StopTimer()
		if _, err := sv.Handle(ctx, &messages.SetKillSwitchRequest{User: "kim", On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(medianDur(ds).Microseconds()), "p50-µs")
	<-pending
}
