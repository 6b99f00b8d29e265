package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// amend_order through the one action path. An amend increases risk when
// the new size is larger or the new price worse (higher for a buy, lower
// for a sell); then the kill switch blocks it, and the allowlist,
// max_order_notional_usdt (on the whole order at its new values), the
// symbol's leverage, the rates and the daily cap (by the growth of the
// order's value) apply. An amend of a reduce-only order is cut to the
// position and reduces risk, unless it shrinks what the order covers;
// that, and any amend of a conditional order, loosens a protection and
// adds risk (D73): the kill switch, the posture, the allowlist and the
// rates apply. The instrument's rules apply to the new values.

const toolAmendOrder = "amend_order"

// amendStep carries an amend_order call between its steps.
type amendStep struct {
	args messages.AmendOrderArgs
	hash string
}

func validateAmend(a messages.AmendOrderArgs) *messages.Error {
	switch {
	case a.Category != messages.CategoryLinear && a.Category != messages.CategorySpot:
		return messages.InvalidParams("category", "must be spot or linear")
	case !messages.SymbolRE.MatchString(a.Symbol):
		return messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9")
	case !messages.OrderIDRE.MatchString(a.OrderID):
		return messages.InvalidParams("order_id", "must be the venue's order id (1-64 of A-Z, a-z, 0-9 and '-')")
	case !a.Qty.Valid && !a.Price.Valid:
		return messages.InvalidParams("qty", "give qty, price or both")
	case a.Qty.Valid && !a.Qty.Decimal.IsPositive():
		return messages.InvalidParams("qty", "must be a positive decimal string")
	case a.Price.Valid && !a.Price.Decimal.IsPositive():
		return messages.InvalidParams("price", "must be a positive decimal string")
	case a.IdempotencyKey != "" && !messages.IdempotencyKeyRE.MatchString(a.IdempotencyKey):
		return messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
	}
	return nil
}

func (u *userActor) amendOrder(ctx actor.Context, a messages.AmendOrderArgs, origin messages.Origin, sender *actor.PID) {
	if e := validateAmend(a); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	dec := func(n decimal.NullDecimal) string {
		if !n.Valid {
			return ""
		}
		return n.Decimal.String()
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{toolAmendOrder, string(a.Category), a.Symbol, a.OrderID, dec(a.Qty), dec(a.Price)}, "|")))
	hash := hex.EncodeToString(sum[:])
	if !a.DryRun && u.repeat(ctx, toolAmendOrder, a.IdempotencyKey, hash, false, origin, sender) {
		return
	}
	// A first gate: the allowlist is applied once the venue shows
	// whether the change adds risk.
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: toolAmendOrder, Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, toolAmendOrder, a.Category, a.Symbol, a.DryRun, e, origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, origin, nil)
	act.amend = &amendStep{args: a, hash: hash}
	act.claim = &claim{key: a.IdempotencyKey, hash: hash, dryRun: a.DryRun}
	u.toVenue(ctx, &orderFetch{action: act.id, category: a.Category, symbol: a.Symbol, orderID: a.OrderID, withMarket: true}, ctx.Self())
}

// onAmendFetched decides the amend with the order and the market as the
// venue showed them, on the state as it is now.
func (u *userActor) onAmendFetched(ctx actor.Context, act *action, m *orderFetched) {
	delete(u.actions, act.id)
	a := act.amend.args
	if m.err != nil {
		u.reply(ctx, act.waiter, m.err)
		return
	}
	if !a.DryRun && u.repeat(ctx, toolAmendOrder, a.IdempotencyKey, act.amend.hash, false, act.origin, act.waiter) {
		return
	}
	refuse := func(e *messages.Error) {
		u.refuseTool(ctx, toolAmendOrder, a.Category, a.Symbol, a.DryRun, e, act.origin, act.waiter)
	}
	if m.order == nil {
		refuse(&messages.Error{Code: messages.CodeNotFound, Message: "no open order with this id on this instrument",
			NextStep: "list the open orders with get_open_orders; a filled or cancelled order cannot be amended"})
		return
	}
	o, mk := *m.order, m.market
	if !slices.Contains(messages.Sides, o.Side) {
		// The risk direction follows from the side: one this server
		// cannot read decides nothing.
		refuse(unreadableOrder())
		return
	}
	in := mk.instrument
	if in == nil {
		refuse(ruleViolation("the instrument's rules could not be read", "try again", map[string]any{"rule": "status"}))
		return
	}
	qty, price := o.Qty, o.Price
	if a.Qty.Valid {
		qty = a.Qty.Decimal
		if in.QtyStep.IsPositive() {
			qty = qty.Div(in.QtyStep).Floor().Mul(in.QtyStep)
		}
	}
	if a.Price.Valid {
		price = a.Price.Decimal
		if in.TickSize.IsPositive() && !price.Mod(in.TickSize).IsZero() {
			lo, hi := roundToTick(price, in.TickSize, false), roundToTick(price, in.TickSize, true)
			refuse(ruleViolation("the price is not on the instrument's tick", "use one of the nearest valid prices",
				map[string]any{"rule": "tick_size", "tick_size": in.TickSize.String(), "nearest_prices": []string{lo.String(), hi.String()}}))
			return
		}
	}
	buy := o.Side == "Buy"
	// Two ways to add risk: a larger or worse order adds exposure; a
	// smaller protective order, or any change to a conditional one (whose
	// trigger cannot be seen to tighten), loosens a protection (D73).
	exposure, loosens := false, conditionalOrder(&o)
	if o.ReduceOnly {
		covers := o.Qty
		if pos := mk.position; pos != nil && pos.Size.IsPositive() {
			qty, covers = decimal.Min(qty, pos.Size), decimal.Min(o.Qty, pos.Size)
		}
		loosens = loosens || qty.LessThan(covers)
	} else {
		exposure = qty.GreaterThan(o.Qty) || (buy && price.GreaterThan(o.Price)) || (!buy && price.LessThan(o.Price))
	}
	risk := exposure || loosens
	if !qty.IsPositive() || qty.LessThan(in.MinOrderQty) {
		refuse(ruleViolation("the quantity is below the instrument's minimum", "order at least min_qty",
			map[string]any{"rule": "min_qty", "min_qty": in.MinOrderQty.String(), "qty_step": in.QtyStep.String()}))
		return
	}
	if e := priceBand(price, buy, in, mk.band); e != nil {
		refuse(e)
		return
	}
	notional := qty.Mul(sellPrice(price, buy, mk.ticker))
	if in.MinNotional.IsPositive() && qty.Mul(price).LessThan(in.MinNotional) {
		refuse(ruleViolation("the order value is below the instrument's minimum", "make the order larger",
			map[string]any{"rule": "min_notional", "min_notional": in.MinNotional.String()}))
		return
	}
	var e *messages.Error
	if loosens && !exposure {
		e = u.decideLoosening(toolAmendOrder, a.Category, a.Symbol)
	} else {
		e = u.state.DecideAction(&messages.DecideActionRequest{Tool: toolAmendOrder, Category: a.Category, Symbol: a.Symbol, RiskIncreasing: risk, RiskReducing: !risk}, u.venue, u.env)
	}
	if e != nil {
		refuse(e)
		return
	}
	p := u.state.Effective(u.venue, u.env)
	growth := decimal.Max(decimal.Zero, notional.Sub(o.Qty.Mul(o.Price)))
	switch {
	case exposure:
		if e := u.riskLimits(p, a.Category, a.Symbol, notional, growth, mk); e != nil {
			refuse(e)
			return
		}
	case loosens:
		growth = decimal.Zero // no exposure added: nothing for the daily cap
	}
	planned := messages.AmendAnswer{Status: messages.AnswerPreview, OrderID: o.OrderID, Category: a.Category, Symbol: a.Symbol,
		Origin: u.state.OrderOrigin(o.OrderLinkID), RequestedQty: o.Qty, Qty: qty, Price: price, NotionalUSDT: notional,
		RiskIncreasing: risk, OrderStatus: o.Status, FilledQty: venue.FilledOf(&o), IdempotencyKey: a.IdempotencyKey}
	if a.Qty.Valid {
		planned.RequestedQty = a.Qty.Decimal
	}
	if planned.Origin == messages.OriginSystem {
		planned.ClientOrderID = o.OrderLinkID
	}
	planned.Fence()
	if a.DryRun {
		u.reply(ctx, act.waiter, &planned)
		return
	}
	req := messages.AmendOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID}
	if !qty.Equal(o.Qty) {
		req.Qty = decimal.NewNullDecimal(qty)
	}
	if !price.Equal(o.Price) {
		req.Price = decimal.NewNullDecimal(price)
	}
	if !req.Qty.Valid && !req.Price.Valid {
		planned.Status, planned.ResultSource = string(messages.ChangeAmended), messages.ResultSourceVenue
		u.reply(ctx, act.waiter, &planned) // nothing changes: nothing is sent
		return
	}
	by := confirmedBy(p, toolAmendOrder, notional)
	if u.confirmGate(ctx, act, parkRequest{tool: toolAmendOrder, category: a.Category, symbol: a.Symbol, args: a, hash: act.amend.hash,
		key: a.IdempotencyKey, shown: messages.ShownToUser{Amend: &planned, RiskIncreasing: risk}, confirmedBy: by}) {
		return
	}
	plan := orderPlan{tool: toolAmendOrder, confirmedBy: by, category: a.Category, symbol: a.Symbol, settleLinkID: o.OrderLinkID, changes: &o, amend: &req,
		notional: growth, riskIncreasing: risk, idempotencyKey: a.IdempotencyKey, argsSHA256: act.amend.hash}
	ex := u.execute(ctx, plan, act.origin, act.waiter)
	ex.claim = act.claim
	ex.complete = func(r *orderResult, w *orderWritten) any {
		if r.Err != nil {
			e := *r.Err
			d := map[string]any{"order_id": o.OrderID}
			for k, v := range r.Err.Details {
				d[k] = v
			}
			e.Details = d
			return &e
		}
		ans := planned
		ans.ResultSource = r.ResultSource
		read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
		if e != nil {
			return e
		}
		res := venue.AmendResult(req, read)
		ans.Status, ans.FilledQty, ans.OrderStatus = string(res.Status), res.FilledQty, ""
		if read != nil {
			ans.OrderStatus = read.Status
		}
		ans.Fence()
		return &ans
	}
}

// unreadableOrder is the refusal of an amend whose order the venue listed
// with a side that is not one of Bybit's: its risk direction cannot be
// known, so nothing is sent.
func unreadableOrder() *messages.Error {
	return &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "the exchange listed this order with a side this server cannot read; nothing was sent",
		NextStep: "check the order with get_open_orders and try again later; cancel_order still works", Details: map[string]any{"reason": string(venue.FailMalformedResult)}}
}

// unreadablePosition is the refusal of a change whose position the venue
// listed with a side that is not one of Bybit's: which way the change
// moves risk cannot be known, so nothing is sent (D87).
func unreadablePosition() *messages.Error {
	return &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "the exchange listed this position with a side this server cannot read; nothing was sent",
		NextStep: "check the position with get_positions and try again later", Details: map[string]any{"reason": string(venue.FailMalformedResult)}}
}

// knownSide says side is one of Bybit's order and position sides.
func knownSide(side string) bool { return side == "Buy" || side == "Sell" }

// riskLimits are the limits of a risk-increasing change beyond the gate:
// the whole order's value, the symbol's leverage, the daily cap on the
// growth, and the rates.
func (u *userActor) riskLimits(p messages.Policy, cat messages.Category, symbol string, notional, growth decimal.Decimal, mk placeMarket) *messages.Error {
	if e := usdtOnly(mk.instrument); e != nil {
		return e
	}
	if notional.GreaterThan(p.MaxOrderNotionalUSDT) {
		return state.LimitExceeded("max_order_notional_usdt", p.MaxOrderNotionalUSDT.String(), "the order value at its new qty and price exceeds max_order_notional_usdt",
			"make the order smaller", map[string]any{"notional_usdt": notional.String()})
	}
	if cat == messages.CategoryLinear {
		if mk.position == nil || !mk.position.Leverage.IsPositive() {
			return state.LimitExceeded("max_leverage", p.MaxLeverage.String(), "the symbol's current leverage could not be read", "try again", map[string]any{"reason": "leverage_unknown"})
		}
		if mk.position.Leverage.GreaterThan(p.MaxLeverage) {
			return leverageAboveMax(p, mk.position, mk.instrument, symbol, "amend the order again")
		}
	}
	reserved := u.reserved()
	daily, perMinute, unconfirmed := u.state.Counters.Window(u.now(), u.env)
	used := daily.Add(reserved.NotionalUSDT)
	if used.Add(growth).GreaterThan(p.DailyNotionalCapUSDT) {
		return state.LimitExceeded("daily_notional_cap_usdt", p.DailyNotionalCapUSDT.String(), "the risk-increasing orders of the last 24 h would exceed daily_notional_cap_usdt",
			"wait until earlier orders leave the 24 h window", map[string]any{"used_usdt": used.String()})
	}
	return rateLimits(p, perMinute, unconfirmed, reserved)
}
