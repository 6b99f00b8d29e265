package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// Order ids the venue reuses (issue 18, decisions D101): a venue order id
// names one order for good. An order the venue shows (a push, a REST
// answer) under an order id the server already knows under another client
// order id is not applied: it settles no attempt, changes no cache row, is
// not journaled as a venue_update, and is journaled as a venue_anomaly of
// kind order_id_reused instead.

// maxKnownOrderIDs bounds each of the two tiers of the book: the orders
// with the server's shape of client order id ("gx-"), and all others. A
// flood of forged external orders cannot push the server's own out.
const maxKnownOrderIDs = 4096

// orderIDBook remembers which client order id each venue order id the
// user's venue actor applied belongs to: what this process saw since it
// started, at most maxKnownOrderIDs per tier, the oldest forgotten first.
// Safe for concurrent use (the venue actor's off-mailbox reads use it).
//
// It is not seeded from the journal: after a restart an order id is
// learnt again at its first sighting (the open orders read at connect
// come first), so an id reused across a restart for an order no longer
// shown is not caught here. Venue ids cannot repeat across restarts (the
// paper venue's durable sequence and per-start nonce, D109; Bybit's
// UUIDs), so this is a guard within a run (decisions D118).
type orderIDBook struct {
	mu     sync.Mutex
	own    knownIDs
	others knownIDs
}

// knownIDs is one tier of the book: order id to client order id, with
// the order ids in the order they were first seen.
type knownIDs struct {
	byID  map[string]string
	order []string
}

func newOrderIDBook() *orderIDBook {
	return &orderIDBook{own: knownIDs{byID: map[string]string{}}, others: knownIDs{byID: map[string]string{}}}
}

// admit reports whether an order the venue shows under orderID and
// clientOrderID may be applied: its order id is new, or known under the
// same client order id. An admitted order is remembered. An order
// without an order id is admitted and not remembered (there is nothing
// to tie). When it is refused, knownAs is the client order id the order
// id belongs to.
func (b *orderIDBook) admit(orderID, clientOrderID string) (knownAs string, ok bool) {
	if b == nil || orderID == "" {
		return "", true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if known, seen := b.own.byID[orderID]; seen {
		return known, known == clientOrderID
	}
	if known, seen := b.others.byID[orderID]; seen {
		return known, known == clientOrderID
	}
	tier := &b.others
	if isOwnShape(clientOrderID) {
		tier = &b.own
	}
	if len(tier.order) >= maxKnownOrderIDs {
		delete(tier.byID, tier.order[0])
		tier.order = tier.order[1:]
	}
	tier.byID[orderID] = clientOrderID
	tier.order = append(tier.order, orderID)
	return "", true
}

// isOwnShape reports whether a client order id has the server's shape.
func isOwnShape(clientOrderID string) bool {
	return len(clientOrderID) > 3 && clientOrderID[:3] == "gx-"
}

// reusedOrder is one order the venue showed under an order id the server
// knows under another client order id.
type reusedOrder struct {
	category messages.Category
	symbol   string
	orderID  string
	// knownAs is the client order id the order id belongs to; shownAs the
	// one the venue showed it under now. Both are exchange text until the
	// user actor finds them among its own attempts.
	knownAs, shownAs string
}

// orderIDsReused tells the user actor which orders the venue actor did not
// apply because their order id was reused, seen where source says; it
// journals them as venue_anomaly.
type orderIDsReused struct {
	source string
	orders []reusedOrder
}

// refused admits one order; when it is refused, it returns what the user
// actor journals (seen where source says), else nil.
func (b *orderIDBook) refused(source string, cat messages.Category, symbol, orderID, clientOrderID string) *orderIDsReused {
	knownAs, ok := b.admit(orderID, clientOrderID)
	if ok {
		return nil
	}
	return &orderIDsReused{source: source, orders: []reusedOrder{{category: cat, symbol: symbol, orderID: orderID, knownAs: knownAs, shownAs: clientOrderID}}}
}

// reusedOrderIDError answers a write whose order the venue showed under an
// order id that belongs to another order: the outcome is unknown, and the
// attempt stays open to be reconciled again.
func reusedOrderIDError(clientOrderID string) *messages.Error {
	return &messages.Error{Code: messages.CodeOutcomeUnknown,
		Message:  "the venue showed the order under an order id that belongs to another order, so it was not taken as this order's outcome; it may or may not exist",
		NextStep: "do not resend; check get_open_orders and get_order_history for the client order id in a little while",
		Details:  map[string]any{"client_order_id": clientOrderID, "reconnaissance": "order_id_reused", "outcome": string(venue.WriteUnknown)}}
}

// admitOrders returns the orders of list that may be applied (list itself
// when all may), and the ones refused for a reused order id.
func (b *orderIDBook) admitOrders(list []messages.Order) ([]messages.Order, []reusedOrder) {
	var refused []reusedOrder
	kept := list
	for i, o := range list {
		knownAs, ok := b.admit(o.OrderID, o.OrderLinkID)
		if ok {
			if refused != nil {
				kept = append(kept, o)
			}
			continue
		}
		if refused == nil {
			kept = append(make([]messages.Order, 0, len(list)-1), list[:i]...)
		}
		refused = append(refused, reusedOrder{category: o.Category, symbol: o.Symbol, orderID: o.OrderID, knownAs: knownAs, shownAs: o.OrderLinkID})
	}
	return kept, refused
}

// noteReused journals the orders the venue actor refused for a reused
// order id, within the anomaly budget. Only the server's own ids are
// written: a client order id among the user's attempts (open, or of the
// last 24 h), and an order id of the venue's shape; exchange text never is.
func (u *userActor) noteReused(ctx actor.Context, m *orderIDsReused) {
	for _, r := range m.orders {
		ev := messages.VenueAnomalyEvent{Kind: messages.AnomalyOrderIDReused, Source: m.source, Field: "client_order_id"}
		if u.state.OrderOrigin(r.knownAs) == messages.OriginSystem {
			ev.ClientOrderID = r.knownAs
		}
		if u.state.OrderOrigin(r.shownAs) == messages.OriginSystem {
			ev.ShownClientOrderID = r.shownAs
		}
		if messages.OrderIDRE.MatchString(r.orderID) {
			ev.OrderID = r.orderID
		}
		if messages.SymbolRE.MatchString(r.symbol) && (r.category == messages.CategoryLinear || r.category == messages.CategorySpot) {
			ev.Category, ev.Symbol = r.category, r.symbol
		}
		u.noteAnomaly(ctx, ev)
	}
}
