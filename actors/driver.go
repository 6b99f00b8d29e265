package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The driver: every trading tool through the one action path, in the
// user actor, from its descriptor (tools.go):
//
//	validate (invalid_params, not journaled; once, where the call enters)
//	→ repeat? (idempotency key, or the 30 s safety net): order_repeat, the first answer
//	→ gate (kill switch, profile, arming, key, allowlist), before any venue call
//	→ the read the decision needs, by the venue actor (an action step: the mailbox flows)
//	→ repeat? again (a same-key call may have arrived meanwhile)
//	→ decide on the state as it is then (the descriptor's pure decide)
//	→ refusal: order_refused, answered; dry_run: the plan, answered
//	→ confirmation gate (park for a human, or check an approved run)
//	→ execute: order_attempt durable, send once, order_outcome durable,
//	  complete (the outcome as the tool's answer).
//
// Only the descriptors' execute parts call execute
// (TestOnlyTheActionPathWrites).

// toolCall is a trading call in flight between the driver's steps: its
// tool, its validated arguments and their hash.
type toolCall struct {
	tool *toolDescriptor
	args any
	hash string
}

// tradingCommand runs a trading tool's command through the driver (and
// the confirmation commands through confirm.go); false for other
// commands.
func (u *userActor) tradingCommand(ctx actor.Context, m *userCommand, sender *actor.PID) bool {
	switch m.cmd.(type) {
	case *messages.ConfirmationStatusCommand, *messages.ListConfirmationsCommand, *messages.CancelConfirmationCommand, *messages.DecideConfirmationCommand:
		u.confirmCommand(ctx, m, sender)
		return true
	}
	d, args, clientUI := toolOfCommand(m.cmd)
	if d == nil {
		return false
	}
	// Only the MCP layer sets ClientUI, from the session, for the agent.
	m.origin.FormElicitation = m.origin.Role == messages.RoleAgent && clientUI
	u.runTool(ctx, &tradingAsk{ctx: m.ctx, tool: d, args: args, origin: m.origin}, sender)
	return true
}

// runTool runs a trading call that enters the server: its arguments are
// validated here, once; everything after trusts them.
func (u *userActor) runTool(ctx actor.Context, m *tradingAsk, sender *actor.PID) {
	if e := m.tool.validate(m.args); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	u.startTool(ctx, m, sender)
}

// startTool starts a validated trading call: repeat, gate, then the read
// its decision needs (onToolRead continues). An approved confirmation's
// run starts here with the arguments it parked, which were validated
// when its call entered.
func (u *userActor) startTool(ctx actor.Context, m *tradingAsk, sender *actor.PID) {
	d, args := m.tool, m.args
	b := d.base(args)
	hash := d.hash(args)
	net := d.riskIncreasing(args)
	if !b.dryRun {
		// A repeat is answered before the gate: it sends nothing and
		// re-states an earlier answer, kill switch or not (D88).
		if u.repeat(ctx, d.name, b.idempotencyKey, hash, net, m.origin, sender) {
			return
		}
		if step, ok := u.qtySteps[string(b.category)+":"+b.symbol]; ok {
			if h := d.plannedHash(args, step); h != "" && u.repeat(ctx, d.name, "", h, true, m.origin, sender) {
				return
			}
		}
	}
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: d.name, Category: b.category, Symbol: b.symbol, RiskIncreasing: net, RiskReducing: !net}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, d.name, b.category, b.symbol, b.dryRun, e, m.origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, m.origin, nil)
	act.call = &toolCall{tool: d, args: args, hash: hash}
	act.claim = &claim{key: b.idempotencyKey, hash: hash, dryRun: b.dryRun}
	switch d.needs {
	case needMarket:
		u.toVenue(ctx, marketFetchFor(act.id, d.name, b, args), ctx.Self())
	case needOrder, needOrderAndMarket:
		u.toVenue(ctx, &orderFetch{action: act.id, category: b.category, symbol: b.symbol, orderID: b.orderID, withMarket: d.needs == needOrderAndMarket}, ctx.Self())
	case needOpenOrders:
		u.toVenue(ctx, &openOrdersFetch{action: act.id, category: b.category, symbol: b.symbol}, ctx.Self())
	}
}

// onToolRead decides a call with what the venue read, on the state as it
// is now, and carries the decision out.
func (u *userActor) onToolRead(ctx actor.Context, id uint64, read toolRead, err *messages.Error) {
	act, ok := u.actions[id]
	if !ok || act.call == nil {
		return
	}
	delete(u.actions, act.id)
	c := act.call
	d := c.tool
	b := d.base(c.args)
	if err != nil {
		u.reply(ctx, act.waiter, err)
		return
	}
	// A same-key call that arrived while this one read the venue is in
	// progress, not a second write.
	if !b.dryRun && u.repeat(ctx, d.name, b.idempotencyKey, c.hash, d.riskIncreasing(c.args), act.origin, act.waiter) {
		return
	}
	refuse := func(e *messages.Error) {
		u.refuseTool(ctx, d.name, b.category, b.symbol, b.dryRun, e, act.origin, act.waiter)
	}
	in := &decideIn{tool: d.name, args: c.args, hash: c.hash, state: u.state, venue: u.venue, env: u.env,
		shown: u.shownOf(act.origin), approved: act.origin.ConfirmationID != "", read: read}
	if e := d.prepare(in); e != nil {
		refuse(e)
		return
	}
	netHash := ""
	if mk := in.read.market; !b.dryRun && mk.instrument != nil {
		if h := d.plannedHash(in.args, mk.instrument.QtyStep); h != "" {
			// The safety net compares the planned order, not the
			// spelling of the request (D55), before the decision like
			// any repeat (D88).
			if u.qtySteps == nil {
				u.qtySteps = map[string]decimal.Decimal{}
			}
			u.qtySteps[string(b.category)+":"+b.symbol] = mk.instrument.QtyStep
			netHash = h
			if u.repeat(ctx, d.name, "", netHash, true, act.origin, act.waiter) {
				return
			}
		}
	}
	in.read.market.pushedOpen = u.cache != nil && u.cache.pushedOpen(b.category, b.symbol)
	in.reserved, in.now = u.reserved(), u.now()
	dec := d.decide(in)
	if dec.malformed > 0 {
		// The ids are not logged: they are the exchange's text, of any
		// shape.
		u.logger.Warn(d.name+": the venue listed open orders with a malformed order id; left out",
			"user", u.state.User, "symbol", b.symbol, "count", dec.malformed)
	}
	if dec.refusal != nil {
		refuse(dec.refusal)
		return
	}
	if b.dryRun {
		u.reply(ctx, act.waiter, dec.planned)
		return
	}
	if dec.unchanged != nil {
		u.reply(ctx, act.waiter, dec.unchanged) // nothing changes: nothing is sent
		return
	}
	if u.confirmGate(ctx, act, parkRequest{tool: d.name, category: b.category, symbol: b.symbol, args: c.args,
		hash: c.hash, key: b.idempotencyKey, shown: d.shown(&dec), confirmedBy: dec.plan.confirmedBy}) {
		return
	}
	if netHash != "" && dec.plan.riskIncreasing {
		// The attempt is remembered under the planned order's hash.
		act.claim.hash = netHash
		dec.netHash = netHash
	}
	d.carryOut(u, ctx, act, &dec)
}

// executeOnce sends a decision's one write; the tool's complete makes the
// answer of its outcome.
func (u *userActor) executeOnce(ctx actor.Context, act *action, d *toolDecision) {
	ex := u.execute(ctx, d.plan, act.origin, act.waiter)
	ex.claim = act.claim
	complete := act.call.tool.complete
	ex.complete = func(r *orderResult, w *orderWritten) any { return complete(d, r, w) }
}

// onMarketFetched continues the call that read the market.
func (u *userActor) onMarketFetched(ctx actor.Context, m *marketFetched) {
	u.onToolRead(ctx, m.action, toolRead{market: m.market}, m.err)
}

// onOrderFetched continues the call that read one order.
func (u *userActor) onOrderFetched(ctx actor.Context, m *orderFetched) {
	u.onToolRead(ctx, m.action, toolRead{order: m.order, market: m.market}, m.err)
}

// onOpenOrdersFetched continues the call that read the open orders.
func (u *userActor) onOpenOrdersFetched(ctx actor.Context, m *openOrdersFetched) {
	u.onToolRead(ctx, m.action, toolRead{orders: m.orders, hasMore: m.hasMore}, m.err)
}

// keepArgs is prepare for tools whose decision takes the call as it is.
func keepArgs(*decideIn) *messages.Error { return nil }
