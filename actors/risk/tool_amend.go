package risk

import (
	"fmt"
	"slices"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// amend_order. An amend increases risk when
// the new size is larger or the new price worse (higher for a buy, lower
// for a sell); then the kill switch blocks it, and the allowlist,
// max_order_notional_usdt (on the whole order at its new values), the
// symbol's leverage, the rates and the daily cap (by the growth of the
// order's value) apply. An amend of a reduce-only order is cut to the
// position and reduces risk, unless it shrinks what the order covers;
// that, and any amend of a conditional order, loosens a protection and
// adds risk (D73): the kill switch, the posture, the allowlist and the
// rates apply. The instrument's rules apply to the new values.

// ToolAmendOrder is amend_order's tool name.
const ToolAmendOrder = "amend_order"

// amendOrderHash is the hash an amend_order's idempotency key is claimed
// with.
func amendOrderHash(a messages.AmendOrderArgs) string {
	return argsHash(ToolAmendOrder, string(a.Category), a.Symbol, a.OrderID, nullDecimal(a.Qty), nullDecimal(a.Price))
}

// shownAmend is the plan a confirmation of an amend shows.
func shownAmend(d *Decision) messages.ShownToUser {
	a := d.Planned.(*messages.AmendAnswer)
	return messages.ShownToUser{Amend: a, RiskIncreasing: d.Risk,
		Summary: fmt.Sprintf("Amend order %s on %s to qty %s at %s, value up to %s USDT (origin %s)", a.OrderID, onInstrument(a.Category, a.Symbol), a.Qty, a.Price, a.NotionalUSDT.StringFixed(2), a.Origin)}
}

// validateAmend checks an amend's arguments alone: a new qty, price or
// both, each positive.
func validateAmend(a messages.AmendOrderArgs) *messages.Error {
	return firstError(checkSymbol(a.Symbol), checkCategory(a.Category), checkOrderID(a.OrderID), checkKey(a.IdempotencyKey),
		checkOneOrBoth("qty", a.Qty, "price", a.Price, "must be a positive decimal string"))
}

// decideAmend decides the amend with the order and the market as the
// venue showed them.
func decideAmend(in *Input) Decision {
	a := in.Args.(messages.AmendOrderArgs)
	if in.Read.Order == nil {
		return refused(&messages.Error{Code: messages.CodeNotFound, Message: "no open order with this id on this instrument",
			NextStep: "list the open orders with get_open_orders; a filled or cancelled order cannot be amended"})
	}
	o, mk := *in.Read.Order, in.Read.Market
	if !slices.Contains(messages.Sides, o.Side) {
		// The risk direction follows from the side: one this server
		// cannot read decides nothing.
		return refused(unreadableOrder())
	}
	inst := mk.Instrument
	if inst == nil {
		return refused(ruleViolation("the instrument's rules could not be read", "try again", map[string]any{"rule": "status"}))
	}
	qty, price := o.Qty, o.Price
	if a.Qty.Valid {
		qty = a.Qty.Decimal
		if inst.QtyStep.IsPositive() {
			qty = qty.Div(inst.QtyStep).Floor().Mul(inst.QtyStep)
		}
	}
	if a.Price.Valid {
		price = a.Price.Decimal
		if inst.TickSize.IsPositive() && !price.Mod(inst.TickSize).IsZero() {
			lo, hi := roundToTick(price, inst.TickSize, false), roundToTick(price, inst.TickSize, true)
			return refused(ruleViolation("the price is not on the instrument's tick", "use one of the nearest valid prices",
				map[string]any{"rule": "tick_size", "tick_size": inst.TickSize.String(), "nearest_prices": []string{lo.String(), hi.String()}}))
		}
	}
	buy := o.Side == "Buy"
	// Two ways to add risk: a larger or worse order adds exposure; a
	// smaller protective order, or any change to a conditional one (whose
	// trigger cannot be seen to tighten), loosens a protection (D73).
	exposure, loosens := false, conditionalOrder(&o)
	if o.ReduceOnly {
		covers := o.Qty
		if pos := mk.Position; pos != nil && pos.Size.IsPositive() {
			qty, covers = decimal.Min(qty, pos.Size), decimal.Min(o.Qty, pos.Size)
		}
		loosens = loosens || qty.LessThan(covers)
	} else {
		exposure = qty.GreaterThan(o.Qty) || (buy && price.GreaterThan(o.Price)) || (!buy && price.LessThan(o.Price))
	}
	risk := exposure || loosens
	if !qty.IsPositive() || qty.LessThan(inst.MinOrderQty) {
		return refused(ruleViolation("the quantity is below the instrument's minimum", "order at least min_qty",
			map[string]any{"rule": "min_qty", "min_qty": inst.MinOrderQty.String(), "qty_step": inst.QtyStep.String()}))
	}
	if e := priceBand(price, buy, inst, mk.Band); e != nil {
		return refused(e)
	}
	notional := qty.Mul(sellPrice(price, buy, mk.Ticker))
	if inst.MinNotional.IsPositive() && qty.Mul(price).LessThan(inst.MinNotional) {
		return refused(ruleViolation("the order value is below the instrument's minimum", "make the order larger",
			map[string]any{"rule": "min_notional", "min_notional": inst.MinNotional.String()}))
	}
	var e *messages.Error
	if loosens && !exposure {
		e = decideLoosening(in, a.Category, a.Symbol)
	} else {
		e = in.gate(a.Category, a.Symbol, risk)
	}
	if e != nil {
		return refused(e)
	}
	p := in.policy()
	growth := decimal.Max(decimal.Zero, notional.Sub(o.Qty.Mul(o.Price)))
	switch {
	case exposure:
		if e := riskLimits(in, p, a.Category, a.Symbol, notional, growth, mk); e != nil {
			return refused(e)
		}
	case loosens:
		growth = decimal.Zero // no exposure added: nothing for the daily cap
	}
	planned := messages.AmendAnswer{Status: messages.AnswerPreview, OrderID: o.OrderID, Category: a.Category, Symbol: a.Symbol,
		Origin: in.State.OrderOrigin(o.OrderLinkID), RequestedQty: o.Qty, Qty: qty, Price: price, NotionalUSDT: notional,
		RiskIncreasing: risk, OrderStatus: o.Status, FilledQty: messages.FilledOf(&o), IdempotencyKey: a.IdempotencyKey}
	if a.Qty.Valid {
		planned.RequestedQty = a.Qty.Decimal
	}
	if planned.Origin == messages.OriginSystem {
		planned.ClientOrderID = o.OrderLinkID
	}
	planned.Fence()
	d := Decision{Planned: &planned, Risk: risk}
	req := messages.AmendOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID}
	if !qty.Equal(o.Qty) {
		req.Qty = decimal.NewNullDecimal(qty)
	}
	if !price.Equal(o.Price) {
		req.Price = decimal.NewNullDecimal(price)
	}
	if !req.Qty.Valid && !req.Price.Valid {
		same := planned
		same.Status, same.ResultSource = string(messages.ChangeAmended), messages.ResultSourceVenue
		d.Unchanged = &same
		return d
	}
	d.Plan = Plan{Tool: ToolAmendOrder, ConfirmedBy: ConfirmedBy(p, ToolAmendOrder, notional), Category: a.Category, Symbol: a.Symbol,
		SettleLinkID: o.OrderLinkID, Changes: &o, Amend: &req,
		Notional: growth, RiskIncreasing: risk, IdempotencyKey: a.IdempotencyKey, ArgsSHA256: in.Hash}
	return d
}

// unreadableOrder is the refusal of an amend whose order the venue listed
// with a side that is not one of Bybit's: its risk direction cannot be
// known, so nothing is sent.
func unreadableOrder() *messages.Error {
	return &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "the exchange listed this order with a side this server cannot read; nothing was sent",
		NextStep: "check the order with get_open_orders and try again later; cancel_order still works", Details: map[string]any{"reason": messages.ReasonMalformedResult}}
}

// unreadablePosition is the refusal of a change whose position the venue
// listed with a side that is not one of Bybit's: which way the change
// moves risk cannot be known, so nothing is sent (D87).
func unreadablePosition() *messages.Error {
	return &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "the exchange listed this position with a side this server cannot read; nothing was sent",
		NextStep: "check the position with get_positions and try again later", Details: map[string]any{"reason": messages.ReasonMalformedResult}}
}

// knownSide says side is one of Bybit's order and position sides.
func knownSide(side string) bool { return side == "Buy" || side == "Sell" }

// riskLimits are the limits of a risk-increasing change beyond the gate:
// the whole order's value, the symbol's leverage, the daily cap on the
// growth, and the rates.
func riskLimits(in *Input, p messages.Policy, cat messages.Category, symbol string, notional, growth decimal.Decimal, mk Market) *messages.Error {
	if e := usdtOnly(mk.Instrument); e != nil {
		return e
	}
	if notional.GreaterThan(p.MaxOrderNotionalUSDT) {
		return state.LimitExceeded("max_order_notional_usdt", p.MaxOrderNotionalUSDT.String(), "the order value at its new qty and price exceeds max_order_notional_usdt",
			"make the order smaller", map[string]any{"notional_usdt": notional.String()})
	}
	if cat == messages.CategoryLinear {
		if mk.Position == nil || !mk.Position.Leverage.IsPositive() {
			return state.LimitExceeded("max_leverage", p.MaxLeverage.String(), "the symbol's current leverage could not be read", "try again", map[string]any{"reason": "leverage_unknown"})
		}
		if mk.Position.Leverage.GreaterThan(p.MaxLeverage) {
			return leverageAboveMax(p, mk.Position, mk.Instrument, symbol, "amend the order again")
		}
	}
	reserved := in.Reserved
	daily, perMinute, unconfirmed := in.State.Counters.Window(in.Now, in.Env)
	used := daily.Add(reserved.NotionalUSDT)
	if used.Add(growth).GreaterThan(p.DailyNotionalCapUSDT) {
		return state.LimitExceeded("daily_notional_cap_usdt", p.DailyNotionalCapUSDT.String(), "the risk-increasing orders of the last 24 h would exceed daily_notional_cap_usdt",
			"wait until earlier orders leave the 24 h window", map[string]any{"used_usdt": used.String()})
	}
	return rateLimits(p, perMinute, unconfirmed, reserved)
}

// AmendOrder is amend_order's pure half: the parts above, registered once.
var AmendOrder = Register(&Tool{Name: ToolAmendOrder, ArgParts: argsOf[*messages.AmendOrderCommand](validateAmend, amendOrderHash),
	RiskIncreasing: riskReducing, Needs: NeedOrderAndMarket, Decide: decideAmend, Shown: shownAmend})
