package risk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// Trading tools as descriptors (docs/architecture.md "Trading tools:
// descriptors and one driver"). Each trading tool is one Tool, registered
// once (Register, from the var at the end of its tool_<name>.go): the
// pure half of the tool. Its parts take what they need as parameters: no
// actor context, journal or venue. Package actors pairs each with its
// carry-out half and runs them all through one driver.

// Tool is the pure half of one trading tool: every part a call needs
// before anything is written, registered once. A tool that lacks a part
// fails TestEveryToolIsComplete (and actors' completeness test, which
// checks both halves).
//
// A tool is written in a few lines: its parts typed on the tool's
// arguments come from argsOf, its other parts are named functions next
// to them, and the parts most tools share (PlannedHash, Prepare) may be
// left out: Register fills in their defaults. Every other part is
// required.
type Tool struct {
	Name string
	// ArgParts are the parts typed on the tool's arguments (argsOf).
	ArgParts
	// RiskIncreasing is the call's risk direction before the venue is
	// read: the first gate decides with it, and a risk-increasing call
	// is deduplicated without a key (the 30 s safety net).
	RiskIncreasing func(args any) bool
	// PlannedHash is the safety net's hash of the order a call plans
	// with the instrument's qty step ("" when the safety net does not
	// apply: D55). Optional: noPlannedHash when left out.
	PlannedHash func(args any, qtyStep decimal.Decimal) string
	// Prepare makes the call ready to decide from what the venue read
	// (close_position: the side and qty from the position; an approved
	// order: as the human was shown), before the safety net compares it.
	// Optional: keepArgs when left out.
	Prepare func(in *Input) *messages.Error
	// Needs is what the venue actor reads before the decision.
	Needs Need
	// Decide is the pure decision on the state as it is and what the
	// venue read.
	Decide func(in *Input) Decision
	// Shown is the plan a confirmation shows for a decision.
	Shown func(d *Decision) messages.ShownToUser
}

// tools is the registry: one Tool per trading tool of
// messages.TradingTools.
var tools = map[string]*Tool{}

// Register adds t to the registry once, with the defaults of the optional
// parts it leaves out (PlannedHash, Prepare); the files of the tools call
// it from init. A required part left out stays nil, and
// TestEveryToolIsComplete names it.
func Register(t *Tool) *Tool {
	if _, dup := tools[t.Name]; dup {
		panic("risk: trading tool registered twice: " + t.Name)
	}
	if t.PlannedHash == nil {
		t.PlannedHash = noPlannedHash
	}
	if t.Prepare == nil {
		t.Prepare = keepArgs
	}
	tools[t.Name] = t
	return t
}

// Of is the Tool of a tool name (nil when it is no trading tool).
func Of(name string) *Tool { return tools[name] }

// OfCommand is the trading tool whose command cmd is, with the call's
// arguments and ClientUI; nil when cmd is no trading tool's command.
func OfCommand(cmd messages.Command) (*Tool, any, bool) {
	for _, t := range tools {
		if args, clientUI, ok := t.Command(cmd); ok {
			return t, args, clientUI
		}
	}
	return nil, nil, false
}

// Need is what a tool's decision needs the venue actor to read first.
type Need uint8

const (
	// NeedMarket: the instrument, ticker, price band and position
	// (marketFetch).
	NeedMarket Need = iota + 1
	// NeedOrder: one open order by its venue id (orderFetch).
	NeedOrder
	// NeedOrderAndMarket: one open order and the market around it
	// (orderFetch with withMarket).
	NeedOrderAndMarket
	// NeedOpenOrders: the symbol's open orders (openOrdersFetch).
	NeedOpenOrders
)

// CallBase is what every trading call has, whatever its tool, and the
// order it names (cancel_order, amend_order: what NeedOrder reads).
type CallBase struct {
	Category       messages.Category
	Symbol         string
	IdempotencyKey string
	DryRun         bool
	OrderID        string
}

// VenueRead is what the venue actor read for a decision.
type VenueRead struct {
	Market Market
	// Order is the open order read (nil: not open); Orders are the
	// symbol's open orders, HasMore when the venue has more.
	Order   *messages.Order
	Orders  []messages.Order
	HasMore bool
}

// Input is everything a tool's decision sees: the call, the user's
// state as it is now, and what the venue read for it.
type Input struct {
	Tool  string
	Args  any
	Hash  string
	State *state.User
	Venue messages.VenueLevel
	Env   string
	Now   time.Time
	// Reserved is what the actions in flight hold against the limits.
	Reserved Reservation
	// Shown is the plan a human approved, for an approved run (nil
	// otherwise).
	Shown *messages.ShownToUser
	// Approved says the call is an approved confirmation's run.
	Approved bool
	Read     VenueRead
}

// policy is the user's effective policy in this venue and environment.
func (in *Input) policy() messages.Policy { return in.State.Effective(in.Venue, in.Env) }

// gate is the risk gate for the call's tool on its instrument.
func (in *Input) gate(cat messages.Category, symbol string, risk bool) *messages.Error {
	return gateOn(in.State, in.Venue, in.Env, in.Tool, cat, symbol, risk)
}

// Gate is a call's first risk gate, before anything is read from the
// venue: the kill switch, the profile, arming, the key and the allowlist
// on the user's state (state.User.DecideAction), in the risk direction
// the tool knows from its arguments alone (RiskIncreasing). A decision
// gates again once the venue showed which way the call moves risk.
func (t *Tool) Gate(s *state.User, venue messages.VenueLevel, env string, args any) *messages.Error {
	b := t.Base(args)
	return gateOn(s, venue, env, t.Name, b.Category, b.Symbol, t.RiskIncreasing(args))
}

// gateOn is the risk gate: DecideAction for tool on an instrument, adding
// risk or reducing it.
func gateOn(s *state.User, venue messages.VenueLevel, env, tool string, cat messages.Category, symbol string, increasing bool) *messages.Error {
	return s.DecideAction(&messages.DecideActionRequest{Tool: tool, Category: cat, Symbol: symbol, RiskIncreasing: increasing, RiskReducing: !increasing}, venue, env)
}

// Decision is a decided call: a refusal, or the planned answer and
// the write that carries it out.
type Decision struct {
	// Refusal is the call's refusal (journaled as order_refused, except
	// for a dry run).
	Refusal *messages.Error
	// Planned is the preview answer: a dry run's answer and the plan a
	// confirmation shows.
	Planned any
	// Unchanged, when set, is the answer of a call that changes nothing:
	// nothing is sent and nothing journaled.
	Unchanged any
	// Risk says the call adds risk (shown with the plan).
	Risk bool
	// Plan is the write to send; its ConfirmedBy names the setting that
	// wants a human to confirm it ("" when none does).
	Plan Plan
	// Step is a place_order's leverage step (D111); Market the market
	// the order was planned on, decided again after the step.
	Step   *messages.LeverageChange
	Market Market
	// Args is the call as decided (close_position: the order it places).
	Args any
	// Orders are the orders cancel_all_orders cancels; Malformed counts
	// the open orders left out for an id of the wrong shape (logged).
	Orders    []messages.Order
	Malformed int
	// NetHash is the safety net's hash the write is remembered under
	// (set by the driver, D55).
	NetHash string
}

// refused is the decision of a refused call.
func refused(e *messages.Error) Decision { return Decision{Refusal: e} }

// ArgParts are a tool's parts typed on its arguments, adapted to the
// descriptor's untyped arguments (argsOf builds them).
type ArgParts struct {
	// Command returns the call's arguments and ClientUI when cmd is this
	// tool's command.
	Command func(cmd messages.Command) (args any, clientUI bool, ok bool)
	// DecodeArgs decodes the arguments a confirmation parked.
	DecodeArgs func(raw json.RawMessage) (any, error)
	// Base is what every call has (instrument, key, dry run).
	Base func(args any) CallBase
	// Validate checks the arguments alone (invalid_params, not
	// journaled); System.Submit calls it once, where the call enters
	// (D139).
	Validate func(args any) *messages.Error
	// Hash is the arguments' hash the idempotency key is claimed with.
	Hash func(args any) string
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

// argsOf builds a tool's ArgParts from its command type C (its
// arguments' type A follows from validate and hash, which are written on
// A), so that no tool writes the same adapters again.
func argsOf[C tradingCommand[A], A tradingArgs](validate func(A) *messages.Error, hash func(A) string) ArgParts {
	return ArgParts{
		Command: func(cmd messages.Command) (any, bool, bool) {
			c, ok := cmd.(C)
			if !ok {
				return nil, false, false
			}
			args, clientUI := c.Call()
			return args, clientUI, true
		},
		DecodeArgs: decodeArgsAs[A],
		Base: func(a any) CallBase {
			t := a.(A).Target()
			return CallBase{Category: t.Category, Symbol: t.Symbol, IdempotencyKey: t.IdempotencyKey, DryRun: t.DryRun, OrderID: t.OrderID}
		},
		Validate: typed(validate),
		Hash:     typed(hash),
	}
}

// decodeArgsAs decodes parked arguments of type A.
func decodeArgsAs[A any](raw json.RawMessage) (any, error) {
	var a A
	err := json.Unmarshal(raw, &a)
	return a, err
}

// nullDecimal is a NullDecimal as text for a hash ("" when not given).
func nullDecimal(n decimal.NullDecimal) string {
	if !n.Valid {
		return ""
	}
	return n.Decimal.String()
}

// noPlannedHash is PlannedHash for tools the safety net does not cover.
func noPlannedHash(any, decimal.Decimal) string { return "" }

// riskReducing is RiskIncreasing for tools whose first gate reduces risk
// (the venue's read decides whether the call adds risk).
func riskReducing(any) bool { return false }

// typed adapts f, written on the tool's argument type A, to the
// descriptor's untyped arguments.
func typed[A, R any](f func(A) R) func(any) R {
	return func(args any) R { return f(args.(A)) }
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

// keepArgs is Prepare for tools whose decision takes the call as it is.
func keepArgs(*Input) *messages.Error { return nil }

// MissingParts names the fields of the struct *v that are not set: a nil
// function, an empty name, no read (a zero Need), a false flag; the
// fields of an embedded struct, or of an embedded pointer to one, are
// checked one by one (a nil embedded pointer is missing as a whole). It
// is the completeness check of a registered descriptor: this package's
// Tool, and package actors' descriptor, which embeds it.
func MissingParts(v any) []string {
	return unsetFields(reflect.ValueOf(v).Elem())
}

// unsetFields names the fields of the struct v that are not set.
func unsetFields(v reflect.Value) []string {
	var missing []string
	for i := range v.NumField() {
		f, field := v.Field(i), v.Type().Field(i)
		switch f.Kind() {
		case reflect.Func:
			if f.IsNil() {
				missing = append(missing, field.Name)
			}
		case reflect.String, reflect.Uint8, reflect.Bool:
			if f.IsZero() {
				missing = append(missing, field.Name)
			}
		case reflect.Pointer:
			if field.Anonymous && f.Type().Elem().Kind() == reflect.Struct {
				if f.IsNil() {
					missing = append(missing, field.Name)
				} else {
					missing = append(missing, unsetFields(f.Elem())...)
				}
				continue
			}
			missing = append(missing, field.Name+" (a kind of part this check does not know)")
		case reflect.Struct:
			if field.Anonymous {
				missing = append(missing, unsetFields(f)...)
				continue
			}
			fallthrough
		default:
			missing = append(missing, field.Name+" (a kind of part this check does not know)")
		}
	}
	return missing
}
