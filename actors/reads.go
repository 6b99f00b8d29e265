package actors

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// The reads a trading decision needs beyond the market (marketFetch,
// venuestream.go): one open order (cancel_order, amend_order) and the
// symbol's open orders (cancel_all_orders), by the venue actor, off its
// mailbox.

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
	market risk.Market
	err    *messages.Error
}

// openOrdersFetch asks the venue actor for the open orders of a symbol.
type openOrdersFetch struct {
	action   uint64
	category messages.Category
	symbol   string
}

// openOrdersFetched is the outcome of an openOrdersFetch.
type openOrdersFetched struct {
	action  uint64
	orders  []messages.Order
	hasMore bool
	err     *messages.Error
}

// fetchOpenOrders reads the symbol's open orders (one page), off the
// mailbox.
func (v *venueActor) fetchOpenOrders(ctx actor.Context, m *openOrdersFetch) {
	failed := func(err *messages.Error) any { return &openOrdersFetched{action: m.action, err: err} }
	v.readForUser(ctx, failed, func(c context.Context, s venue.Session) any {
		page, err := s.OpenOrders(c, venue.OrderQuery{Category: m.category, Symbol: m.symbol, Limit: 50})
		if err != nil {
			return failed(messages.AsError(err))
		}
		return &openOrdersFetched{action: m.action, orders: page.Items, hasMore: page.NextCursor != ""}
	})
}

// fetchOrder looks one open order up by its venue id, off the mailbox.
func (v *venueActor) fetchOrder(ctx actor.Context, m *orderFetch) {
	v.readForUser(ctx, func(err *messages.Error) any { return &orderFetched{action: m.action, err: err} }, func(c context.Context, s venue.Session) any {
		out := &orderFetched{action: m.action}
		if m.withMarket {
			r, _ := s.(marketReader)
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
	})
}

// readForUser runs read on the session, off the mailbox, and sends its
// answer to the user actor that asked. failed makes the answer of a read
// that cannot run or did not end: no session (the key's error), a
// timeout or a panic (offMailbox).
func (v *venueActor) readForUser(ctx actor.Context, failed func(*messages.Error) any, read func(c context.Context, s venue.Session) any) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	if v.session == nil {
		ctx.Send(userPID, failed(v.noSessionError()))
		return
	}
	s := v.session
	offMailbox(ctx, v.logger, nil, v.timeout, userPID, func(c context.Context) any { return read(c, s) }, failed)
}
