package actors

import (
	"encoding/json"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The answers the driver (driver.go) gives without deciding: a refusal,
// a repeat of an earlier call (the idempotency key, the 30 s safety net),
// a stored answer given again, and the answer an order write completes.

// refuseTool journals order_refused (the tool, the instrument, the code
// and its details; never the model's words) and answers the refusal. A
// dry run's refusal is answered, not journaled.
func (u *userActor) refuseTool(ctx actor.Context, tool string, cat messages.Category, symbol string, dryRun bool, e *messages.Error, origin messages.Origin, to *actor.PID) {
	if dryRun {
		u.reply(ctx, to, e)
		return
	}
	payload := map[string]any{"tool": tool, "category": cat, "symbol": symbol, "code": e.Code, "details": e.Details}
	if origin.ConfirmationID != "" {
		payload["confirmation_id"] = origin.ConfirmationID
	}
	ev := state.Event{Type: messages.RecordOrderRefused, Payload: payload}
	u.write(ctx, ev, origin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, to, messages.AsError(err))
			return
		}
		u.reply(ctx, to, e)
	})
}

// repeat answers a call that repeats an earlier one, and journals
// order_repeat: the same idempotency key with the same arguments gets the
// first answer (result_source "replay"), with other arguments
// idempotency_conflict, while the first runs outcome_unknown
// (in_progress); without a key, an identical risk-increasing order within
// 30 s of the previous answer (10 min after an unknown outcome) gets that
// answer. Reduce-only orders are never deduplicated without a key.
func (u *userActor) repeat(ctx actor.Context, tool, idemKey, hash string, net bool, origin messages.Origin, to *actor.PID) bool {
	if origin.ConfirmationID != "" {
		// An approved action's run is the parked call itself, not a
		// repeat of it (and not of an earlier order).
		return false
	}
	var answer any
	rep := messages.OrderRepeatEvent{Tool: tool, IdempotencyKey: idemKey}
	now := u.now()
	if ans := u.pendingRepeat(tool, idemKey, hash); ans != nil {
		answer, rep.Reason = ans, "pending_confirmation"
		if e, ok := ans.(*messages.Error); ok && e.Code == messages.CodeIdempotencyConflict {
			rep.Reason = "conflict"
		}
		u.answerRepeat(ctx, rep, answer, origin, to)
		return true
	}
	inFlight := func(match func(*action) bool) *action {
		for _, x := range u.actions {
			if x.claim != nil && x.claim.dryRun {
				continue
			}
			if match(x) {
				return x
			}
		}
		return nil
	}
	switch {
	case idemKey != "":
		key := idemKey
		if x := inFlight(func(x *action) bool { return x.keyOf() == key }); x != nil {
			if x.hashOf() != hash {
				answer, rep.Reason = conflict(), "conflict"
			} else {
				answer, rep.Reason, rep.ClientOrderID = inProgress(x.ticketID()), "in_progress", x.ticketID()
			}
			break
		}
		e, ok := u.state.Idempotency[key]
		if !ok || now.Sub(e.At) >= state.IdempotencyWindow {
			return false
		}
		rep.ClientOrderID = e.ClientOrderID
		switch {
		case e.ArgsSHA256 != hash:
			answer, rep.Reason = conflict(), "conflict"
		case e.Status == "":
			answer, rep.Reason = inProgress(e.ClientOrderID), "in_progress"
		default:
			answer, rep.Reason = replayedEntry(tool, e), "replay"
		}
	case net:
		if x := inFlight(func(x *action) bool { return x.hashOf() == hash && x.keyOf() == "" }); x != nil {
			answer, rep.Reason, rep.ClientOrderID = inProgress(x.ticketID()), "in_progress", x.ticketID()
			break
		}
		// An identical attempt whose outcome is still unknown (its
		// look-up failed; it is reconciled at the next reconnect or
		// start) may exist on the venue: a second one is not sent.
		for _, att := range u.state.Attempts {
			if att.ArgsSHA256 == hash && att.IdempotencyKey == "" && att.RiskIncreasing {
				answer, rep.Reason, rep.ClientOrderID = inProgress(att.ClientOrderID), "in_progress", att.ClientOrderID
				break
			}
		}
		if answer != nil {
			break
		}
		for i := len(u.state.Recent) - 1; i >= 0; i-- {
			r := u.state.Recent[i]
			if r.ArgsSHA256 != hash || (r.Environment != "" && r.Environment != u.env) {
				continue
			}
			if age := now.Sub(r.At); age < state.SafetyNet || (r.Unknown && age < state.SafetyNetUnknown) {
				answer, rep.Reason, rep.ClientOrderID = replayed(tool, r.Answer), "safety_net", r.ClientOrderID
			}
			break
		}
		if answer == nil {
			return false
		}
	default:
		return false
	}
	u.answerRepeat(ctx, rep, answer, origin, to)
	return true
}

// answerRepeat journals order_repeat, then gives the repeat its answer.
func (u *userActor) answerRepeat(ctx actor.Context, rep messages.OrderRepeatEvent, answer any, origin messages.Origin, to *actor.PID) {
	u.write(ctx, state.Event{Type: messages.RecordOrderRepeat, Payload: rep}, origin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, to, messages.AsError(err))
			return
		}
		u.reply(ctx, to, answer)
	})
}

// keyOf and hashOf are the idempotency key and argument hash of an order
// action in flight ("" for other actions).
func (x *action) keyOf() string {
	if x.claim != nil {
		return x.claim.key
	}
	return x.attempt.IdempotencyKey
}

func (x *action) hashOf() string {
	if x.claim != nil {
		return x.claim.hash
	}
	return x.attempt.ArgsSHA256
}

func conflict() *messages.Error {
	return &messages.Error{Code: messages.CodeIdempotencyConflict, Message: "this idempotency key was used in the last 24 h with other arguments",
		NextStep: "use a new idempotency key for a different order", Details: map[string]any{"limit": "idempotency_key"}}
}

func inProgress(clientOrderID string) *messages.Error {
	d := map[string]any{"reason": "in_progress"}
	if clientOrderID != "" {
		d["client_order_id"] = clientOrderID
	}
	return &messages.Error{Code: messages.CodeOutcomeUnknown, Message: "the same order is still being handled",
		NextStep: "wait for the first call's answer, then check get_open_orders; do not send it again", Details: d}
}

// unansweredReplay answers a repeat of a call whose answer was never
// journaled (the server stopped while it ran; the recovery phase at the
// next start looked its order up and journaled what it found): the first
// answer is not known, but the client order id and what the look-up found
// are, and the agent needs them to look further.
func unansweredReplay(clientOrderID, status string) *messages.Error {
	d := map[string]any{"result_source": messages.ResultSourceReplay}
	if clientOrderID != "" {
		d["client_order_id"] = clientOrderID
	}
	next := "check get_open_orders and get_order_history for the client order id before acting again; do not send it again"
	switch status {
	case messages.OutcomeFound:
		d["reconnaissance"] = "found"
		next = "the order exists on the venue: check get_open_orders and get_order_history for the client order id; do not send it again"
	case messages.OutcomeNotFound:
		d["reconnaissance"] = "not_found"
	}
	return &messages.Error{Code: messages.CodeOutcomeUnknown,
		Message:  "the first call with this idempotency key did not finish before the server stopped; its answer is not known",
		NextStep: next, Details: d}
}

// replayedEntry is a claimed key's first answer given again: the stored
// answer, or, when none was stored, what the recovery phase found.
func replayedEntry(tool string, e state.IdempotencyEntry) any {
	if len(e.Answer) == 0 || string(e.Answer) == "null" {
		return unansweredReplay(e.ClientOrderID, e.Status)
	}
	return replayed(tool, e.Answer)
}

// replayed is a stored answer given again with result_source "replay".
func replayed(tool string, raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		// The first call's answer was never journaled (the server
		// stopped while it ran; the recovery phase closed it).
		return &messages.Error{Code: messages.CodeOutcomeUnknown, Message: "the first call with this idempotency key did not finish; its outcome is not known",
			NextStep: "check get_open_orders and get_order_history before acting again", Details: map[string]any{"result_source": messages.ResultSourceReplay}}
	}
	var probe struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(raw, &probe)
	if probe.Code != "" {
		var e messages.Error
		if json.Unmarshal(raw, &e) == nil {
			if e.Details == nil {
				e.Details = map[string]any{}
			}
			e.Details["result_source"] = messages.ResultSourceReplay
			return &e
		}
	}
	return storedAnswer(tool, raw, true)
}

// storedAnswer decodes a journaled answer of tool and checks the
// exchange's values in it with the same Fence as the live answer (an
// answer stored before a check existed is checked now); replay marks it
// result_source "replay".
func storedAnswer(tool string, raw json.RawMessage, replay bool) any {
	if d := toolOf(tool); d != nil {
		return d.stored(raw, replay)
	}
	return decodeStored(raw, replay, func(a *messages.OrderAnswer) *string { return &a.ResultSource })
}

// decodeStored decodes a stored answer of type T, fences it, and with
// replay sets its result source (source) to "replay".
func decodeStored[T any, P interface {
	*T
	messages.Fencer
}](raw json.RawMessage, replay bool, source func(P) *string) any {
	var ans T
	if err := json.Unmarshal(raw, &ans); err != nil {
		return messages.Internal(err)
	}
	P(&ans).Fence()
	if replay {
		*source(&ans) = messages.ResultSourceReplay
	}
	return &ans
}

// fencedResult is a confirmation's stored result (the tool's answer) with
// the exchange's values checked again, as a replay of it would be; an
// error, or a result that does not decode, is kept as it is.
func fencedResult(tool string, raw json.RawMessage) json.RawMessage {
	var probe struct {
		Code string `json:"code"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &probe) != nil || probe.Code != "" {
		return raw
	}
	ans := storedAnswer(tool, raw, false)
	if _, failed := ans.(*messages.Error); failed {
		return raw
	}
	out, err := json.Marshal(ans)
	if err != nil {
		return raw
	}
	return out
}

// orderAnswerOf completes the planned answer with the write's outcome.
func orderAnswerOf(planned *messages.OrderAnswer, r *orderResult, w *orderWritten) any {
	ans := *planned
	ans.ClientOrderID, ans.ResultSource, ans.FilledQty = r.ClientOrderID, r.ResultSource, messages.FilledQty{}
	if r.Err != nil {
		e := *r.Err
		d := map[string]any{"client_order_id": r.ClientOrderID}
		for k, v := range r.Err.Details {
			d[k] = v
		}
		e.Details = d
		return &e
	}
	ans.Status = messages.AnswerAccepted
	want := ""
	if w.ack != nil {
		want = w.ack.OrderID
	}
	o, e := readAfterWrite(w, want, r.ClientOrderID, r.ClientOrderID)
	if e != nil {
		return e
	}
	ans.OrderID = want
	if o != nil {
		ans.OrderID, ans.OrderStatus = o.OrderID, o.Status
	}
	ans.FilledQty = messages.FilledOf(o)
	ans.Fence()
	return &ans
}

// readAfterWrite is the order as read after an accepted order write: the
// settled order of an unknown outcome, else the read-back (nil when
// neither was read). orderID is the id the order must have (the id the
// create answered, or the order an amend or cancel changed; "" when there
// is none to compare) and linkID its client order id ("" when it has
// none). A venue whose acknowledgement or read-back names another order
// gets order_id_mismatch, never a silent swap of ids: which order is this
// one is then not known. clientOrderID names the write's attempt.
func readAfterWrite(w *orderWritten, orderID, linkID, clientOrderID string) (*messages.Order, *messages.Error) {
	var o *messages.Order
	switch {
	case w.settled != nil:
		o = &w.settled.Order
	case w.readBack != nil:
		o = w.readBack
	}
	// An order id must be the one expected; a client order id, when the
	// venue names one (an acknowledgement may leave it out).
	otherOrder := func(id, link string) bool {
		return (orderID != "" && id != orderID) || (linkID != "" && link != "" && link != linkID)
	}
	if (w.ack != nil && otherOrder(w.ack.OrderID, w.ack.OrderLinkID)) || (o != nil && otherOrder(o.OrderID, o.OrderLinkID)) {
		return nil, orderIDMismatch(clientOrderID, orderID)
	}
	return o, nil
}

// orderIDMismatch is the outcome_unknown of a write the venue accepted
// and then named another order for (another order id or client order id;
// reason order_id_mismatch, docs/errors.md). Only the order id this server
// expected is named, and only when it has the shape of a venue order id.
func orderIDMismatch(clientOrderID, want string) *messages.Error {
	d := map[string]any{"reason": "order_id_mismatch"}
	if messages.ClientOrderIDRE.MatchString(clientOrderID) {
		d["client_order_id"] = clientOrderID
	}
	if messages.VenueOrderIDRE.MatchString(want) {
		d["order_id"] = want
	}
	return &messages.Error{Code: messages.CodeOutcomeUnknown,
		Message:  "the exchange accepted the write, then named another order than this one (another order id or client order id); which order is this one is not known",
		NextStep: "do not send it again; compare get_open_orders and get_order_history with client_order_id, and tell the human",
		Details:  d}
}
