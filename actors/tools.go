package actors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Trading tools as descriptors (docs/architecture.md "Adding a trading
// tool"). Each trading tool is one toolDescriptor, registered once in
// tradingTools; the driver (driver.go) runs every tool from its
// descriptor, and every place that needs to know about a tool (the
// command dispatch, the ask bound, the send ticket, the hold during a
// key re-check, an approved run, a replayed answer) looks it up here.
// A descriptor's pure parts (validate, hash, decide) take what they need
// as parameters: no actor context, journal or venue.

// readNeed is what a tool's decision needs the venue actor to read first.
type readNeed uint8

const (
	// needMarket: the instrument, ticker, price band and position
	// (marketFetch).
	needMarket readNeed = iota + 1
	// needOrder: one open order by its venue id (orderFetch).
	needOrder
	// needOrderAndMarket: one open order and the market around it
	// (orderFetch with withMarket).
	needOrderAndMarket
	// needOpenOrders: the symbol's open orders (openOrdersFetch).
	needOpenOrders
)

// callBase is what every trading call has, whatever its tool, and the
// order it names (cancel_order, amend_order: what needOrder reads).
type callBase struct {
	category       messages.Category
	symbol         string
	idempotencyKey string
	dryRun         bool
	orderID        string
}

// toolRead is what the venue actor read for a decision.
type toolRead struct {
	market placeMarket
	// order is the open order read (nil: not open); orders are the
	// symbol's open orders, hasMore when the venue has more.
	order   *messages.Order
	orders  []messages.Order
	hasMore bool
}

// decideIn is everything a tool's decision sees: the call, the user's
// state as it is now, and what the venue read for it.
type decideIn struct {
	tool  string
	args  any
	hash  string
	state *state.User
	venue messages.VenueLevel
	env   string
	now   time.Time
	// reserved is what the actions in flight hold against the limits.
	reserved Reservation
	// shown is the plan a human approved, for an approved run (nil
	// otherwise).
	shown *messages.ShownToUser
	// approved says the call is an approved confirmation's run.
	approved bool
	read     toolRead
}

// policy is the user's effective policy in this venue and environment.
func (in *decideIn) policy() messages.Policy { return in.state.Effective(in.venue, in.env) }

// gate is DecideAction for the call's tool on its instrument.
func (in *decideIn) gate(cat messages.Category, symbol string, risk bool) *messages.Error {
	return in.state.DecideAction(&messages.DecideActionRequest{Tool: in.tool, Category: cat, Symbol: symbol, RiskIncreasing: risk, RiskReducing: !risk}, in.venue, in.env)
}

// toolDecision is a decided call: a refusal, or the planned answer and
// the write that carries it out.
type toolDecision struct {
	// refusal is the call's refusal (journaled as order_refused, except
	// for a dry run).
	refusal *messages.Error
	// planned is the preview answer: a dry run's answer and the plan a
	// confirmation shows.
	planned any
	// unchanged, when set, is the answer of a call that changes nothing:
	// nothing is sent and nothing journaled.
	unchanged any
	// risk says the call adds risk (shown with the plan).
	risk bool
	// plan is the write to send; its confirmedBy names the setting that
	// wants a human to confirm it ("" when none does).
	plan orderPlan
	// step is a place_order's leverage step (D111); market the market
	// the order was planned on, decided again after the step.
	step   *messages.LeverageChange
	market placeMarket
	// args is the call as decided (close_position: the order it places).
	args any
	// orders are the orders cancel_all_orders cancels; malformed counts
	// the open orders left out for an id of the wrong shape (logged).
	orders    []messages.Order
	malformed int
	// netHash is the safety net's hash the write is remembered under
	// (set by the driver, D55).
	netHash string
}

// refused is the decision of a refused call.
func refused(e *messages.Error) toolDecision { return toolDecision{refusal: e} }

// toolDescriptor is one trading tool: every part the driver and the rest
// of the user actor need, registered once (tradingTools). A descriptor
// that lacks a part fails TestEveryToolDescriptorIsComplete.
//
// A descriptor is written in a few lines: its parts typed on the tool's
// arguments come from argsOf, its other parts are named functions next
// to the tool's other pure parts, and the parts most tools share
// (plannedHash, prepare, bound) may be left out: register fills in their
// defaults. Every other part is required.
type toolDescriptor struct {
	name string
	// argParts are the parts typed on the tool's arguments (argsOf).
	argParts
	// riskIncreasing is the call's risk direction before the venue is
	// read: the first gate decides with it, and a risk-increasing call
	// is deduplicated without a key (the 30 s safety net).
	riskIncreasing func(args any) bool
	// plannedHash is the safety net's hash of the order a call plans
	// with the instrument's qty step ("" when the safety net does not
	// apply: D55). Optional: noPlannedHash when left out.
	plannedHash func(args any, qtyStep decimal.Decimal) string
	// prepare makes the call ready to decide from what the venue read
	// (close_position: the side and qty from the position; an approved
	// order: as the human was shown), before the safety net compares it.
	// Optional: keepArgs when left out.
	prepare func(in *decideIn) *messages.Error
	// needs is what the venue actor reads before the decision.
	needs readNeed
	// decide is the pure decision on the state as it is and what the
	// venue read.
	decide func(in *decideIn) toolDecision
	// shown is the plan a confirmation shows for a decision.
	shown func(d *toolDecision) messages.ShownToUser
	// carryOut carries a decision out (the execution half of the action
	// path, through execute): one write, a write after a leverage step,
	// or a chain.
	carryOut func(u *userActor, ctx actor.Context, act *action, d *toolDecision)
	// complete turns a write's outcome into the call's answer (for
	// cancel_all_orders, the status of one cancel's row).
	complete func(d *toolDecision, r *orderResult, w *orderWritten) any
	// stored decodes a journaled answer of the tool, fenced.
	stored func(raw json.RawMessage, replay bool) any
	// bound is how long the call's steps may take (askbound.go).
	// Optional: tradeBound (one write) when left out.
	bound func(b stepBounds) time.Duration
	// heldOnRecheck says the call waits for a key re-check in flight
	// (the check at start may block trading, D63).
	heldOnRecheck bool
}

// tradingTools is the registry: one descriptor per trading tool of
// messages.TradingTools.
var tradingTools = map[string]*toolDescriptor{}

// argParts are a tool's parts typed on its arguments, adapted to the
// descriptor's untyped arguments (argsOf builds them).
type argParts struct {
	// command returns the call's arguments and ClientUI when cmd is this
	// tool's command.
	command func(cmd messages.Command) (args any, clientUI bool, ok bool)
	// decodeArgs decodes the arguments a confirmation parked.
	decodeArgs func(raw json.RawMessage) (any, error)
	// base is what every call has (instrument, key, dry run).
	base func(args any) callBase
	// validate checks the arguments alone (invalid_params, not
	// journaled); the driver calls it once, where the call enters.
	validate func(args any) *messages.Error
	// hash is the arguments' hash the idempotency key is claimed with.
	hash func(args any) string
}

// tradingArgs is a trading tool's argument type: it names its target
// (messages.TradingTarget).
type tradingArgs interface {
	Target() messages.TradingTarget
}

// tradingCommand is a trading tool's command, whose arguments are of
// type A.
type tradingCommand[A tradingArgs] interface {
	messages.Command
	Call() (A, bool)
}

// argsOf builds a tool's argParts from its command type C (its
// arguments' type A follows from validate and hash, which are written on
// A), so that no tool writes the same adapters again.
func argsOf[C tradingCommand[A], A tradingArgs](validate func(A) *messages.Error, hash func(A) string) argParts {
	return argParts{
		command: func(cmd messages.Command) (any, bool, bool) {
			c, ok := cmd.(C)
			if !ok {
				return nil, false, false
			}
			args, clientUI := c.Call()
			return args, clientUI, true
		},
		decodeArgs: decodeArgsAs[A],
		base: func(a any) callBase {
			t := a.(A).Target()
			return callBase{category: t.Category, symbol: t.Symbol, idempotencyKey: t.IdempotencyKey, dryRun: t.DryRun, orderID: t.OrderID}
		},
		validate: typed(validate),
		hash:     typed(hash),
	}
}

// register adds d to the registry once, with the defaults of the
// optional parts it leaves out (plannedHash, prepare, bound); the files
// of the tools call it from init. A required part left out stays nil,
// and TestEveryToolDescriptorIsComplete names it.
func register(d *toolDescriptor) *toolDescriptor {
	if _, dup := tradingTools[d.name]; dup {
		panic("actors: trading tool registered twice: " + d.name)
	}
	if d.plannedHash == nil {
		d.plannedHash = noPlannedHash
	}
	if d.prepare == nil {
		d.prepare = keepArgs
	}
	if d.bound == nil {
		d.bound = tradeBound
	}
	tradingTools[d.name] = d
	return d
}

// toolOf is the descriptor of a tool name (nil when it is no trading tool).
func toolOf(name string) *toolDescriptor { return tradingTools[name] }

// toolOfCommand is the trading tool whose command cmd is, with the call's
// arguments and ClientUI; nil when cmd is no trading tool's command.
func toolOfCommand(cmd messages.Command) (*toolDescriptor, any, bool) {
	for _, d := range tradingTools {
		if args, clientUI, ok := d.command(cmd); ok {
			return d, args, clientUI
		}
	}
	return nil, nil, false
}

// tradingAsk is one trading tool's call with its structured origin: what
// the driver runs (tradingCommand makes it from the user's command, an
// approved confirmation from its parked arguments).
type tradingAsk struct {
	ctx    context.Context
	tool   *toolDescriptor
	args   any
	origin messages.Origin
}

// decodeArgsAs decodes parked arguments of type A.
func decodeArgsAs[A any](raw json.RawMessage) (any, error) {
	var a A
	err := json.Unmarshal(raw, &a)
	return a, err
}

// tradeBound is the bound of a tool that sends one write.
func tradeBound(b stepBounds) time.Duration { return b.trade(1) }

// nullDecimal is a NullDecimal as text for a hash ("" when not given).
func nullDecimal(n decimal.NullDecimal) string {
	if !n.Valid {
		return ""
	}
	return n.Decimal.String()
}

// noPlannedHash is plannedHash for tools the safety net does not cover.
func noPlannedHash(any, decimal.Decimal) string { return "" }

// riskReducing is riskIncreasing for tools whose first gate reduces risk
// (the venue's read decides whether the call adds risk).
func riskReducing(any) bool { return false }

// The checks of the arguments alone, shared by the tools' validate
// (invalid_params, not journaled, never echoing a value). Each returns
// nil when the field is good; firstError keeps the first failure, in the
// order the tool lists its fields.

// firstError is the first non-nil error of errs.
func firstError(errs ...*messages.Error) *messages.Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// checkCategory: spot or linear.
func checkCategory(c messages.Category) *messages.Error {
	if c != messages.CategoryLinear && c != messages.CategorySpot {
		return messages.InvalidParams("category", "must be spot or linear")
	}
	return nil
}

// checkLinear: linear only (spot has no positions or leverage); what
// says why.
func checkLinear(c messages.Category, what string) *messages.Error {
	if c == messages.CategorySpot {
		e := messages.InvalidParams("category", what)
		e.Details["reason"] = "linear_only"
		return e
	}
	return checkCategory(c)
}

// checkSymbol: a symbol's shape.
func checkSymbol(s string) *messages.Error {
	if !messages.SymbolRE.MatchString(s) {
		return messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9")
	}
	return nil
}

// checkOrderID: the venue's order id.
func checkOrderID(id string) *messages.Error {
	if !messages.OrderIDRE.MatchString(id) {
		return messages.InvalidParams("order_id", "must be the venue's order id (1-64 of A-Z, a-z, 0-9 and '-')")
	}
	return nil
}

// checkKey: an idempotency key, when given.
func checkKey(k string) *messages.Error {
	if k != "" && !messages.IdempotencyKeyRE.MatchString(k) {
		return messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
	}
	return nil
}

// checkOneOrBoth: at least one of two optional values is given (the
// first field is named when neither is), and each one given is positive
// (positive is the reason when it is not).
func checkOneOrBoth(first string, a decimal.NullDecimal, second string, b decimal.NullDecimal, positive string) *messages.Error {
	return firstError(checkIf(!a.Valid && !b.Valid, first, "give "+first+", "+second+" or both"),
		checkIf(a.Valid && !a.Decimal.IsPositive(), first, positive),
		checkIf(b.Valid && !b.Decimal.IsPositive(), second, positive))
}

// checkIf is an invalid_params of field when bad holds.
func checkIf(bad bool, field, reason string) *messages.Error {
	if bad {
		return messages.InvalidParams(field, reason)
	}
	return nil
}

// Typed parts: a tool's functions are written on its own argument,
// command and answer types; these adapt them to the descriptor's.

// typed adapts f, written on the tool's argument type A, to the
// descriptor's untyped arguments.
func typed[A, R any](f func(A) R) func(any) R {
	return func(args any) R { return f(args.(A)) }
}

// storedAs is a descriptor's stored for answers of type T (source is its
// result source field).
func storedAs[T any, P interface {
	*T
	messages.Fencer
}](source func(P) *string) func(json.RawMessage, bool) any {
	return func(raw json.RawMessage, replay bool) any { return decodeStored(raw, replay, source) }
}

// onInstrument names an instrument in a plan's summary.
func onInstrument(cat messages.Category, symbol string) string {
	return symbol + " (" + string(cat) + ")"
}

// argsHash is the idempotency fingerprint of a call: the SHA-256 of its
// tool name and fields, joined with "|".
func argsHash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return hex.EncodeToString(sum[:])
}

// completePositionWrite is the complete of a position write
// (the leverage, a take-profit or stop-loss): the planned answer, of type T, with
// the outcome's result source and status (set writes them), or the
// outcome's error.
func completePositionWrite[T any](set func(ans *T, source, status string)) func(*toolDecision, *orderResult, *orderWritten) any {
	return func(d *toolDecision, r *orderResult, w *orderWritten) any {
		if r.Err != nil {
			return r.Err
		}
		ans := *d.planned.(*T)
		set(&ans, r.ResultSource, positionWriteStatus(w))
		return &ans
	}
}

// positionWriteStatus is the answer's status of a position write
// (the leverage, a take-profit or stop-loss): "unchanged" when the venue said
// nothing changed, "set" once the position shows it, else "requested"
// (accepted is not applied).
func positionWriteStatus(w *orderWritten) string {
	switch {
	case w.writeAck != nil && !w.writeAck.Modified:
		return "unchanged"
	case w.positionShows:
		return "set"
	}
	return "requested"
}
