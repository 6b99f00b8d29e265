package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The driver: every trading tool through the one action path, in the
// user actor, from its descriptor (tools.go):
//
//	validate (invalid_params, not journaled; once, at the boundary: Submit)
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
// commands. A command that came through Submit was validated there
// (checked): it is trusted.
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
	ask := &tradingAsk{ctx: m.ctx, tool: d, args: args, origin: m.origin}
	if m.checked {
		u.startTool(ctx, ask, sender)
		return true
	}
	u.runTool(ctx, ask, sender)
	return true
}

// runTool runs a trading call that reached the user actor without passing
// the boundary's check (Submit): a message sent to the actor directly,
// within this package. Its arguments are validated here, once.
func (u *userActor) runTool(ctx actor.Context, m *tradingAsk, sender *actor.PID) {
	if e := m.tool.Validate(m.args); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	u.startTool(ctx, m, sender)
}

// startTool starts a validated trading call: repeat, gate, then the read
// its decision needs (onToolRead continues). An approved confirmation's
// run starts here with the arguments it parked, which were validated
// when its call entered (D139).
func (u *userActor) startTool(ctx actor.Context, m *tradingAsk, sender *actor.PID) {
	d, args := m.tool, m.args
	b := d.Base(args)
	hash := d.Hash(args)
	net := d.RiskIncreasing(args)
	if !b.DryRun {
		// A repeat is answered before the gate: it sends nothing and
		// re-states an earlier answer, kill switch or not (D88).
		if u.repeat(ctx, d.Name, b.IdempotencyKey, hash, net, m.origin, sender) {
			return
		}
		if step, ok := u.qtySteps[string(b.Category)+":"+b.Symbol]; ok {
			if h := d.PlannedHash(args, step); h != "" && u.repeat(ctx, d.Name, "", h, true, m.origin, sender) {
				return
			}
		}
	}
	if e := d.Gate(u.state, u.venue, u.env, args); e != nil {
		u.refuseTool(ctx, d.Name, b.Category, b.Symbol, b.DryRun, e, m.origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, m.origin, nil)
	act.call = &toolCall{tool: d, args: args, hash: hash}
	act.claim = &claim{key: b.IdempotencyKey, hash: hash, dryRun: b.DryRun}
	switch d.Needs {
	case risk.NeedMarket:
		u.toVenue(ctx, marketFetchFor(act.id, d.Name, b, args), ctx.Self())
	case risk.NeedOrder, risk.NeedOrderAndMarket:
		u.toVenue(ctx, &orderFetch{action: act.id, category: b.Category, symbol: b.Symbol, orderID: b.OrderID, withMarket: d.Needs == risk.NeedOrderAndMarket}, ctx.Self())
	case risk.NeedOpenOrders:
		u.toVenue(ctx, &openOrdersFetch{action: act.id, category: b.Category, symbol: b.Symbol}, ctx.Self())
	}
}

// onToolRead decides a call with what the venue read, on the state as it
// is now, and carries the decision out.
func (u *userActor) onToolRead(ctx actor.Context, id uint64, read risk.VenueRead, err *messages.Error) {
	act, ok := u.actions[id]
	if !ok || act.call == nil {
		return
	}
	delete(u.actions, act.id)
	c := act.call
	d := c.tool
	b := d.Base(c.args)
	if err != nil {
		u.reply(ctx, act.waiter, err)
		return
	}
	// A same-key call that arrived while this one read the venue is in
	// progress, not a second write.
	if !b.DryRun && u.repeat(ctx, d.Name, b.IdempotencyKey, c.hash, d.RiskIncreasing(c.args), act.origin, act.waiter) {
		return
	}
	refuse := func(e *messages.Error) {
		u.refuseTool(ctx, d.Name, b.Category, b.Symbol, b.DryRun, e, act.origin, act.waiter)
	}
	in := &risk.Input{Tool: d.Name, Args: c.args, Hash: c.hash, State: u.state, Venue: u.venue, Env: u.env,
		Shown: u.shownOf(act.origin), Approved: act.origin.ConfirmationID != "", Read: read}
	if e := d.Prepare(in); e != nil {
		refuse(e)
		return
	}
	netHash := ""
	if mk := in.Read.Market; !b.DryRun && mk.Instrument != nil {
		if h := d.PlannedHash(in.Args, mk.Instrument.QtyStep); h != "" {
			// The safety net compares the planned order, not the
			// spelling of the request (D55), before the decision like
			// any repeat (D88).
			if u.qtySteps == nil {
				u.qtySteps = map[string]decimal.Decimal{}
			}
			u.qtySteps[string(b.Category)+":"+b.Symbol] = mk.Instrument.QtyStep
			netHash = h
			if u.repeat(ctx, d.Name, "", netHash, true, act.origin, act.waiter) {
				return
			}
		}
	}
	in.Read.Market.PushedOpen = u.cache != nil && u.cache.pushedOpen(b.Category, b.Symbol)
	in.Reserved, in.Now = u.reserved(), u.now()
	dec := d.Decide(in)
	if dec.Malformed > 0 {
		// The ids are not logged: they are the exchange's text, of any
		// shape.
		u.logger.Warn(d.Name+": the venue listed open orders with a malformed order id; left out",
			"user", u.state.User, "symbol", b.Symbol, "count", dec.Malformed)
	}
	if dec.Refusal != nil {
		refuse(dec.Refusal)
		return
	}
	if b.DryRun {
		u.reply(ctx, act.waiter, dec.Planned)
		return
	}
	if dec.Unchanged != nil {
		u.reply(ctx, act.waiter, dec.Unchanged) // nothing changes: nothing is sent
		return
	}
	if u.confirmGate(ctx, act, parkRequest{tool: d.Name, category: b.Category, symbol: b.Symbol, args: c.args,
		hash: c.hash, key: b.IdempotencyKey, shown: d.Shown(&dec), confirmedBy: dec.Plan.ConfirmedBy}) {
		return
	}
	if netHash != "" && dec.Plan.RiskIncreasing {
		// The attempt is remembered under the planned order's hash.
		act.claim.hash = netHash
		dec.NetHash = netHash
	}
	d.carryOut(u, ctx, act, &dec)
}

// executeOnce sends a decision's one write; the tool's complete makes the
// answer of its outcome.
func (u *userActor) executeOnce(ctx actor.Context, act *action, d *risk.Decision) {
	ex := u.execute(ctx, d.Plan, act.origin, act.waiter)
	ex.claim = act.claim
	complete := act.call.tool.complete
	ex.complete = func(r *orderResult, w *orderWritten) any { return complete(d, r, w) }
}

// onMarketFetched continues the call that read the market.
func (u *userActor) onMarketFetched(ctx actor.Context, m *marketFetched) {
	u.onToolRead(ctx, m.action, risk.VenueRead{Market: m.market}, m.err)
}

// onOrderFetched continues the call that read one order.
func (u *userActor) onOrderFetched(ctx actor.Context, m *orderFetched) {
	u.onToolRead(ctx, m.action, risk.VenueRead{Order: m.order, Market: m.market}, m.err)
}

// onOpenOrdersFetched continues the call that read the open orders.
func (u *userActor) onOpenOrdersFetched(ctx actor.Context, m *openOrdersFetched) {
	u.onToolRead(ctx, m.action, risk.VenueRead{Orders: m.orders, HasMore: m.hasMore}, m.err)
}
