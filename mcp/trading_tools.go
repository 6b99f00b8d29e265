package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Trading tools (docs/tools.md), profile trade only. Each decodes its
// arguments here (decimals only as plain JSON strings: no numbers,
// exponents or signs), then sends one command through the backend, whose
// boundary checks the values once (the tool's Validate) and whose user
// actor runs the one action path: every other check, the idempotency
// table, the journal before and after the venue. Nothing here talks to
// the venue.
//
// Only tools whose every docs/tools.md "The action path" check is enforced in the user actor are
// registered: all seven trading tools of docs/tools.md.

// decimalPattern is a plain positive decimal: digits, an optional point
// and fraction; no sign, exponent or spaces.
var decimalPattern = regexp.MustCompile(`^[0-9]{1,20}(\.[0-9]{1,18})?$`)

const decimalReason = `must be a decimal JSON string such as "0.01" (no number, sign or exponent)`

// decimal reads a decimal field given as a JSON string.
func (a *args) decimal(name string, required bool) decimal.NullDecimal {
	s := a.str(name, required, decimalPattern, decimalReason)
	if a.err != nil || s == "" {
		return decimal.NullDecimal{}
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		a.fail(name, decimalReason)
		return decimal.NullDecimal{}
	}
	return decimal.NewNullDecimal(d)
}

// boolean reads an optional JSON boolean.
func (a *args) boolean(name string) bool {
	if a.err != nil {
		return false
	}
	v, ok := a.raw(name)
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		a.fail(name, "must be true or false")
		return false
	}
	return b
}

func (s *server) tradingTools() []*tool {
	return []*tool{
		{
			name:        "place_order",
			title:       "Place order",
			description: "Place a Limit or Market order; qty is rounded down to the step. Returns order_id and status, or why it was refused.",
			kind:        KindTrade,
			schema:      inputSchema[placeOrderArgs](),
			handle:      s.placeOrder,
		},
		{
			name:        "cancel_order",
			title:       "Cancel order",
			description: "Cancel one open order by order_id (allowed under the kill switch, unless it is reduce-only or conditional: that adds risk). Returns its status and origin.",
			kind:        KindTrade,
			schema:      inputSchema[orderRefArgs](),
			handle:      s.cancelOrder,
		},
		{
			name:        "amend_order",
			title:       "Amend order",
			description: "Change qty and/or price of one open order; more size or a worse price counts as added risk. Returns its status.",
			kind:        KindTrade,
			schema:      inputSchema[amendOrderArgs](),
			handle:      s.amendOrder,
		},
		{
			name:        "cancel_all_orders",
			title:       "Cancel all orders",
			description: "Cancel a symbol's open orders one by one (20 a call; has_more: call again); reduce-only ones are left (protective_left). Returns each status and origin.",
			kind:        KindTrade,
			schema:      inputSchema[symbolTradeArgs](),
			handle:      s.cancelAllOrders,
		},
		{
			name:        "close_position",
			title:       "Close position",
			description: "Close a linear position, all (no qty) or part, with a reduce-only order. Returns the order like place_order.",
			kind:        KindTrade,
			schema:      inputSchema[closePositionArgs](),
			handle:      s.closePosition,
		},
		{
			name:        "set_trading_stop",
			title:       "Set trading stop",
			description: "Set or move a linear position's take-profit and/or stop-loss. Returns set, or requested.",
			kind:        KindTrade,
			schema:      inputSchema[tradingStopArgs](),
			handle:      s.setTradingStop,
		},
		{
			name:        "set_leverage",
			title:       "Set leverage",
			description: "Set a linear symbol's leverage; raising it is checked against max_leverage. Returns set, unchanged or requested.",
			kind:        KindTrade,
			schema:      inputSchema[leverageArgs](),
			handle:      s.setLeverage,
		},
	}
}

// The trading tools' argument readers decode, and only decode (decisions
// D140): the JSON shape and types (a string, a boolean), a decimal's wire
// form (a JSON string of a plain decimal, which is how docs/tools.md
// spells every decimal), presence (a required field given; an optional
// one given as a value its typed argument cannot tell from absence) and
// unknown arguments. Every value rule (a symbol's shape, the allowed
// category, side and order type, an order id's and a key's shape,
// positive values, prices, linear only, one of two levels) is the
// tool's Validate in actors/risk, run once, where the command enters
// the backend (System.Submit), with the words the agent is told.

// decodeSetLeverage decodes set_leverage's arguments.
func decodeSetLeverage(a *args) (messages.SetLeverageArgs, *messages.Error) {
	args := messages.SetLeverageArgs{Symbol: a.text("symbol"), Category: a.categoryText()}
	args.Leverage = a.decimal("leverage", true).Decimal
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	return args, a.done()
}

// decodePlaceOrder decodes place_order's arguments.
func decodePlaceOrder(a *args) (messages.PlaceOrderArgs, *messages.Error) {
	args := messages.PlaceOrderArgs{Symbol: a.text("symbol"), Category: a.categoryText(), Side: a.text("side"), OrderType: a.text("order_type")}
	args.Qty = a.decimal("qty", true).Decimal
	args.Price = a.decimal("price", false)
	args.ReduceOnly = a.boolean("reduce_only")
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	return args, a.done()
}

// decodeCancelOrder decodes cancel_order's arguments.
func decodeCancelOrder(a *args) (messages.CancelOrderArgs, *messages.Error) {
	args := messages.CancelOrderArgs{Symbol: a.text("symbol"), Category: a.categoryText(), OrderID: a.text("order_id")}
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	return args, a.done()
}

// closeQtyReason refuses a close_position qty given as zero: its typed
// argument reads zero as "close all", so a given zero is refused here,
// with presence, rather than taken as its absence.
const closeQtyReason = "must be positive; leave it out to close all"

// decodeClosePosition decodes close_position's arguments.
func decodeClosePosition(a *args) (messages.ClosePositionArgs, *messages.Error) {
	args := messages.ClosePositionArgs{Symbol: a.text("symbol"), Category: a.categoryText()}
	qty := a.decimal("qty", false)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return args, err
	}
	if qty.Valid && qty.Decimal.IsZero() {
		return args, messages.InvalidParams("qty", closeQtyReason)
	}
	args.Qty = qty.Decimal
	return args, nil
}

// decodeTradingStop decodes set_trading_stop's arguments.
func decodeTradingStop(a *args) (messages.TradingStopArgs, *messages.Error) {
	args := messages.TradingStopArgs{Symbol: a.text("symbol"), Category: a.categoryText()}
	args.TakeProfit = a.decimal("take_profit", false)
	args.StopLoss = a.decimal("stop_loss", false)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	return args, a.done()
}

// decodeAmendOrder decodes amend_order's arguments.
func decodeAmendOrder(a *args) (messages.AmendOrderArgs, *messages.Error) {
	args := messages.AmendOrderArgs{Symbol: a.text("symbol"), Category: a.categoryText(), OrderID: a.text("order_id")}
	args.Qty = a.decimal("qty", false)
	args.Price = a.decimal("price", false)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	return args, a.done()
}

// decodeCancelAll decodes cancel_all_orders' arguments.
func decodeCancelAll(a *args) (messages.CancelAllArgs, *messages.Error) {
	args := messages.CancelAllArgs{Symbol: a.text("symbol"), Category: a.categoryText()}
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	return args, a.done()
}

func (s *server) setLeverage(ctx context.Context, c *call) (any, error) {
	args, err := decodeSetLeverage(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "set_leverage", args, &messages.SetLeverageCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.LeverageAnswer])
}

func (s *server) placeOrder(ctx context.Context, c *call) (any, error) {
	args, err := decodePlaceOrder(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "place_order", args, &messages.PlaceOrderCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.OrderAnswer])
}

func (s *server) cancelOrder(ctx context.Context, c *call) (any, error) {
	args, err := decodeCancelOrder(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "cancel_order", args, &messages.CancelOrderCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.CancelAnswer])
}

func (s *server) closePosition(ctx context.Context, c *call) (any, error) {
	args, err := decodeClosePosition(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "close_position", args, &messages.ClosePositionCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.OrderAnswer])
}

func (s *server) setTradingStop(ctx context.Context, c *call) (any, error) {
	args, err := decodeTradingStop(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "set_trading_stop", args, &messages.TradingStopCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.TradingStopAnswer])
}

func (s *server) amendOrder(ctx context.Context, c *call) (any, error) {
	args, err := decodeAmendOrder(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "amend_order", args, &messages.AmendOrderCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.AmendAnswer])
}

func (s *server) cancelAllOrders(ctx context.Context, c *call) (any, error) {
	args, err := decodeCancelAll(c.args)
	if err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "cancel_all_orders", args, &messages.CancelAllCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.CancelAllAnswer])
}

// answerOf passes on the user actor's answer to a trading command (or to
// the approval of a parked one), checking that it is of the type the tool
// returns.
func answerOf[T any](res any, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if p, ok := res.(*messages.ConfirmationPending); ok {
		// Parked for a human: the server's own plan, never the model's
		// words; a human decides outside the chat.
		next := "a human decides with `guarded-exchange confirm approve|reject " + p.ConfirmationID + "`; watch it with get_confirmation_status, withdraw it with cancel_confirmation"
		return pendingResult(Pending{Venue: p.Venue, ConfirmationID: p.ConfirmationID, ExpiresAt: p.ExpiresAt, ShownToUser: p.ShownToUser, ConfirmedBy: p.ConfirmedBy, NextStep: next}), nil
	}
	ans, ok := res.(T)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("unexpected answer %T", res))
	}
	return ans, nil
}

// text decodes a required string field: present, not null, a JSON
// string (its value is Validate's to check).
func (a *args) text(name string) string { return a.str(name, true, nil, "") }

// categoryText decodes the required category (spot or linear is
// Validate's rule).
func (a *args) categoryText() messages.Category { return messages.Category(a.text("category")) }

// idempotencyKey decodes the optional idempotency_key every trading tool
// takes. A key given as "" is refused here, with presence: the typed
// arguments read "" as no key, so it could not reach Validate, whose
// words it gets.
func (a *args) idempotencyKey() string {
	k := a.str("idempotency_key", false, nil, "")
	if _, given := a.raw("idempotency_key"); given && k == "" {
		a.fail("idempotency_key", messages.IdempotencyKeyReason)
	}
	return k
}
