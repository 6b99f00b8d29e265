package sim

import (
	"encoding/json"
	"sort"
)

// Private stream messages of the order engine (docs/bybit.md "Private stream";
// docs/simulator.md "Private stream").
//
// Every change of an account is one event: the orders it touched, the
// fills it made, and whether it changed a linear position or the wallet.
// When the event closes it queues, in this order, one message per topic:
// order, execution, position (linear: after every fill and after every
// create, amend and cancel, as Bybit does), wallet (when a balance moved).
// The messages are built under Sim.mu from the ledger as it stands then,
// and delivered after the lock is released (unlockAndFlush).

// tagPushID keeps push ids apart from the other hash streams.
const tagPushID uint64 = 0x180

// privateMsg is one queued private message.
type privateMsg struct {
	acct     *account
	topic    string
	category string
	payload  privatePush
}

// An event collects what one change did to one account.
type event struct {
	s        *Sim
	acct     *account
	category string
	ms       int64
	orders   []*simOrder
	execs    []*simExecution
	symbols  []string // linear symbols whose position changed or must be re-sent
	wallet   bool
}

func (s *Sim) newEvent(a *account, category string, ms int64) *event {
	s.markChangedLocked()
	return &event{s: s, acct: a, category: category, ms: ms}
}

func (ev *event) order(o *simOrder) {
	for _, x := range ev.orders {
		if x == o {
			return
		}
	}
	ev.orders = append(ev.orders, o)
}

func (ev *event) exec(e *simExecution) { ev.execs = append(ev.execs, e) }

func (ev *event) position(symbol string) {
	for _, x := range ev.symbols {
		if x == symbol {
			return
		}
	}
	ev.symbols = append(ev.symbols, symbol)
}

// close queues the event's messages if a private connection could want
// them.
func (ev *event) close() {
	s := ev.s
	if !s.privateListenerLocked() {
		return
	}
	sec := floorDiv(ev.ms, 1000)
	if len(ev.orders) > 0 {
		data := make([]any, 0, len(ev.orders))
		for _, o := range ev.orders {
			data = append(data, s.wsOrderRow(o))
		}
		s.queuePushLocked(ev.acct, "order", ev.category, data)
	}
	if len(ev.execs) > 0 {
		data := make([]any, 0, len(ev.execs))
		for _, e := range ev.execs {
			data = append(data, s.wsExecutionRow(e))
		}
		s.queuePushLocked(ev.acct, "execution", ev.category, data)
	}
	if len(ev.symbols) > 0 {
		l := ev.acct.ledgerLocked()
		data := make([]any, 0, len(ev.symbols))
		for _, sym := range ev.symbols {
			in := s.catalog.get(catLinear, sym)
			p := l.positions[posKey{sym, 0}]
			if p == nil {
				p = &simPosition{symbol: sym, leverage: l.leverageForLocked(sym), createdMs: ev.ms, updatedMs: ev.ms}
			}
			data = append(data, s.wsPositionRow(s.viewPosition(in, p, sec)))
		}
		s.queuePushLocked(ev.acct, "position", catLinear, data)
	}
	if ev.wallet {
		s.queuePushLocked(ev.acct, "wallet", "", []any{s.walletViewLocked(ev.acct.ledgerLocked(), sec, nil)})
	}
}

// privateListenerLocked reports whether any private connection is open;
// without one the engine builds no messages at all.
func (s *Sim) privateListenerLocked() bool {
	for c := range s.conns {
		if c.kind == streamPrivate {
			return true
		}
	}
	return false
}

func (s *Sim) queuePushLocked(a *account, topic, category string, data []any) {
	s.pushSeq++
	now := s.now().UnixMilli()
	s.engine.outbox = append(s.engine.outbox, privateMsg{
		acct: a, topic: topic, category: category,
		payload: privatePush{ID: s.uuid(tagPushID, s.pushSeq), Topic: topic, CreationTime: now, Data: data},
	})
}

// unlockAndFlush writes the durable state if a change is pending
// (store.go), releases Sim.mu and delivers the queued private messages in
// the order they were produced. pushMu is taken before mu is released,
// so two flushes never overtake each other; no lock is taken under pushMu
// except each connection's own.
func (s *Sim) unlockAndFlush() {
	s.saveLocked()
	if s.store != nil && s.store.failed {
		// The changes are not on disk: their pushes wait in the outbox
		// until a write succeeds, so the server never hears of a change a
		// crash would undo (store.go).
		s.mu.Unlock()
		return
	}
	out := s.engine.outbox
	s.engine.outbox = nil
	if len(out) == 0 {
		s.mu.Unlock()
		return
	}
	var targets []*wsConn
	for c := range s.conns {
		if c.kind == streamPrivate {
			targets = append(targets, c)
		}
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].id < targets[j].id })
	s.pushMu.Lock()
	s.mu.Unlock()
	defer s.pushMu.Unlock()
	for _, m := range out {
		s.deliverPrivate(targets, m)
	}
}

// jsonMap turns a row struct into a map so stream rows can add or rename
// fields of the REST row they mirror.
func jsonMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{}
	}
	return m
}

// wsOrderRow is an order as the order topic shows it: the REST row plus
// category, closedPnl and feeCurrency (docs/bybit.md "Trade endpoints").
func (s *Sim) wsOrderRow(o *simOrder) map[string]any {
	m := jsonMap(s.orderRow(o))
	m["category"] = o.category
	m["closedPnl"] = num(o.closedPnl)
	m["feeCurrency"] = o.feeCoin
	return m
}

// wsExecutionRow is a fill as the execution topic shows it.
func (s *Sim) wsExecutionRow(e *simExecution) map[string]any {
	m := jsonMap(s.executionRow(e))
	m["category"] = e.category
	m["execPnl"] = num(e.execPnl)
	if e.category == catSpot {
		m["isLeverage"] = "0"
	} else {
		m["isLeverage"] = ""
	}
	delete(m, "execFeeV2")
	return m
}

// wsPositionRow is a position as the position topic shows it: entryPrice
// instead of avgPrice, plus category (docs/bybit.md "Private stream").
func (s *Sim) wsPositionRow(v positionView) map[string]any {
	m := jsonMap(s.positionRow(v))
	m["entryPrice"] = m["avgPrice"]
	delete(m, "avgPrice")
	m["category"] = catLinear
	return m
}

// pushPrivate queues data (an array) on topic for acct's private
// connections and delivers it, like an engine event does.
func (s *Sim) pushPrivate(acct *account, topic, category string, data any) {
	s.mu.Lock()
	s.pushSeq++
	s.engine.outbox = append(s.engine.outbox, privateMsg{
		acct: acct, topic: topic, category: category,
		payload: privatePush{ID: s.uuid(tagPushID, s.pushSeq), Topic: topic, CreationTime: s.now().UnixMilli(), Data: data},
	})
	s.unlockAndFlush()
}
