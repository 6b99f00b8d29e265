package risk

import "github.com/guarded-exchange/guarded-exchange/messages"

// Orders that protect a position (D73). Cancelling one, or shrinking it,
// can only let a position lose more, so cancel_order and amend_order
// treat that as risk-increasing (like a stop-loss moved away from the
// price, D53), cancel_all_orders leaves such orders, and so does the
// dead-man switch.

// conditionalOrder says the order waits for a trigger or is one of the
// venue's conditional kinds: status Untriggered, a stopOrderType (Bybit's
// TP/SL, trailing and conditional stops; "" and "UNKNOWN" are plain
// orders), a trigger price, or close-on-trigger. This server never places
// one, so it is a human's or the venue's own order. Whether it limits a
// loss or opens a position cannot be told from the order alone, so it is
// treated as protective (fail closed).
func conditionalOrder(o *messages.Order) bool {
	switch {
	case o.Status == "Untriggered" || o.Status == "Triggered":
		return true
	case o.StopOrderType != "" && o.StopOrderType != "UNKNOWN":
		return true
	case o.TriggerPrice.IsPositive(), o.CloseOnTrigger:
		return true
	}
	return false
}

// protectiveOrder says the order protects a position: a conditional
// order or a reduce-only one (which can only lower a position).
func protectiveOrder(o *messages.Order) bool {
	return o.ReduceOnly || conditionalOrder(o)
}

// decideLoosening decides a change that takes protection away (the
// cancel of a protective order, a smaller reduce-only order, any amend of
// a conditional one) as a risk-increasing action, like a stop-loss moved
// away from the price (D53): the kill switch, the posture, the allowlist
// and the rate limits apply; the value limits do not (no exposure is
// added). A refusal that only the risk direction causes says that the
// order protects a position.
func decideLoosening(in *Input, cat messages.Category, symbol string) *messages.Error {
	e := in.gate(cat, symbol, true)
	if e == nil {
		_, perMinute, unconfirmed := in.State.Counters.Window(in.Now, in.Env)
		e = rateLimits(in.policy(), perMinute, unconfirmed, in.Reserved)
	}
	if e != nil && in.gate(cat, symbol, false) == nil {
		e = protectiveRefusal(e)
	}
	return e
}

// protectiveRefusal marks a refusal of a change to a protective order, so
// the agent learns why a cancel or an amend counted as adding risk.
func protectiveRefusal(e *messages.Error) *messages.Error {
	out := *e
	d := make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		d[k] = v
	}
	d["protective_order"] = true
	out.Details = d
	out.NextStep = "the order protects a position (reduce-only or conditional), so cancelling or shrinking it adds risk; " + e.NextStep
	return &out
}
