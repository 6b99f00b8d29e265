package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Trading tools as descriptors (docs/architecture.md "Trading tools:
// descriptors and one driver"). Each trading tool is one toolDescriptor,
// registered once in tradingTools: its pure half (risk.Tool: validate,
// hash, risk direction, needs, prepare, decide, the plan shown) from
// package risk, and here its carry-out half (the writes, the answer of
// an outcome, a stored answer, the bound, the hold). The driver
// (driver.go) runs every tool from its descriptor, and every place that
// needs to know about a tool (the command dispatch, the ask bound, the
// send ticket, the hold during a key re-check, an approved run, a
// replayed answer) looks it up here.

// toolDescriptor is one trading tool: its pure half and every part the
// driver and the rest of the user actor need to carry a decision out,
// registered once (tradingTools). A descriptor that lacks a part, in
// either half, fails TestEveryToolDescriptorIsComplete.
//
// A descriptor is written in a few lines at the end of its tool's file
// (tool_<name>.go): its pure half (risk's descriptor of the tool) and
// the named functions of its carry-out half; bound, the part most tools
// share, may be left out: register fills in its default. Every other
// part is required.
type toolDescriptor struct {
	// Tool is the pure half: name, arguments, validate, hash, risk
	// direction, planned hash, needs, prepare, decide, shown.
	*risk.Tool
	// carryOut carries a decision out (the execution half of the action
	// path, through execute): one write, a write after a leverage step,
	// or a chain.
	carryOut func(u *userActor, ctx actor.Context, act *action, d *risk.Decision)
	// complete turns a write's outcome into the call's answer (for
	// cancel_all_orders, the status of one cancel's row).
	complete func(d *risk.Decision, r *orderResult, w *orderWritten) any
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

// register adds d to the registry once, with the default of the optional
// part it leaves out (bound); the files of the tools call it from init. A
// required part left out stays nil, and TestEveryToolDescriptorIsComplete
// names it; a descriptor without its pure half cannot be named and stops
// the process at start.
func register(d *toolDescriptor) *toolDescriptor {
	switch {
	case d.Tool == nil:
		panic("actors: a trading tool registered without its pure half (risk.Tool)")
	case toolOf(d.Name) != nil:
		panic("actors: trading tool registered twice: " + d.Name)
	case d.bound == nil:
		d.bound = tradeBound
	}
	tradingTools[d.Name] = d
	return d
}

// toolOf is the descriptor of a tool name (nil when it is no trading tool).
func toolOf(name string) *toolDescriptor { return tradingTools[name] }

// toolOfCommand is the trading tool whose command cmd is, with the call's
// arguments and ClientUI; nil when cmd is no trading tool's command.
func toolOfCommand(cmd messages.Command) (*toolDescriptor, any, bool) {
	t, args, clientUI := risk.OfCommand(cmd)
	if t == nil {
		return nil, nil, false
	}
	return tradingTools[t.Name], args, clientUI
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

// tradeBound is the bound of a tool that sends one write.
func tradeBound(b stepBounds) time.Duration { return b.trade(1) }

// The checks of the arguments alone, shared by the tools' validate
// (invalid_params, not journaled, never echoing a value). Each returns
// nil when the field is good; firstError keeps the first failure, in the
// order the tool lists its fields.

// Typed parts: a tool's functions are written on its own argument,
// command and answer types; these adapt them to the descriptor's.

// storedAs is a descriptor's stored for answers of type T (source is its
// result source field).
func storedAs[T any, P interface {
	*T
	messages.Fencer
}](source func(P) *string) func(json.RawMessage, bool) any {
	return func(raw json.RawMessage, replay bool) any { return decodeStored(raw, replay, source) }
}

// completePositionWrite is the complete of a position write
// (the leverage, a take-profit or stop-loss): the planned answer, of type T, with
// the outcome's result source and status (set writes them), or the
// outcome's error.
func completePositionWrite[T any](set func(ans *T, source, status string)) func(*risk.Decision, *orderResult, *orderWritten) any {
	return func(d *risk.Decision, r *orderResult, w *orderWritten) any {
		if r.Err != nil {
			return r.Err
		}
		ans := *d.Planned.(*T)
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
