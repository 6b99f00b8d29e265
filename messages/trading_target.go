package messages

// TradingTarget is what the arguments of every trading tool name,
// whatever the tool: the instrument, the idempotency key, whether the
// call is a dry run, and the order it changes (cancel_order and
// amend_order; "" for the others). The user actor's one driver reads a
// call through it (docs/architecture.md, "Trading tools: descriptors and
// one driver").
type TradingTarget struct {
	Category       Category
	Symbol         string
	IdempotencyKey string
	DryRun         bool
	OrderID        string
}

// Target is what the call names (TradingTarget).
func (a PlaceOrderArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: ""}
}

// Target is what the call names (TradingTarget).
func (a CancelOrderArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: a.OrderID}
}

// Target is what the call names (TradingTarget).
func (a SetLeverageArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: ""}
}

// Target is what the call names (TradingTarget).
func (a ClosePositionArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: ""}
}

// Target is what the call names (TradingTarget).
func (a TradingStopArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: ""}
}

// Target is what the call names (TradingTarget).
func (a AmendOrderArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: a.OrderID}
}

// Target is what the call names (TradingTarget).
func (a CancelAllArgs) Target() TradingTarget {
	return TradingTarget{Category: a.Category, Symbol: a.Symbol, IdempotencyKey: a.IdempotencyKey, DryRun: a.DryRun, OrderID: ""}
}

// Call is the command's arguments and its ClientUI.
func (c *PlaceOrderCommand) Call() (PlaceOrderArgs, bool) { return c.Args, c.ClientUI }

// Call is the command's arguments and its ClientUI.
func (c *CancelOrderCommand) Call() (CancelOrderArgs, bool) { return c.Args, c.ClientUI }

// Call is the command's arguments and its ClientUI.
func (c *SetLeverageCommand) Call() (SetLeverageArgs, bool) { return c.Args, c.ClientUI }

// Call is the command's arguments and its ClientUI.
func (c *ClosePositionCommand) Call() (ClosePositionArgs, bool) { return c.Args, c.ClientUI }

// Call is the command's arguments and its ClientUI.
func (c *TradingStopCommand) Call() (TradingStopArgs, bool) { return c.Args, c.ClientUI }

// Call is the command's arguments and its ClientUI.
func (c *AmendOrderCommand) Call() (AmendOrderArgs, bool) { return c.Args, c.ClientUI }

// Call is the command's arguments and its ClientUI.
func (c *CancelAllCommand) Call() (CancelAllArgs, bool) { return c.Args, c.ClientUI }
