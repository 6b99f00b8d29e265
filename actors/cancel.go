package actors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// cancel_order through the one action path. A cancel reduces risk: the
// kill switch lets it through and it reserves no notional; except the
// cancel of an order that protects a position (reduce-only or
// conditional, D73), which adds risk: the kill switch, the posture, the
// allowlist and the rate limits apply and it counts in the rate windows.
// The order is looked up first (open orders, by its id), so the decision
// knows what it cancels, the answer can say whether the server placed it
// (origin) and an unknown outcome can be settled by its client order id.

// cancelAsk is one cancel_order call with its structured origin.
type cancelAsk struct {
	ctx    context.Context
	args   messages.CancelOrderArgs
	origin messages.Origin
}

// cancelStep carries a cancel_order call between its steps.
type cancelStep struct {
	args messages.CancelOrderArgs
	hash string
}

// orderFetch asks the venue actor for one open order by its venue id.
type orderFetch struct {
	action   uint64
	category messages.Category
	symbol   string
	orderID  string
	// withMarket also reads what a decision on the order's new values
	// needs (amend_order): instrument, ticker, band, position.
	withMarket bool
}

// orderFetched is the outcome of an orderFetch: order is nil when the
// order is not open.
type orderFetched struct {
	action uint64
	order  *messages.Order
	market placeMarket
	err    *messages.Error
}

func validateCancel(a messages.CancelOrderArgs) *messages.Error {
	switch {
	case a.Category != messages.CategoryLinear && a.Category != messages.CategorySpot:
		return messages.InvalidParams("category", "must be spot or linear")
	case !messages.SymbolRE.MatchString(a.Symbol):
		return messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9")
	case !messages.OrderIDRE.MatchString(a.OrderID):
		return messages.InvalidParams("order_id", "must be the venue's order id (1-64 of A-Z, a-z, 0-9 and '-')")
	case a.IdempotencyKey != "" && !messages.IdempotencyKeyRE.MatchString(a.IdempotencyKey):
		return messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
	}
	return nil
}

func cancelArgsHash(a messages.CancelOrderArgs) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{"cancel_order", string(a.Category), a.Symbol, a.OrderID}, "|")))
	return hex.EncodeToString(sum[:])
}

func (u *userActor) cancelOrder(ctx actor.Context, m *cancelAsk, sender *actor.PID) {
	a := m.args
	if e := validateCancel(a); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	hash := cancelArgsHash(a)
	if !a.DryRun && u.repeat(ctx, "cancel_order", a.IdempotencyKey, hash, false, m.origin, sender) {
		return
	}
	if e := u.state.DecideAction(&messages.DecideActionRequest{Tool: "cancel_order", Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env); e != nil {
		u.refuseTool(ctx, "cancel_order", a.Category, a.Symbol, a.DryRun, e, m.origin, sender)
		return
	}
	act := u.begin(actionDecide, sender, m.origin, nil)
	act.cancel = &cancelStep{args: a, hash: hash}
	act.claim = &claim{key: a.IdempotencyKey, hash: hash, dryRun: a.DryRun}
	u.toVenue(ctx, &orderFetch{action: act.id, category: a.Category, symbol: a.Symbol, orderID: a.OrderID}, ctx.Self())
}

// onOrderFetched decides the cancel on the state as it is now.
func (u *userActor) onOrderFetched(ctx actor.Context, m *orderFetched) {
	act, ok := u.actions[m.action]
	if ok && act.amend != nil {
		u.onAmendFetched(ctx, act, m)
		return
	}
	if !ok || act.cancel == nil {
		return
	}
	delete(u.actions, act.id)
	a := act.cancel.args
	if m.err != nil {
		u.reply(ctx, act.waiter, m.err)
		return
	}
	if !a.DryRun && u.repeat(ctx, "cancel_order", a.IdempotencyKey, act.cancel.hash, false, act.origin, act.waiter) {
		return
	}
	// The gate again, now that the order is known: the state may have
	// changed while the venue answered, and cancelling an order that
	// protects a position adds risk (D73).
	risk := m.order != nil && protectiveOrder(m.order)
	var e *messages.Error
	if risk {
		e = u.decideLoosening("cancel_order", a.Category, a.Symbol)
	} else {
		e = u.state.DecideAction(&messages.DecideActionRequest{Tool: "cancel_order", Category: a.Category, Symbol: a.Symbol, RiskReducing: true}, u.venue, u.env)
	}
	if e == nil && m.order == nil {
		e = &messages.Error{Code: messages.CodeNotFound, Message: "no open order with this id on this instrument",
			NextStep: "list the open orders with get_open_orders; a filled or cancelled order cannot be cancelled"}
	}
	if e != nil {
		u.refuseTool(ctx, "cancel_order", a.Category, a.Symbol, a.DryRun, e, act.origin, act.waiter)
		return
	}
	o := *m.order
	planned := messages.CancelAnswer{Status: messages.AnswerPreview, OrderID: o.OrderID, Category: a.Category, Symbol: a.Symbol,
		Origin: u.state.OrderOrigin(o.OrderLinkID), OrderStatus: o.Status, FilledQty: venue.FilledOf(&o), IdempotencyKey: a.IdempotencyKey}
	if planned.Origin == messages.OriginSystem {
		planned.ClientOrderID = o.OrderLinkID
	}
	planned.Fence()
	if a.DryRun {
		u.reply(ctx, act.waiter, &planned)
		return
	}
	p := u.state.Effective(u.venue, u.env)
	by := confirmedBy(p, "cancel_order", decimal.Zero)
	if u.confirmGate(ctx, act, parkRequest{tool: "cancel_order", category: a.Category, symbol: a.Symbol, args: a, hash: act.cancel.hash,
		key: a.IdempotencyKey, shown: messages.ShownToUser{Cancel: &planned, RiskIncreasing: risk}, confirmedBy: by}) {
		return
	}
	plan := orderPlan{tool: "cancel_order", confirmedBy: by, category: a.Category, symbol: a.Symbol, settleLinkID: o.OrderLinkID, changes: &o, riskIncreasing: risk,
		cancel:         &messages.CancelOrderRequest{Category: a.Category, Symbol: a.Symbol, OrderID: o.OrderID},
		idempotencyKey: a.IdempotencyKey, argsSHA256: act.cancel.hash}
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
		ans.ActionClientID, ans.ResultSource = r.ClientOrderID, r.ResultSource
		read, e := readAfterWrite(w, o.OrderID, o.OrderLinkID, r.ClientOrderID)
		if e != nil {
			return e
		}
		res := venue.CancelResult(read)
		ans.Status, ans.FilledQty, ans.OrderStatus = string(res.Status), res.FilledQty, ""
		if read != nil {
			ans.OrderStatus = read.Status
		}
		ans.Fence()
		return &ans
	}
}

// fetchOrder looks one open order up by its venue id, off the mailbox.
func (v *venueActor) fetchOrder(ctx actor.Context, m *orderFetch) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	if v.session == nil {
		err := v.noSessionError()
		ctx.Send(userPID, &orderFetched{action: m.action, err: err})
		return
	}
	s := v.session
	r, _ := v.session.(marketReader)
	offMailbox(ctx, v.logger, nil, v.timeout, userPID, func(c context.Context) any {
		out := &orderFetched{action: m.action}
		if m.withMarket {
			if r == nil {
				out.err = messages.Internal(errors.New("venue actor: the session cannot read the market"))
				return out
			}
			mk, err := readMarket(c, r, m.category, m.symbol)
			if err != nil {
				out.err = messages.AsError(err)
				return out
			}
			out.market = mk
		}
		page, err := s.OpenOrders(c, venue.OrderQuery{Category: m.category, Symbol: m.symbol, OrderID: m.orderID})
		if err != nil {
			out.err = messages.AsError(err)
			return out
		}
		for i := range page.Items {
			if page.Items[i].OrderID == m.orderID && page.Items[i].Symbol == m.symbol && !venue.IsFinal(page.Items[i].Status) {
				o := page.Items[i]
				out.order = &o
			}
		}
		return out
	}, func(err *messages.Error) any { return &orderFetched{action: m.action, err: err} })
}
