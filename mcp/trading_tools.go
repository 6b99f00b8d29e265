package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Trading tools (SPEC §4, §8), profile trade only. Each parses its
// arguments strictly here (decimals only as plain JSON strings: no
// numbers, exponents or signs), then sends one command to the user actor,
// which runs the one action path: every check, the idempotency table, the
// journal before and after the venue. Nothing here talks to the venue.
//
// Only tools whose every SPEC §8 check is enforced in the user actor are
// registered: all seven trading tools of SPEC §4.

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

var (
	idempotencyKeySchema = map[string]any{"type": "string", "pattern": messages.IdempotencyKeyRE.String(),
		"description": "optional; the same key with the same arguments within 24 h returns the first answer (result_source replay) and sends nothing"}
	dryRunSchema = map[string]any{"type": "boolean", "default": false,
		"description": "preview: run every check and answer the server's plan; nothing is journaled as an attempt, sent, or counted"}
	decimalSchema = func(what string) map[string]any {
		return map[string]any{"type": "string", "pattern": decimalPattern.String(), "description": what + ", a decimal string"}
	}
)

const tradeDoc = " Every check of the policy runs on the server (kill switch, allowlist, limits, instrument rules); " +
	"a refusal names the limit and the allowed value. An unknown outcome is never resent: see the next_step."

func (s *server) tradingTools() []*tool {
	return []*tool{
		{
			name:  "place_order",
			title: "Place order",
			description: "Place a Limit or Market order. qty is rounded down to the instrument's step (answer: requested_qty and qty); " +
				"an off-tick price is refused with the two nearest valid prices. A Market order is sent as Limit IOC at the best " +
				"ask/bid moved by slippage_pct, and valued at that worst price. reduce_only (linear only) never increases a position " +
				"and goes through the kill switch." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category", "side", "order_type", "qty"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema,
				"side":       map[string]any{"type": "string", "enum": []any{"Buy", "Sell"}},
				"order_type": map[string]any{"type": "string", "enum": []any{"Limit", "Market"}},
				"qty":        decimalSchema("base quantity"), "price": decimalSchema("limit price; Limit only"),
				"reduce_only": map[string]any{"type": "boolean", "default": false}, "idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.placeOrder,
		},
		{
			name:  "cancel_order",
			title: "Cancel order",
			description: "Cancel one open order by its order_id. Goes through the kill switch. status is cancelled only when the " +
				"order shows it, else cancel_requested (check again) or filled; origin says whether this server placed it." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category", "order_id"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema,
				"order_id":        map[string]any{"type": "string", "pattern": messages.OrderIDRE.String(), "description": "the order_id of get_open_orders"},
				"idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.cancelOrder,
		},
		{
			name:  "amend_order",
			title: "Amend order",
			description: "Change the qty and/or price of one open order by its order_id. A larger size or a worse price " +
				"(higher for a buy, lower for a sell) is risk-increasing: the kill switch blocks it and the limits apply to the whole " +
				"order. status is amended only when the order shows the new values, else amend_requested (check again), filled or " +
				"order_closed." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category", "order_id"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema,
				"order_id": map[string]any{"type": "string", "pattern": messages.OrderIDRE.String(), "description": "the order_id of get_open_orders"},
				"qty":      decimalSchema("new quantity"), "price": decimalSchema("new limit price"),
				"idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.amendOrder,
		},
		{
			name:  "cancel_all_orders",
			title: "Cancel all orders",
			description: "Cancel the plain open orders of one symbol: the server reads them, then cancels each by its id " +
				"(at most 20 per call; has_more says to call again). Goes through the kill switch. Each row says its origin " +
				"(system: placed by this server; external: anything else); external_count counts the latter." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema, "idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.cancelAllOrders,
		},
		{
			name:  "close_position",
			title: "Close position",
			description: "Close a linear position fully (no qty) or partly: a reduce-only market order (Limit IOC at the worst price " +
				"within slippage_pct), cut to the position. Goes through the kill switch. Answers like place_order." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema, "qty": decimalSchema("how much to close; absent closes all"),
				"idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.closePosition,
		},
		{
			name:  "set_trading_stop",
			title: "Set trading stop",
			description: "Set or move the take-profit and/or stop-loss of a linear position (whole position). Goes through the " +
				"kill switch. Prices must be on the tick. status is set when the position shows them, else requested." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema,
				"take_profit": decimalSchema("take-profit price"), "stop_loss": decimalSchema("stop-loss price"),
				"idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.setTradingStop,
		},
		{
			name:  "set_leverage",
			title: "Set leverage",
			description: "Set a linear symbol's leverage (one-way mode). Raising it increases risk: the kill switch blocks it and " +
				"max_leverage applies; lowering it always goes through. status is set when the position shows it, unchanged when " +
				"it already was, else requested. Spot is invalid_params (linear_only)." + tradeDoc,
			kind: KindTrade,
			schema: objectSchema([]string{"symbol", "category", "leverage"}, map[string]any{
				"symbol": symbolSchema, "category": categorySchema, "leverage": decimalSchema("leverage, e.g. \"3\""),
				"idempotency_key": idempotencyKeySchema, "dry_run": dryRunSchema,
			}),
			handle: s.setLeverage,
		},
	}
}

func (s *server) setLeverage(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.SetLeverageArgs{Symbol: a.symbol(), Category: a.category()}
	lev := a.decimal("leverage", true)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return nil, err
	}
	args.Leverage = lev.Decimal
	return s.trade(ctx, c, "set_leverage", args, &messages.SetLeverageCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.LeverageAnswer])
}

func (s *server) placeOrder(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.PlaceOrderArgs{
		Symbol: a.symbol(), Category: a.category(), Side: a.enum("side", true, "Buy", "Sell"),
		OrderType: a.enum("order_type", true, "Limit", "Market"),
	}
	qty := a.decimal("qty", true)
	args.Price = a.decimal("price", false)
	args.ReduceOnly = a.boolean("reduce_only")
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return nil, err
	}
	args.Qty = qty.Decimal
	return s.trade(ctx, c, "place_order", args, &messages.PlaceOrderCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.OrderAnswer])
}

func (s *server) cancelOrder(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.CancelOrderArgs{Symbol: a.symbol(), Category: a.category()}
	args.OrderID = a.str("order_id", true, messages.OrderIDRE, "must be the order_id of get_open_orders")
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "cancel_order", args, &messages.CancelOrderCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.CancelAnswer])
}

func (s *server) closePosition(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.ClosePositionArgs{Symbol: a.symbol(), Category: a.category()}
	qty := a.decimal("qty", false)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return nil, err
	}
	if qty.Valid && !qty.Decimal.IsPositive() {
		return nil, messages.InvalidParams("qty", "must be positive; leave it out to close all")
	}
	args.Qty = qty.Decimal
	return s.trade(ctx, c, "close_position", args, &messages.ClosePositionCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.OrderAnswer])
}

func (s *server) setTradingStop(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.TradingStopArgs{Symbol: a.symbol(), Category: a.category()}
	args.TakeProfit = a.decimal("take_profit", false)
	args.StopLoss = a.decimal("stop_loss", false)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "set_trading_stop", args, &messages.TradingStopCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.TradingStopAnswer])
}

func (s *server) amendOrder(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.AmendOrderArgs{Symbol: a.symbol(), Category: a.category()}
	args.OrderID = a.str("order_id", true, messages.OrderIDRE, "must be the order_id of get_open_orders")
	args.Qty = a.decimal("qty", false)
	args.Price = a.decimal("price", false)
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
		return nil, err
	}
	return s.trade(ctx, c, "amend_order", args, &messages.AmendOrderCommand{User: c.principal.User, Args: args, ClientUI: c.canElicitForm()}, answerOf[*messages.AmendAnswer])
}

func (s *server) cancelAllOrders(ctx context.Context, c *call) (any, error) {
	a := c.args
	args := messages.CancelAllArgs{Symbol: a.symbol(), Category: a.category()}
	args.IdempotencyKey = a.idempotencyKey()
	args.DryRun = a.boolean("dry_run")
	if err := a.done(); err != nil {
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
		return pendingResult(Pending{Venue: p.Venue, ConfirmationID: p.ConfirmationID, ExpiresAt: p.ExpiresAt, ShownToUser: p.ShownToUser, NextStep: next}), nil
	}
	ans, ok := res.(T)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("unexpected answer %T", res))
	}
	return ans, nil
}

// idempotencyKey reads the optional idempotency_key every trading tool takes.
func (a *args) idempotencyKey() string {
	return a.str("idempotency_key", false, messages.IdempotencyKeyRE, "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
}
