package mcp

import (
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Input schemas are generated from the tagged argument structs below by
// github.com/google/jsonschema-go: a field's JSON name is the property, a
// field without omitempty is required (in field order), a jsonschema tag
// is its description, and every object refuses additional properties.
// The advertised schemas stay short: the handlers validate every argument
// (args.go) and an invalid_params answer names the field and the rule.
// TestInputSchemasMatchGolden keeps them equal to what they were when
// written by hand; TestEveryAdvertisedArgumentIsParsed ties them to the
// parsers.
//
// The generator infers a schema from a Go type and takes only a
// description from a tag, so what a type cannot say (an enum, a maximum,
// a pattern, a length bound) is written by hand once per argument type in
// argTypeSchemas. Decimals are plain JSON strings ("0.01"): their pattern
// is checked by the parser, not advertised.

// Argument types whose schema is written by hand in argTypeSchemas.
type (
	// categoryArg is a market category: spot or linear.
	categoryArg string
	// sideArg is an order side: Buy or Sell.
	sideArg string
	// orderTypeArg is an order type: Limit or Market.
	orderTypeArg string
	// intervalArg is a candle interval of messages.KlineIntervals.
	intervalArg string
	// confirmationIDArg is the confirmation_id of a pending answer.
	confirmationIDArg string
	// journalCursorArg is get_my_journal's next_cursor, at most maxCursorLen.
	journalCursorArg string
	// listLimitArg is the page size of the account lists (≤ listMaxLimit).
	listLimitArg int
	// orderbookLimitArg is the levels a side of get_orderbook (≤ orderbookMaxLimit).
	orderbookLimitArg int
	// klinesLimitArg is the candles of get_klines (≤ klinesMaxLimit).
	klinesLimitArg int
	// journalLimitArg is the records of get_my_journal (≤ journalMaxLimit).
	journalLimitArg int
	// timeoutSArg is wait_for_update's wait in seconds (≤ messages.MaxWaitForUpdate).
	timeoutSArg int
)

// argTypeSchemas are the hand-written schemas of the argument types above.
var argTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[categoryArg]():       {Enum: []any{string(messages.CategorySpot), string(messages.CategoryLinear)}},
	reflect.TypeFor[sideArg]():           {Enum: []any{"Buy", "Sell"}},
	reflect.TypeFor[orderTypeArg]():      {Enum: []any{"Limit", "Market"}},
	reflect.TypeFor[intervalArg]():       {Enum: toAny(messages.KlineIntervals)},
	reflect.TypeFor[confirmationIDArg](): {Type: "string", Pattern: messages.ConfirmationIDRE.String(), Description: "the confirmation_id of a pending answer"},
	reflect.TypeFor[journalCursorArg]():  {Type: "string", MaxLength: jsonschema.Ptr(maxCursorLen), Description: "next_cursor of the previous answer, unchanged"},
	reflect.TypeFor[listLimitArg]():      maxInteger(listMaxLimit),
	reflect.TypeFor[orderbookLimitArg](): maxInteger(orderbookMaxLimit),
	reflect.TypeFor[klinesLimitArg]():    maxInteger(klinesMaxLimit),
	reflect.TypeFor[journalLimitArg]():   maxInteger(journalMaxLimit),
	reflect.TypeFor[timeoutSArg]():       maxInteger(int(messages.MaxWaitForUpdate / time.Second)),
}

// maxInteger is an integer schema with a maximum. The default and the
// minimum are said by an invalid_params answer's reason, not here.
func maxInteger(max int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Maximum: jsonschema.Ptr(float64(max))}
}

// inputSchema generates the input schema of the argument struct T, as
// tools/list sends it. It is a plain JSON object (not a
// *jsonschema.Schema) so its bytes are the same at every listing; an
// object without properties still says "properties": {}, which some
// clients require. A type's schema is generated once per process and
// shared by every server built (serve builds the registry twice before
// its first answer, an HTTP server once per session): callers must not
// change it. Its JSON is made at the same time (schemaJSON).
func inputSchema[T any]() map[string]any {
	typ := reflect.TypeFor[T]()
	if m, ok := schemaCache.Load(typ); ok {
		return m.(map[string]any)
	}
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: argTypeSchemas})
	if err != nil {
		panic("mcp: input schema: " + err.Error())
	}
	var out map[string]any
	if err := json.Unmarshal(mustJSON(s), &out); err != nil {
		panic("mcp: input schema: " + err.Error())
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	m, loaded := schemaCache.LoadOrStore(typ, out)
	if !loaded {
		schemaBytes.Store(reflect.ValueOf(out).UnsafePointer(), json.RawMessage(mustJSON(out)))
	}
	return m.(map[string]any)
}

var (
	// schemaCache holds each argument type's schema (inputSchema).
	schemaCache sync.Map // reflect.Type → map[string]any
	// schemaBytes holds the JSON of each schema of schemaCache, by the
	// schema's map.
	schemaBytes sync.Map // unsafe.Pointer → json.RawMessage
)

// schemaJSON is what a tool advertises as its input schema: the JSON made
// once for a schema of inputSchema (the SDK then copies bytes at each
// tools/list instead of marshalling a map), the schema itself otherwise.
func schemaJSON(schema map[string]any) any {
	if b, ok := schemaBytes.Load(reflect.ValueOf(schema).UnsafePointer()); ok {
		return b
	}
	return schema
}

// The arguments of each tool, by the tools that take them.
type (
	// noArgs is the arguments of a tool that takes none.
	noArgs struct{}

	// marketArgs: get_ticker, get_instrument.
	marketArgs struct {
		Symbol   string      `json:"symbol"`
		Category categoryArg `json:"category"`
	}
	orderbookArgs struct {
		Symbol   string            `json:"symbol"`
		Category categoryArg       `json:"category"`
		Limit    orderbookLimitArg `json:"limit,omitempty"`
	}
	klinesArgs struct {
		Symbol    string         `json:"symbol"`
		Category  categoryArg    `json:"category"`
		Interval  intervalArg    `json:"interval"`
		Limit     klinesLimitArg `json:"limit,omitempty"`
		StartTime string         `json:"start_time,omitempty"`
		EndTime   string         `json:"end_time,omitempty"`
	}

	positionsArgs struct {
		Symbol string       `json:"symbol,omitempty"`
		Limit  listLimitArg `json:"limit,omitempty"`
		Cursor string       `json:"cursor,omitempty"`
	}
	openOrdersArgs struct {
		Category categoryArg  `json:"category"`
		Symbol   string       `json:"symbol,omitempty"`
		Limit    listLimitArg `json:"limit,omitempty"`
		Cursor   string       `json:"cursor,omitempty"`
	}
	// historyListArgs: get_order_history, get_trades.
	historyListArgs struct {
		Category  categoryArg  `json:"category"`
		Symbol    string       `json:"symbol,omitempty"`
		Limit     listLimitArg `json:"limit,omitempty"`
		Cursor    string       `json:"cursor,omitempty"`
		StartTime string       `json:"start_time,omitempty"`
		EndTime   string       `json:"end_time,omitempty"`
	}

	journalArgs struct {
		Limit  journalLimitArg  `json:"limit,omitempty"`
		Cursor journalCursorArg `json:"cursor,omitempty"`
	}

	// confirmationArgs: get_confirmation_status, cancel_confirmation.
	confirmationArgs struct {
		ConfirmationID confirmationIDArg `json:"confirmation_id"`
	}

	waitArgs struct {
		TimeoutS timeoutSArg `json:"timeout_s"`
		OrderID  string      `json:"order_id,omitempty"`
		Symbol   string      `json:"symbol,omitempty"`
	}

	// tradeArgs are the arguments every trading tool takes.
	tradeArgs struct {
		IdempotencyKey string `json:"idempotency_key,omitempty"`
		DryRun         bool   `json:"dry_run,omitempty"`
	}
	placeOrderArgs struct {
		Symbol     string       `json:"symbol"`
		Category   categoryArg  `json:"category"`
		Side       sideArg      `json:"side"`
		OrderType  orderTypeArg `json:"order_type"`
		Qty        string       `json:"qty"`
		Price      string       `json:"price,omitempty" jsonschema:"Limit only"`
		ReduceOnly bool         `json:"reduce_only,omitempty"`
		tradeArgs
	}
	// orderRefArgs: cancel_order.
	orderRefArgs struct {
		Symbol   string      `json:"symbol"`
		Category categoryArg `json:"category"`
		OrderID  string      `json:"order_id"`
		tradeArgs
	}
	amendOrderArgs struct {
		Symbol   string      `json:"symbol"`
		Category categoryArg `json:"category"`
		OrderID  string      `json:"order_id"`
		Qty      string      `json:"qty,omitempty"`
		Price    string      `json:"price,omitempty"`
		tradeArgs
	}
	// symbolTradeArgs: cancel_all_orders.
	symbolTradeArgs struct {
		Symbol   string      `json:"symbol"`
		Category categoryArg `json:"category"`
		tradeArgs
	}
	closePositionArgs struct {
		Symbol   string      `json:"symbol"`
		Category categoryArg `json:"category"`
		Qty      string      `json:"qty,omitempty"`
		tradeArgs
	}
	tradingStopArgs struct {
		Symbol     string      `json:"symbol"`
		Category   categoryArg `json:"category"`
		TakeProfit string      `json:"take_profit,omitempty"`
		StopLoss   string      `json:"stop_loss,omitempty"`
		tradeArgs
	}
	leverageArgs struct {
		Symbol   string      `json:"symbol"`
		Category categoryArg `json:"category"`
		Leverage string      `json:"leverage"`
		tradeArgs
	}
)
