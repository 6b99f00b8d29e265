package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The running sums equal a full re-sum of the marks on random histories:
// attempts on several venues (and on none), out of time order, rated or
// not, confirmed or not; rejections taking a notional out; prunes, with
// the clock jumping forward and stepping back, queries before the last
// prune; restarts (a copy of the order part, re-summed when first asked)
// and replays (every event applied again to a new state, with the
// replay's own prunes); and queries for every venue. OrderOrigin's index
// agrees with a scan of the marks.
func TestWindowSumsEqualFullResum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2026))
	envs := []string{"paper", "bybit-demo", ""}
	notionals := []string{"30.0001", "100", "0.5", "12345.678901", "1e-20", "99999999999999999999.5"}
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	checks := 0
	for round := range 40 {
		s := New("bob")
		s.Exists = true
		now := t0
		var open []string
		var log []Event
		var times []time.Time
		check := func(s *User, at time.Time, step int, what string) {
			t.Helper()
			for _, env := range envs {
				wd, wm, wh := s.Counters.Window(at, env)
				rd, rm, rh := s.Counters.resum(at, env)
				if !wd.Equal(rd) || wm != rm || wh != rh {
					t.Fatalf("round %d step %d (%s) at %s on %q: window %s %d %d, re-sum %s %d %d",
						round, step, what, at, env, wd, wm, wh, rd, rm, rh)
				}
				checks++
			}
		}
		steps := 300 + rng.IntN(300)
		for n := range steps {
			// The clock: seconds to hours forward, now and then back.
			switch r := rng.IntN(20); {
			case r == 0:
				now = now.Add(-time.Duration(rng.IntN(900)) * time.Second)
			case r < 3:
				now = now.Add(time.Duration(rng.IntN(6*3600)) * time.Second)
			default:
				now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
			}
			if rng.IntN(4) > 0 {
				s.Prune(now)
			}
			var ev Event
			if len(open) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(open))
				id := open[i]
				open = slices.Delete(open, i, i+1)
				status := []string{messages.OutcomeAccepted, messages.OutcomeRejected, messages.OutcomeRejected, messages.OutcomeNotFound}[rng.IntN(4)]
				ev = Event{Type: messages.RecordOrderOutcome, Payload: messages.OrderOutcomeEvent{ActionID: id, ClientOrderID: id, At: now, Status: status}}
			} else {
				id := fmt.Sprintf("gx-%d-%d", round, n)
				open = append(open, id)
				at := now
				if rng.IntN(6) == 0 { // out of order: a payload's time before or after the journal's
					at = at.Add(time.Duration(rng.IntN(1200)-600) * time.Second)
				}
				ev = Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ActionID: id, ClientOrderID: id,
					Environment: envs[rng.IntN(len(envs))], At: at, NotionalUSDT: decimal.RequireFromString(notionals[rng.IntN(len(notionals))]),
					RiskIncreasing: rng.IntN(4) > 0, Confirmed: rng.IntN(3) == 0, Category: messages.CategoryLinear, Symbol: "BTCUSDT"}}
			}
			s.Apply(ev)
			log, times = append(log, ev), append(times, now)
			// Queries at now, a little before (before the last prune),
			// and a little after.
			for range rng.IntN(3) {
				check(s, now.Add(time.Duration(rng.IntN(240)-120)*time.Second), n, "live")
			}
			if o := log[rng.IntN(len(log))]; o.Type == messages.RecordOrderAttempt {
				id := o.Payload.(messages.OrderAttemptEvent).ClientOrderID
				want := messages.OriginExternal
				if _, ok := s.Attempts[id]; ok || slices.ContainsFunc(s.Counters.Orders, func(m OrderMark) bool { return m.ClientOrderID == id }) {
					want = messages.OriginSystem
				}
				if got := s.OrderOrigin(id); got != want {
					t.Fatalf("round %d step %d: origin of %s %s, want %s", round, n, id, got, want)
				}
			}
			switch rng.IntN(60) {
			case 0: // a restart: the next incarnation's copy
				s = s.OwnOrderPart()
				check(s, now, n, "restart")
			case 1: // a replay of every event, pruned at each record's time
				r := New("bob")
				r.Exists = true
				for i, ev := range log {
					r.Prune(times[i])
					r.Apply(ev)
				}
				r.Prune(now)
				check(r, now, n, "replay")
			}
		}
	}
	t.Logf("%d checks", checks)
}

// Pruning takes out of the sums the marks it drops that still count,
// also when the windows were last brought to an earlier time.
func TestPruneTakesMarksOut(t *testing.T) {
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	s := New("al")
	s.Apply(Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ClientOrderID: "gx-1", Environment: "paper", At: t0,
		NotionalUSDT: decimal.NewFromInt(100), RiskIncreasing: true}})
	s.Apply(Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ClientOrderID: "gx-2", Environment: "paper", At: t0.Add(time.Hour),
		NotionalUSDT: decimal.NewFromInt(5), RiskIncreasing: true}})
	if d, _, _ := s.Counters.Window(t0.Add(time.Hour), "paper"); !d.Equal(decimal.NewFromInt(105)) {
		t.Fatalf("before the prune: %s", d)
	}
	s.Prune(t0.Add(notionalWindow))
	// Asked as of a time before the prune: the pruned order is gone.
	if d, _, _ := s.Counters.Window(t0.Add(notionalWindow-time.Minute), "paper"); !d.Equal(decimal.NewFromInt(5)) {
		t.Fatalf("after the prune: %s", d)
	}
}

// BenchmarkWindowAtOrdersInDay is the rolling window, brought forward by
// one order, with n orders in the last 24 h: flat in n.
func BenchmarkWindowAtOrdersInDay(b *testing.B) {
	for _, n := range []int{0, 1500, 14400} {
		b.Run(fmt.Sprintf("orders=%d", n), func(b *testing.B) {
			now := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
			step := notionalWindow / time.Duration(max(n, 1))
			s := New("bench")
			notional := decimal.RequireFromString("30.0001")
			apply := func(i int) {
				s.Prune(now)
				s.Apply(Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ClientOrderID: fmt.Sprint("gx-", i), Environment: "paper",
					At: now, NotionalUSDT: notional, RiskIncreasing: true}})
			}
			for i := range n {
				apply(i)
				now = now.Add(step)
			}
			b.ReportAllocs()
			i := n
			for b.Loop() {
				s.Counters.Window(now, "paper")
				if n > 0 {
					apply(i)
					i++
					now = now.Add(step)
				}
			}
		})
	}
}

// The running sums are kept, never rebuilt, while orders come and go in
// time order: appends that move the marks to a larger array, and prunes,
// keep the same bookkeeping (a rebuild is a pass over the whole day).
func TestWindowSumsKeptAcrossAppendsAndPrunes(t *testing.T) {
	now := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	s := New("kit")
	s.Counters.Window(now, "paper")
	w := s.Counters.w
	for i := range 20000 {
		now = now.Add(7 * time.Second)
		s.Prune(now)
		s.Apply(Event{Type: messages.RecordOrderAttempt, Payload: messages.OrderAttemptEvent{ClientOrderID: fmt.Sprint("gx-", i), Environment: "paper",
			At: now, NotionalUSDT: decimal.NewFromInt(10), RiskIncreasing: true}})
		d, _, _ := s.Counters.Window(now, "paper")
		if s.Counters.w != w {
			t.Fatalf("order %d: the running sums were rebuilt", i)
		}
		if want := decimal.NewFromInt(10 * int64(len(s.Counters.Orders))); !d.Equal(want) {
			t.Fatalf("order %d: daily %s, want %s", i, d, want)
		}
	}
}
