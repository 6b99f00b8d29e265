package actors

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The execution half of the action path (docs/tools.md "The action path" steps 7 to 9), in the
// user actor: journal order_attempt (durable) → the venue actor sends →
// its outcome comes back as *orderWritten → journal order_outcome
// (durable) → answer. The decision half (every check of docs/tools.md "The action path", the
// idempotency table) runs before execute and is the only caller of it;
// nothing else in the server asks the venue actor to write
// (TestOnlyTheActionPathWrites).

// orderResult is what the action path knows once a write's outcome is
// durable.
type orderResult struct {
	ClientOrderID string
	// ResultSource is "venue" (the venue's own answer) or
	// "reconnaissance" (an unknown outcome, found afterwards).
	ResultSource string
	Ack          *messages.OrderAck
	WriteAck     *messages.WriteAck
	Settled      *venue.Settlement
	// Err is the refusal or the outcome_unknown; nil when accepted.
	Err *messages.Error
}

// clientIDPrefix makes the client order ids of this process unique across
// restarts: action ids restart at 1 with the process, so each process adds
// 40 random bits. A restarted server can therefore never reuse an id that
// an earlier one sent.
var clientIDPrefix = func() string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("actors: no randomness for client order ids: " + err.Error())
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}()

// clientOrderID is "gx-<action id>": the process prefix and the action's
// number, at most 3+8+1+13 = 25 characters of [a-z0-9-].
func clientOrderID(action uint64) string {
	return "gx-" + clientIDPrefix + "-" + strconv.FormatUint(action, 36)
}

// linkID is the client order id of an action's write: "gx-<action id>",
// or, for an approved confirmation's run, derived from the confirmation id
// (a crash between the attempt and its outcome is reconciled by that id,
// never resent).
func (u *userActor) linkID(a *action, origin messages.Origin) string {
	if origin.ConfirmationID != "" {
		return u.nextConfirmLinkID(origin.ConfirmationID)
	}
	return clientOrderID(a.id)
}

// reserveLinkID names a write before the action that sends it begins,
// from the same numbering as linkID: a place_order that lowers the
// leverage first names its order before that step, so the order keeps the
// first client order id of an approved confirmation's run.
func (u *userActor) reserveLinkID(origin messages.Origin) string {
	if origin.ConfirmationID != "" {
		return u.nextConfirmLinkID(origin.ConfirmationID)
	}
	return clientOrderID(actionIDs.Add(1))
}

// isOrderMessage reports whether the user actor serves m in handleOrder.
func isOrderMessage(m any) bool {
	switch m.(type) {
	case *orderWritten, *streamResync, *streamOrdersReady, *tradingAsk, *marketFetched, *orderFetched, *openOrdersFetched, *cancelAllResume:
		return true
	}
	return false
}

// handleOrder serves the messages of the action path's execution and of
// the private stream.
func (u *userActor) handleOrder(ctx actor.Context, msg any, sender *actor.PID) {
	switch m := msg.(type) {
	case *orderWritten:
		u.onOrderWritten(ctx, m)
	case *streamResync:
		// Nothing pushed while the stream was away is replayed: every
		// attempt without an outcome is looked up by REST, and writes
		// wait until that is done.
		u.startRecovery(ctx)
		u.noteStreamDropped(ctx, m)
	case *streamOrdersReady:
		u.journalVenueUpdate(ctx, m)
	case *tradingAsk:
		u.runTool(ctx, m, sender)
	case *marketFetched:
		u.onMarketFetched(ctx, m)
	case *orderFetched:
		u.onOrderFetched(ctx, m)
	case *openOrdersFetched:
		u.onOpenOrdersFetched(ctx, m)
	case *cancelAllResume:
		u.onCancelAllResume(m)
	}
}

// execute journals the attempt, then has the venue actor send the write.
// The reservation holds the order against the limits until the attempt is
// durable; from then on the attempt itself counts (RollingCounters).
func (u *userActor) execute(ctx actor.Context, p risk.Plan, origin messages.Origin, sender *actor.PID) *action {
	a := u.begin(actionOrder, sender, origin, nil)
	a.step = stepJournal
	if p.RiskIncreasing {
		// Only a risk-increasing action counts against the limits (D51).
		a.reserve.NotionalUSDT = p.Notional
		a.reserve.Orders = 1
	}
	if p.ConfirmedBy != "" && origin.ConfirmationID == "" {
		// Fail closed: a caller that skipped the confirmation step.
		u.finish(ctx, a, messages.Internal(fmt.Errorf("execute: %s needs confirmation and was not confirmed", p.Tool)))
		if a.after != nil {
			a.after()
		}
		return a
	}
	id := p.LinkID
	if id == "" {
		id = u.linkID(a, origin)
	}
	ticket := id
	if p.TicketID != "" {
		ticket, a.ticket = p.TicketID, p.TicketID
	}
	if !u.tickets.commit(sender, origin, ticket) {
		// The caller stopped waiting before anything was sent and was
		// told nothing would be: the write is not sent.
		u.finish(ctx, a, callerGone())
		if a.after != nil {
			a.after()
		}
		return a
	}
	settle := p.SettleLinkID
	if p.Create != nil {
		c := *p.Create
		c.OrderLinkID = id
		p.Create = &c
		settle = id
	}
	expect := p.OrderExpectation(settle)
	att := messages.OrderAttemptEvent{
		ActionID: strconv.FormatUint(a.id, 36), ClientOrderID: id, Environment: u.env, Tool: p.Tool, Category: p.Category, Symbol: p.Symbol,
		At: u.now().UTC(), NotionalUSDT: p.Notional, RiskIncreasing: p.RiskIncreasing,
		IdempotencyKey: p.IdempotencyKey, ArgsSHA256: p.ArgsSHA256, Confirmed: origin.ConfirmationID != "",
		StepOf: p.StepOf, AfterStep: p.AfterStep,
	}
	if p.Create != nil {
		// A reconcile looks the attempt up by its own client order id:
		// what it finds must match the create.
		att.Expect = expect
	}
	ev := state.Event{Type: messages.RecordOrderAttempt, Payload: att}
	u.write(ctx, ev, origin, func(_ wal.Record, err error) {
		u.tickets.settle(sender, err == nil)
		if err != nil {
			// Nothing was sent: the attempt is not durable.
			u.finish(ctx, a, messages.AsError(err))
			if a.after != nil {
				a.after()
			}
			return
		}
		u.commit(ev)
		a.reserve = risk.Reservation{}
		a.attempt = u.state.Attempts[id]
		a.step = stepVenue
		u.toVenue(ctx, &orderWrite{
			action: a.id, linkID: settle, expect: expect, category: p.Category, symbol: p.Symbol,
			create: p.Create, amend: p.Amend, cancel: p.Cancel, leverage: p.Leverage, stop: p.Stop,
		}, ctx.Self())
	})
	return a
}

// onOrderWritten journals the outcome of a write, then answers. An
// unknown outcome whose look-up failed (the venue could not be read)
// journals nothing: the attempt stays open and is reconciled at the next
// reconnect or start.
func (u *userActor) onOrderWritten(ctx actor.Context, m *orderWritten) {
	a, ok := u.actions[m.action]
	if !ok || a.kind != actionOrder {
		// An outcome for an incarnation that crashed: its attempt is open
		// in the committed state and was reconciled at restart.
		u.logger.Warn("order outcome for an action that is not in flight", "user", u.state.User, "action", m.action)
		return
	}
	if len(m.mismatches) > 0 {
		u.noteAnomalies(ctx, a.attempt, m.mismatches)
	}
	if m.reused != nil {
		u.noteReused(ctx, m.reused)
	}
	res := &orderResult{ClientOrderID: a.attempt.ClientOrderID, Ack: m.ack, WriteAck: m.writeAck, Settled: m.settled, Err: m.err, ResultSource: "venue"}
	out := messages.OrderOutcomeEvent{ActionID: a.attempt.ActionID, ClientOrderID: a.attempt.ClientOrderID, At: u.now().UTC(), ResultSource: "venue"}
	switch {
	case m.err == nil:
		out.Status = messages.OutcomeAccepted
	case m.settled != nil:
		res.Err, res.ResultSource = nil, messages.ResultSourceReconnaissance
		out.Status, out.VenueStatus, out.ResultSource = messages.OutcomeFound, m.settled.Order.Status, messages.ResultSourceReconnaissance
	case m.class == venue.WriteUnknown && m.positionShows:
		res.Err, res.ResultSource = nil, messages.ResultSourceReconnaissance
		out.Status, out.ResultSource = messages.OutcomeFound, messages.ResultSourceReconnaissance
	case m.class == venue.WriteUnknown:
		res.ResultSource = messages.ResultSourceReconnaissance
		if m.err.Details["reconnaissance"] != "not_found" {
			delete(u.actions, a.id)
			if a.complete != nil {
				u.reply(ctx, a.waiter, a.complete(res, m))
			} else {
				u.reply(ctx, a.waiter, res)
			}
			if a.after != nil {
				a.after()
			}
			return
		}
		out.Status, out.ResultSource = messages.OutcomeNotFound, messages.ResultSourceReconnaissance
	default:
		// not_sent or a definite refusal: nothing was placed.
		out.Status = messages.OutcomeRejected
	}
	a.step = stepJournal
	var answer any = res
	if a.complete != nil {
		answer = a.complete(res, m)
		out.Answer, _ = json.Marshal(answer)
	}
	// Nothing was decided when the write never left or the venue's rate
	// limit refused it: the idempotency key is free again.
	out.ReleaseKey = m.class == venue.WriteNotSent || (m.class == venue.WriteRefused && messages.CodeOf(m.err) == messages.CodeRateLimited)
	ev := state.Event{Type: messages.RecordOrderOutcome, Payload: out}
	settle := func(err error, end *state.Event) {
		if err != nil {
			// The outcome is not durable: the attempt stays open and is
			// reconciled at the next start; the caller learns the write
			// may exist.
			u.finish(ctx, a, messages.AsError(err))
			if a.after != nil {
				a.after()
			}
			return
		}
		u.commit(ev)
		if end != nil {
			u.commit(*end)
			u.endedRun(a.origin.ConfirmationID)
		}
		u.finish(ctx, a, answer)
		if a.after != nil {
			a.after()
		}
	}
	if end, ok := u.runEnd(a, out.ClientOrderID, answer); ok {
		// An approved action's last write: its end goes in the same sync.
		u.writeTwo(ctx, ev, end, a.origin, func(_ wal.Record, err, endErr error) {
			if endErr != nil {
				settle(err, nil) // onConfirmDone journals the end
				return
			}
			settle(err, &end)
		})
		return
	}
	u.write(ctx, ev, a.origin, func(_ wal.Record, err error) { settle(err, nil) })
}

// ownsAttempt reports whether an action in flight owns the attempt (its
// write or its reconcile is under way).
func (u *userActor) ownsAttempt(clientOrderID string) bool {
	for _, a := range u.actions {
		if a.attempt.ClientOrderID == clientOrderID {
			return true
		}
	}
	return false
}
