package sim

import (
	"time"

	"github.com/shopspring/decimal"
)

// The order engine's clockwork (docs/simulator.md).
//
// Everything the engine does happens under Sim.mu, at a simulated instant:
//
//   - An accepted write (create, amend, cancel, cancel-all) becomes a
//     command due at accept time + Config.VisibilityDelay. With no delay it
//     runs before the answer is written; otherwise it waits in a FIFO queue.
//   - Time advances in whole seconds, the price model's resolution. At
//     each second the engine first checks every resting order and every
//     position's TP/SL against that second's last price ("evaluate"), then
//     runs the commands due within it, in acceptance order.
//   - advanceLocked brings the engine up to a moment. Every private
//     request, every /sim/ endpoint that reads or moves state, and a
//     background sweeper (started with the first order, one tick a real
//     second) call it, so fills happen over time even when nobody asks.
//     Because the result of a second depends only on the seed, the
//     requests and the simulated time, not on when a sweep runs, a run is
//     reproducible: more or fewer sweeps never change a fill.
//
// Private stream messages produced on the way are queued in an outbox and
// delivered after Sim.mu is released (unlockAndFlush), in production order.

// maxScanSeconds bounds how many seconds one advance evaluates one by
// one: after a longer jump of the clock only the last maxScanSeconds are
// checked for crossings (documented in docs/simulator.md).
const maxScanSeconds = 7 * 24 * 3600

// sweepInterval is the real-time period of the background sweeper.
const sweepInterval = time.Second

// engineState is the engine's part of Sim, guarded by Sim.mu.
type engineState struct {
	queue    []*command // accepted writes not yet applied, in acceptance order
	cmdSeq   uint64
	sweptSec int64 // last second evaluated; 0 before the first advance
	started  bool  // sweptSec is meaningful
	outbox   []privateMsg
	restingN int // open orders that may rest (a hint to skip empty scans)
}

// A command is an accepted write waiting for its moment.
type command struct {
	dueMs int64
	seq   uint64
	apply func(nowMs int64)
}

// enqueueLocked runs apply at acceptMs + VisibilityDelay: at once when
// there is no delay (after bringing the engine up to acceptMs), otherwise
// from the queue.
func (s *Sim) enqueueLocked(acceptMs int64, apply func(nowMs int64)) {
	s.engine.cmdSeq++
	if s.visDelay <= 0 && len(s.engine.queue) == 0 {
		apply(acceptMs)
		return
	}
	s.engine.queue = append(s.engine.queue, &command{dueMs: acceptMs + s.visDelay.Milliseconds(), seq: s.engine.cmdSeq, apply: apply})
	s.startSweeper()
}

// advanceLocked brings the engine up to now: every second up to now is
// evaluated and every command due by now is applied, in time order.
func (s *Sim) advanceLocked(now time.Time) {
	nowMs := now.UnixMilli()
	nowSec := floorDiv(nowMs, 1000)
	e := &s.engine
	if !e.started {
		e.started = true
		e.sweptSec = nowSec
	}
	for len(e.queue) > 0 && e.queue[0].dueMs <= nowMs {
		cmd := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		s.sweepToLocked(floorDiv(cmd.dueMs, 1000))
		cmd.apply(cmd.dueMs)
	}
	s.sweepToLocked(nowSec)
}

// sweepToLocked evaluates every second after the last one swept up to
// sec. A clock that went backwards evaluates nothing.
func (s *Sim) sweepToLocked(sec int64) {
	e := &s.engine
	if sec <= e.sweptSec {
		return
	}
	from := e.sweptSec + 1
	if sec-from >= maxScanSeconds {
		from = sec - maxScanSeconds + 1
	}
	e.sweptSec = sec
	if !s.anyWatchLocked() {
		return
	}
	for t := from; t <= sec; t++ {
		s.evaluateLocked(t, t*1000, nil)
		if !s.anyWatchLocked() {
			return
		}
	}
}

// anyWatchLocked reports whether anything can react to a price: a resting
// order or a position with TP/SL.
func (s *Sim) anyWatchLocked() bool {
	if s.engine.restingN > 0 {
		return true
	}
	for _, a := range s.accounts {
		if a.ledger == nil {
			continue
		}
		for _, p := range a.ledger.positions {
			if p.size.IsPositive() && (p.takeProfit.IsPositive() || p.stopLoss.IsPositive()) {
				return true
			}
		}
	}
	return false
}

// evaluateLocked checks, at second sec, every resting order (in account,
// then creation order) against the last price, then every position's
// TP/SL (in account, then symbol order). ms stamps what it does: the
// second's start in a sweep, the moment of a POST /sim/price. prevs gives
// the price before a POST /sim/price move within the second (TP/SL
// trigger on a crossing); otherwise the previous second's price is used.
func (s *Sim) evaluateLocked(sec, ms int64, prevs map[*instrument]decimal.Decimal) {
	lasts := map[*instrument]decimal.Decimal{}
	last := func(in *instrument) decimal.Decimal {
		v, ok := lasts[in]
		if !ok {
			v = s.model.last(in, sec)
			lasts[in] = v
		}
		return v
	}
	resting := 0
	for _, a := range s.accounts {
		l := a.ledger
		if l == nil {
			continue
		}
		l.compactLiveLocked()
		for _, o := range l.live {
			if !o.open() || o.orderType != "Limit" || o.seeded {
				continue
			}
			in := s.catalog.get(o.category, o.symbol)
			px := last(in)
			crossed := (o.side == "Buy" && px.LessThanOrEqual(o.price)) || (o.side == "Sell" && px.GreaterThanOrEqual(o.price))
			if !crossed {
				resting++
				continue
			}
			ev := s.newEvent(a, o.category, ms)
			s.fillRestingLocked(ev, l, o, in, ms)
			ev.close()
			if o.open() {
				resting++
			}
		}
		for _, p := range l.sortedPositionsLocked() {
			if !p.size.IsPositive() || (!p.takeProfit.IsPositive() && !p.stopLoss.IsPositive()) {
				continue
			}
			in := s.catalog.get(catLinear, p.symbol)
			prev, ok := prevs[in]
			if !ok {
				prev = s.model.last(in, sec-1)
			}
			s.checkTPSLLocked(a, l, p, in, prev, last(in), sec, ms)
		}
	}
	s.engine.restingN = resting
}

// startSweeper starts, once, the goroutine that advances the engine every
// sweepInterval of real time until the simulator shuts down.
func (s *Sim) startSweeper() {
	s.sweepOnce.Do(func() {
		go func() {
			t := time.NewTicker(sweepInterval)
			defer t.Stop()
			for {
				select {
				case <-s.closed:
					return
				case <-t.C:
					s.mu.Lock()
					s.advanceLocked(s.now())
					s.unlockAndFlush()
				}
			}
		}()
	})
}

// settle brings the engine up to now and delivers what it produced. Every
// private REST request calls it before its handler runs.
func (s *Sim) settle(now time.Time) {
	s.mu.Lock()
	s.advanceLocked(now)
	s.unlockAndFlush()
}

// compactLiveLocked drops final orders from l.live, keeping the order.
func (l *ledger) compactLiveLocked() {
	kept := l.live[:0]
	for _, o := range l.live {
		if o.open() || o.status == statusCreated {
			kept = append(kept, o)
		}
	}
	for i := len(kept); i < len(l.live); i++ {
		l.live[i] = nil
	}
	l.live = kept
}
