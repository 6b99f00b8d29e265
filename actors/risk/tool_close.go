package risk

import "github.com/guarded-exchange/guarded-exchange/messages"

// close_position: a reduce-only market order (Limit IOC at the worst
// price within slippage_pct) against the position, cut to its size,
// planned and executed exactly like place_order (tool_place.go,
// limits.go). It reduces risk: the kill switch lets it through and it
// counts against no notional limit.

// ToolClosePosition is close_position's tool name.
const ToolClosePosition = "close_position"

// closePositionHash is the hash a close_position's idempotency key is
// claimed with: that of the order it places.
func closePositionHash(c messages.ClosePositionArgs) string {
	return PlaceArgsHash(ToolClosePosition, closeOrder(c))
}

// validateClose checks a close_position's arguments alone: linear only,
// and a qty, when given, not negative.
func validateClose(c messages.ClosePositionArgs) *messages.Error {
	return firstError(checkSymbol(c.Symbol), checkCategory(c.Category), checkKey(c.IdempotencyKey),
		checkLinear(c.Category, "positions exist on linear only"), checkIf(c.Qty.IsNegative(), "qty", "must be a positive decimal string"))
}

// closeOrder is the reduce-only market order a close_position places,
// before the position gives it its side (and, without a qty, its qty).
func closeOrder(c messages.ClosePositionArgs) messages.PlaceOrderArgs {
	return messages.PlaceOrderArgs{Category: c.Category, Symbol: c.Symbol, OrderType: "Market", Qty: c.Qty, ReduceOnly: true,
		IdempotencyKey: c.IdempotencyKey, DryRun: c.DryRun}
}

// prepareClose derives the order from the position: the opposite side,
// and all of it unless a qty is given (a larger qty is cut by
// DecidePlace); then, for an approved run, the order as shown.
func prepareClose(in *Input) *messages.Error {
	a := closeOrder(in.Args.(messages.ClosePositionArgs))
	pos := in.Read.Market.Position
	if pos == nil || !pos.Size.IsPositive() {
		return &messages.Error{Code: messages.CodeNotFound, Message: "there is no open position on this symbol",
			NextStep: "check get_positions", Details: map[string]any{"reason": "position_not_found"}}
	}
	if !knownSide(pos.Side) {
		return unreadablePosition()
	}
	a.Side = "Sell"
	if pos.Side == "Sell" {
		a.Side = "Buy"
	}
	if !a.Qty.IsPositive() {
		a.Qty = pos.Size // all; a larger qty is cut by DecidePlace
	}
	in.Args = a
	return prepareOrder(in)
}

// ClosePosition is close_position's pure half: the parts above, registered once.
var ClosePosition = Register(&Tool{Name: ToolClosePosition, ArgParts: argsOf[*messages.ClosePositionCommand](validateClose, closePositionHash),
	RiskIncreasing: riskReducing, Needs: NeedMarket, Prepare: prepareClose, Decide: decideOrder, Shown: shownOrder})
