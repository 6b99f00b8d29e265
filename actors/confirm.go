package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/journal"
	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Human confirmation (docs/tools.md "Confirmation") in the user actor. An action the policy
// wants confirmed is decided as usual (every check of docs/tools.md "The action path"), then,
// instead of executing, parked: confirmation_requested is journaled with
// the server's own plan (shown_to_user) and the typed arguments, and the
// call is answered with *messages.ConfirmationPending. A human decides
// (confirmation_decided, naming the channel); an approval sends the actor
// a message of its own (confirmExecute) that journals
// confirmation_executed (executing, with the client order id derived from
// the confirmation id) and runs the tool's own path again under the origin
// system:executor, re-checking everything as of that moment; its end is
// journaled as confirmation_executed again (executed or failed). A crash
// between the attempt and its outcome leaves an open attempt that is
// reconciled at start (recovery.go) and never resent; its outcome settles
// the confirmation (applyConfirm).
//
// Confirmations are part of the user's state (state.User), rebuilt from
// the journal through the same Apply. Replacing or deleting the key
// cancels the waiting and approved confirmations of its environment
// (applied from the credential record itself, so it can never be lost
// between two records).
//
// A confirmation is bound to the environment it was parked on: the human
// approved a plan for that venue. A server that runs on another venue
// never decides or runs it: the start sweep (or the first decision, if
// it comes first) cancels it with reason venue_changed.

// confirmExecute is the execution of an approved confirmation: a message
// of its own, run after the approval is durable.
type confirmExecute struct {
	id     string
	waiter *actor.PID
}

// confirmDone is the answer of an approved action's run.
type confirmDone struct {
	id     string
	answer any
	waiter *actor.PID
	err    error
}

// confirmSweep journals the expiry of confirmations whose time ran out.
type confirmSweep struct{}

// newConfirmationID is "cf_" and 24 random hex digits.
func newConfirmationID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("actors: no randomness for confirmation ids: " + err.Error())
	}
	return "cf_" + hex.EncodeToString(b[:])
}

// confirmClientOrderID is the client order id of a confirmed action's n-th
// write (n from 1): "gx-cf-<24 hex>", then "-2", "-3"... for the cancels
// of a cancel_all_orders. At most 36 characters.
func confirmClientOrderID(confirmationID string, n int) string {
	id := "gx-" + strings.ReplaceAll(confirmationID, "_", "-")
	if n > 1 {
		id += "-" + strconv.Itoa(n)
	}
	return id
}

// executorOrigin is the origin of an approved action's run.
func executorOrigin(id string) messages.Origin {
	o := systemOrigin
	o.ConfirmationID = id
	return o
}

// statusOf is a confirmation as the outside sees it.
func statusOf(user string, c state.Confirmation) messages.ConfirmationStatus {
	st := messages.ConfirmationStatus{ConfirmationID: c.ID, User: user, Status: c.Status, Tool: c.Tool, Channel: c.Channel, ConfirmedBy: c.ConfirmedBy,
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, ShownToUser: c.Shown.Fenced(), DecidedChannel: c.DecidedChannel,
		ClientOrderID: c.ClientOrderID, Result: fencedResult(c.Tool, c.Result), Error: c.Error}
	if !c.DecidedAt.IsZero() {
		t := c.DecidedAt
		st.DecidedAt = &t
	}
	if st.ClientOrderID == "" && c.Live() && (c.Shown != nil && c.Shown.Order != nil) {
		st.ClientOrderID = confirmClientOrderID(c.ID, 1)
	}
	return st
}

// pendingOf is the parked call's answer.
func pendingOf(env string, c state.Confirmation) *messages.ConfirmationPending {
	return &messages.ConfirmationPending{ConfirmationID: c.ID, Channel: c.Channel, Tool: c.Tool, Venue: env, ExpiresAt: c.ExpiresAt,
		ShownToUser: c.Shown.Fenced(), ArgsSHA256: c.ArgsSHA256, ConfirmedBy: c.ConfirmedBy}
}

// parkRequest is a decided action that needs a human.
type parkRequest struct {
	tool     string
	category messages.Category
	symbol   string
	// args are the tool's typed arguments, run again once approved.
	args any
	hash string
	key  string
	// shown is the plan (its tool field set; the rest is filled in).
	shown messages.ShownToUser
	// confirmedBy is the policy setting that asks for the confirmation
	// (confirmedBy); "" when none does.
	confirmedBy string
}

// confirmGate is the confirmation step of a decided action, after its
// preview is built. For an approved action's run it checks that the risk
// direction is the one the human approved; otherwise, when a setting asks
// for confirmation (r.confirmedBy), it parks it. It reports whether it
// answered (the caller stops).
func (u *userActor) confirmGate(ctx actor.Context, act *action, r parkRequest) bool {
	if id := act.origin.ConfirmationID; id != "" {
		c := u.state.Confirmations[id]
		if c.Shown != nil && !c.Shown.RiskIncreasing && r.shown.RiskIncreasing {
			u.refuseTool(ctx, r.tool, r.category, r.symbol, false, &messages.Error{Code: messages.CodePermissionDenied,
				Message:  "the approved action reduced risk, and as of now it would add risk; nothing was sent",
				NextStep: "call the tool again; a new confirmation shows the plan as it is now",
				Details:  map[string]any{"reason": "risk_direction_changed"}}, act.origin, act.waiter)
			return true
		}
		return false
	}
	if r.confirmedBy == "" {
		return false
	}
	u.park(ctx, r, act.origin, act.waiter)
	return true
}

// channelFor picks the confirmation channel: the client's own form when
// the client declared form elicitation and the effective policy trusts
// the client UI (never on live), else the CLI when the server runs with
// GX_CONFIRM_CLI_ENABLED=true, else none.
func (u *userActor) channelFor(origin messages.Origin) string {
	switch {
	case origin.FormElicitation && u.clientUITrusted():
		return messages.ConfirmChannelClientUI
	case u.confirmCLI:
		return messages.ConfirmChannelCLI
	}
	return ""
}

// clientUITrusted reports whether the client's form may decide a
// confirmation now: the server does not run live and the effective policy
// trusts the client UI. It is asked again at every client_ui decision, so
// turning trust_client_ui off (or a restart on live) stops the forms
// already waiting.
func (u *userActor) clientUITrusted() bool {
	return u.venue != messages.VenueLive && u.state.Effective(u.venue, u.env).TrustClientUI
}

// park journals confirmation_requested and answers the pending
// confirmation; without a channel, or with max_pending confirmations
// waiting, it refuses (journaled, nothing sent). Its send ticket commits
// only once it is to be parked, and settles with the record.
func (u *userActor) park(ctx actor.Context, r parkRequest, origin messages.Origin, to *actor.PID) {
	p := u.state.Effective(u.venue, u.env)
	channel := u.channelFor(origin)
	if channel == "" {
		u.refuseTool(ctx, r.tool, r.category, r.symbol, false, u.noChannel(p, r.confirmedBy, origin), origin, to)
		return
	}
	now := u.now()
	if u.state.WaitingConfirmations(now) >= p.MaxPending {
		u.refuseTool(ctx, r.tool, r.category, r.symbol, false, &messages.Error{Code: messages.CodePendingLimitReached,
			Message:  "too many confirmations are already waiting for a human; nothing was parked or sent",
			NextStep: "wait for a human to decide, or withdraw one with cancel_confirmation",
			Details:  map[string]any{"limit": "max_pending", "allowed": strconv.Itoa(p.MaxPending), "confirmed_by": r.confirmedBy}}, origin, to)
		return
	}
	args, err := json.Marshal(r.args)
	if err != nil {
		u.reply(ctx, to, messages.Internal(err))
		return
	}
	if !u.tickets.commit(to, origin, "") {
		u.reply(ctx, to, callerGone())
		return
	}
	shown := r.shown
	shown.Tool, shown.User, shown.Venue = r.tool, u.state.User, u.env
	if shown.Summary == "" {
		shown.Summary = r.tool // the tool's shown sets the line a human reads first
	}
	ttl := time.Duration(p.ConfirmationTTLS) * time.Second
	ev := state.Event{Type: messages.RecordConfirmationRequested, Payload: messages.ConfirmationRequestedEvent{
		ConfirmationID: newConfirmationID(), Tool: r.tool, Channel: channel, Environment: u.env,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC(), ShownToUser: &shown, Args: args, ArgsSHA256: r.hash, IdempotencyKey: r.key,
		ConfirmedBy: r.confirmedBy,
	}}

	u.write(ctx, ev, origin, func(_ wal.Record, err error) {
		u.tickets.settle(to, err == nil)
		if err != nil {
			u.reply(ctx, to, messages.AsError(err))
			return
		}
		u.commit(ev)
		id := ev.Payload.(messages.ConfirmationRequestedEvent).ConfirmationID
		u.reply(ctx, to, pendingOf(u.env, u.state.Confirmations[id]))
		u.sweepAfter(ctx, ttl)
	})
}

// confirmDetails are the details of a refusal because a setting asks for
// a confirmation that cannot be had: the setting (limit and confirmed_by)
// and its value (allowed).
func confirmDetails(p messages.Policy, by string) map[string]any {
	d := map[string]any{"limit": by, "confirmed_by": by}
	if by == messages.ConfirmByNotional {
		d["allowed"] = p.ConfirmAboveNotionalUSDT.String()
	} else {
		d["allowed"] = p.ConfirmActions
	}
	return d
}

// channelDetails are confirmDetails for a refusal because no channel can
// ask the human. When the client declared form elicitation, its form was
// not trusted (trust_client_ui is off, or the server runs live): that
// setting, not the one asking, is what refused, and limit names it.
func channelDetails(p messages.Policy, by string, clientForm bool) map[string]any {
	d := confirmDetails(p, by)
	if clientForm {
		d["limit"], d["allowed"] = "trust_client_ui", "false"
	}
	return d
}

// pendingRepeat answers a call that repeats a parked one: the same
// idempotency key (or, without a key, the same arguments) while the
// confirmation waits gets the same pending confirmation; the same key with
// other arguments is idempotency_conflict; while the approved action runs,
// in_progress. nil: not a repeat of a parked call.
func (u *userActor) pendingRepeat(tool, key, hash string) any {
	now := u.now()
	for _, c := range u.state.Confirmations {
		active := c.Live() || c.Status == messages.ConfirmStatusExecuting
		if !active || c.Waiting() && !now.Before(c.ExpiresAt) || c.Environment != u.env {
			continue
		}
		switch {
		case key != "" && c.IdempotencyKey == key:
			if c.ArgsSHA256 != hash || c.Tool != tool {
				return conflict()
			}
		case key == "" && c.IdempotencyKey == "" && c.Tool == tool && c.ArgsSHA256 == hash && c.Waiting():
		default:
			continue
		}
		if c.Waiting() {
			return pendingOf(u.env, c)
		}
		return inProgress(c.ClientOrderID)
	}
	return nil
}

// confirmCommand serves the confirmation commands.
func (u *userActor) confirmCommand(ctx actor.Context, m *userCommand, sender *actor.PID) {
	if !u.state.Exists {
		u.reply(ctx, sender, messages.Errorf(messages.CodeNotFound, "no such user"))
		return
	}
	find := func(id string) (state.Confirmation, *messages.Error) {
		if e := messages.CheckConfirmationID(id); e != nil {
			return state.Confirmation{}, e
		}
		c, ok := u.state.Confirmations[id]
		if !ok {
			return c, &messages.Error{Code: messages.CodeNotFound, Message: "no confirmation with this id for this user",
				NextStep: "list the waiting confirmations with `guarded-exchange confirm list`"}
		}
		return c, nil
	}
	switch c := m.cmd.(type) {
	case *messages.ConfirmationStatusCommand:
		conf, e := find(c.ConfirmationID)
		if e != nil {
			u.reply(ctx, sender, e)
			return
		}
		st := statusOf(u.state.User, conf)
		u.reply(ctx, sender, &st)
	case *messages.ListConfirmationsCommand:
		out := &messages.ConfirmationList{User: u.state.User, Confirmations: []messages.ConfirmationStatus{}}
		for _, conf := range u.state.Confirmations {
			if c.All || conf.Live() || conf.Status == messages.ConfirmStatusExecuting {
				out.Confirmations = append(out.Confirmations, statusOf(u.state.User, conf))
			}
		}
		slices.SortFunc(out.Confirmations, func(a, b messages.ConfirmationStatus) int { return a.CreatedAt.Compare(b.CreatedAt) })
		u.reply(ctx, sender, out)
	case *messages.CancelConfirmationCommand:
		conf, e := find(c.ConfirmationID)
		if e != nil {
			u.reply(ctx, sender, e)
			return
		}
		if !conf.Waiting() {
			u.reply(ctx, sender, notPending(conf))
			return
		}
		channel := "agent"
		if m.origin.Role != messages.RoleAgent {
			channel = messages.ConfirmChannelCLI
		}
		u.decided(ctx, conf, messages.DecisionCancel, channel, nil, m.origin, sender)
	case *messages.DecideConfirmationCommand:
		u.decideConfirmation(ctx, m, c, sender)
	}
}

// notPending is the refusal of a decision on a confirmation that no longer
// waits.
func notPending(c state.Confirmation) *messages.Error {
	e := messages.InvalidParams("confirmation_id", "the confirmation is no longer pending")
	e.Details["status"] = c.Status
	e.NextStep = "read it with get_confirmation_status or `guarded-exchange confirm list --all`"
	return e
}

// decideConfirmation is a human's decision. Exactly one decision wins: the
// first one handled journals it; any later one finds it no longer pending.
func (u *userActor) decideConfirmation(ctx actor.Context, m *userCommand, c *messages.DecideConfirmationCommand, sender *actor.PID) {
	if e := c.Validate(); e != nil {
		u.reply(ctx, sender, e)
		return
	}
	conf, ok := u.state.Confirmations[c.ConfirmationID]
	if !ok {
		u.reply(ctx, sender, &messages.Error{Code: messages.CodeNotFound, Message: "no confirmation with this id for this user",
			NextStep: "list the waiting confirmations with `guarded-exchange confirm list`"})
		return
	}
	deny := func(msg, next string) {
		u.reply(ctx, sender, &messages.Error{Code: messages.CodePermissionDenied, Message: msg, NextStep: next})
	}
	var uid *int64
	origin := m.origin
	switch c.Channel {
	case messages.ConfirmChannelCLI:
		if m.origin.Role == messages.RoleAgent {
			deny("the agent cannot decide a confirmation", "a human decides with `guarded-exchange confirm approve|reject ID`")
			return
		}
		if !u.confirmCLI {
			deny("the server runs without GX_CONFIRM_CLI_ENABLED=true; the CLI cannot decide confirmations", "restart the server with GX_CONFIRM_CLI_ENABLED=true")
			return
		}
		v := m.origin.PeerUID
		uid = &v
	case messages.ConfirmChannelClientUI:
		if m.origin.Role != messages.RoleAgent || conf.Channel != messages.ConfirmChannelClientUI {
			deny("this confirmation is not decided through the client's form", "decide it with `guarded-exchange confirm approve|reject ID`")
			return
		}
		if c.ArgsSHA256 != conf.ArgsSHA256 {
			deny("the decision does not match the parked action", "call the tool again")
			return
		}
		// Trust is asked again now: live never trusts the client's
		// form, and a human may have turned trust_client_ui off since
		// the form was shown.
		if !u.clientUITrusted() {
			u.reply(ctx, sender, &messages.Error{Code: messages.CodePermissionDenied,
				Message:  "the policy no longer trusts the client's form to confirm actions (trust_client_ui is off, or the server runs live); nothing was decided",
				NextStep: "a human decides it with `guarded-exchange confirm approve|reject ID`, or it expires",
				Details:  map[string]any{"reason": "client_ui_untrusted"}})
			return
		}
		// The decision is the human's at the form, relayed by the
		// session: it is journaled as theirs (client_ui:user), never as
		// the agent's.
		origin.FormAnswer = true
	}
	if !conf.Waiting() {
		u.reply(ctx, sender, notPending(conf))
		return
	}
	if conf.Environment != u.env {
		u.cancelVenueChanged(ctx, conf, sender)
		return
	}
	if !u.now().Before(conf.ExpiresAt) {
		u.decided(ctx, conf, messages.DecisionExpire, "system", nil, systemOrigin, nil)
		u.reply(ctx, sender, notPending(state.Confirmation{Status: messages.ConfirmStatusExpired}))
		return
	}
	if c.Decision == messages.DecisionReject {
		u.decided(ctx, conf, messages.DecisionReject, c.Channel, uid, origin, sender)
		return
	}
	// The approval goes out with the execution's order_attempt (one fsync
	// before the wire): see writeLazy. Once it is taken, the approved
	// action runs whether its caller waits or not.
	if !u.tickets.commit(sender, m.origin, "") {
		u.reply(ctx, sender, callerGone())
		return
	}
	e := u.writeLazy(ctx, u.decidedEvent(conf, messages.DecisionApprove, c.Channel, uid), origin)
	u.tickets.settle(sender, e == nil)
	if e != nil {
		u.reply(ctx, sender, e)
		return
	}
	// The execution is a message of its own.
	ctx.Send(ctx.Self(), &confirmExecute{id: conf.ID, waiter: sender})
}

// decidedEvent is the confirmation_decided record of one decision.
// Its status follows from the decision and conf's status.
func (u *userActor) decidedEvent(conf state.Confirmation, decision, channel string, uid *int64) state.Event {
	return state.Event{Type: messages.RecordConfirmationDecided, Payload: messages.ConfirmationDecidedEvent{ConfirmationID: conf.ID, Decision: decision,
		Channel: channel, ApproverUID: uid, Status: state.DecidedStatus(decision, conf.Status), At: u.now().UTC()}}

}

// venueChangedEvent is the server's cancel of a live confirmation parked
// on another environment than the one it runs on.
func (u *userActor) venueChangedEvent(conf state.Confirmation) state.Event {
	ev := u.decidedEvent(conf, messages.DecisionCancel, "system", nil)
	p := ev.Payload.(messages.ConfirmationDecidedEvent)
	p.Reason = messages.ReasonVenueChanged
	ev.Payload = p
	return ev
}

// cancelVenueChanged journals the cancel of a confirmation parked on
// another environment, then answers to (may be nil) why nothing happens.
func (u *userActor) cancelVenueChanged(ctx actor.Context, conf state.Confirmation, to *actor.PID) {
	ev := u.venueChangedEvent(conf)
	u.write(ctx, ev, systemOrigin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, to, messages.AsError(err))
			return
		}
		u.commit(ev)
		u.reply(ctx, to, state.VenueChangedError())
	})
}

// decided journals confirmation_decided and answers the confirmation's
// status (to may be nil).
func (u *userActor) decided(ctx actor.Context, conf state.Confirmation, decision, channel string, uid *int64, origin messages.Origin, to *actor.PID) {
	ev := u.decidedEvent(conf, decision, channel, uid)
	u.write(ctx, ev, origin, func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, to, messages.AsError(err))
			return
		}
		u.commit(ev)
		st := statusOf(u.state.User, u.state.Confirmations[conf.ID])
		u.reply(ctx, to, &st)
	})
}

// onConfirmExecute runs an approved action: within ExecuteWithin of the
// approval, journal confirmation_executed (executing), then the tool's own
// path under system:executor, whose answer comes back as confirmDone.
func (u *userActor) onConfirmExecute(ctx actor.Context, m *confirmExecute) {
	conf, ok := u.state.Confirmations[m.id]
	if !ok || conf.Status != messages.ConfirmStatusApproved {
		if ok && m.waiter != nil {
			st := statusOf(u.state.User, conf)
			u.reply(ctx, m.waiter, &st)
		}
		return
	}
	if conf.Environment != u.env {
		u.cancelVenueChanged(ctx, conf, m.waiter)
		return
	}
	if u.now().Sub(conf.DecidedAt) > messages.ExecuteWithin {
		u.decided(ctx, conf, messages.DecisionExpire, "system", nil, systemOrigin, m.waiter)
		return
	}
	origin := executorOrigin(conf.ID)
	ev := state.Event{Type: messages.RecordConfirmationExecuted, Payload: messages.ConfirmationExecutedEvent{ConfirmationID: conf.ID,
		Status: messages.ConfirmStatusExecuting, ClientOrderID: confirmClientOrderID(conf.ID, 1), At: u.now().UTC()}}

	if e := u.writeLazy(ctx, ev, origin); e != nil {
		u.reply(ctx, m.waiter, e)
		return
	}
	if u.executing == nil {
		u.executing = map[string]int{}
	}
	u.executing[conf.ID] = 0
	// The wait is the action's own bound: it answers before the wait ends
	// unless a step overran its bound, and the run's state is kept then.
	bounds := stepBounds{request: u.timeout, settle: u.settleWait, hold: u.recoveryWait}
	fut := actor.NewFuture(ctx.ActorSystem(), bounds.execution(conf.Tool)+askMargin)
	if e := u.rerun(ctx, conf, origin, fut.PID()); e != nil {
		u.reply(ctx, fut.PID(), e)
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		res, err := fut.Result()
		root.Send(self, &confirmDone{id: conf.ID, answer: res, waiter: m.waiter, err: err})
	}()
}

// writeLazy journals ev NoSync and applies it at once, before it is
// durable: the one exception to "durable, then applied" (decisions D71,
// D136). It is used for an approval and the start of its execution only:
// the run that follows needs the approved state, and nothing is sent
// before the run's first Sync record (its order_attempt, or the refusal or
// end that stops it), which is durable only with them, so they cost no
// fsync of their own. If the process dies before, nothing was sent, and
// the confirmation is pending or approved again after the restart. A run
// that ends without a record of its own flushes them (onConfirmDone). A
// failed write marks the journal down: every later write, and so every
// send, is refused.
func (u *userActor) writeLazy(ctx actor.Context, ev state.Event, o messages.Origin) *messages.Error {
	origin := o.Actor()
	if !state.OriginAllowed(ev, origin) {
		return state.RefuseOrigin(ev, origin)
	}
	if u.journal.IsDown() {
		return errJournalDown(u.journal)
	}
	if u.disk.Refuses(ev.Type) {
		// Refused here, not by the writer: its refusal of a lazy record
		// would take the journal down for everyone (the kill switch too).
		return journal.ReserveRefusal()
	}
	payload, err := json.Marshal(ev.Payload)
	if err != nil {
		return messages.Internal(err)
	}
	w, logger := u.journal, u.logger
	w.Append(wal.Entry{Time: u.now().UTC(), Type: uint16(ev.Type), User: u.state.User, Actor: origin,
		Channel: o.ChannelText(), Payload: payload}, journal.NoSync, func(r journal.Result) {
		if r.Err != nil {
			w.MarkDown()
			logger.Error("journal: a confirmation record did not become durable; refusing all further writes", "type", ev.Type.String())
		}
	})
	u.commit(ev)
	return nil
}

// rerun sends the confirmation's typed arguments through the driver,
// as the tool's own call (its descriptor decodes them).
func (u *userActor) rerun(ctx actor.Context, c state.Confirmation, origin messages.Origin, to *actor.PID) *messages.Error {
	d := toolOf(c.Tool)
	if d == nil {
		return messages.Internal(fmt.Errorf("confirmation %s: unknown tool", c.ID))
	}
	args, err := d.DecodeArgs(c.Args)
	if err != nil {
		return messages.Internal(fmt.Errorf("confirmation %s: arguments: %w", c.ID, err))
	}
	// The arguments were validated when the call entered, before they
	// were parked: the run trusts them.
	u.startTool(ctx, &tradingAsk{ctx: context.Background(), tool: d, args: args, origin: origin}, to)
	return nil
}

// onConfirmDone journals the end of an approved action's run, then answers
// the decider with the tool's answer. An outcome that is not known yet
// (outcome_unknown: the attempt stays open and is reconciled) leaves the
// confirmation executing; the outcome settles it.
func (u *userActor) onConfirmDone(ctx actor.Context, m *confirmDone) {
	answer := m.answer
	if m.err == nil {
		// The run answered: it sends nothing more. A wait that ended
		// first leaves the run's numbering in place, since the run may
		// still send, and its writes must not reuse client order ids.
		delete(u.executing, m.id)
	} else {
		answer = &messages.Error{Code: messages.CodeOutcomeUnknown, Message: "the approved action did not answer in time; it is being reconciled, never resent",
			NextStep: "check it with `guarded-exchange confirm list --all` or get_confirmation_status"}
	}
	conf, ok := u.state.Confirmations[m.id]
	e, failed := answer.(*messages.Error)
	// The order's outcome may already have settled the status
	// (applyConfirm); the run's end is journaled all the same.
	ran := conf.Status == messages.ConfirmStatusExecuting || conf.Status == messages.ConfirmStatusExecuted || conf.Status == messages.ConfirmStatusFailed
	if u.runEnded[m.id] {
		// The run's end went out with its last order_outcome (runEnd).
		delete(u.runEnded, m.id)
		u.reply(ctx, m.waiter, answer)
		return
	}
	if !ok || !ran || failed && e.Code == messages.CodeOutcomeUnknown {
		// The approval and the start were journaled NoSync (writeLazy):
		// if no record of the run carried them yet, they go out now.
		u.journal.Flush()
		u.reply(ctx, m.waiter, answer)
		return
	}
	ev := runEndEvent(m.id, answer, u.now())
	u.write(ctx, ev, executorOrigin(m.id), func(_ wal.Record, err error) {
		if err != nil {
			u.reply(ctx, m.waiter, messages.AsError(err))
			return
		}
		u.commit(ev)
		u.reply(ctx, m.waiter, answer)
	})
}

// runEndEvent is the confirmation_executed that ends an approved action's
// run with its answer: executed with the answer, or failed with its error.
func runEndEvent(id string, answer any, at time.Time) state.Event {
	out := messages.ConfirmationExecutedEvent{ConfirmationID: id, Status: messages.ConfirmStatusExecuted, At: at.UTC()}
	if e, failed := answer.(*messages.Error); failed {
		out.Status, out.Error = messages.ConfirmStatusFailed, e
	} else if raw, err := json.Marshal(answer); err == nil {
		out.Result = raw
	}
	return state.Event{Type: messages.RecordConfirmationExecuted, Payload: out}
}

// runEnd is the end record of an approved action's run that an order's
// outcome completes: the run's last write (no step after it) whose client
// order id is the one the executing confirmation waits for, so that the
// outcome settles it (applyConfirm). The two are journaled in one sync
// (onOrderWritten, writeTwo), and an approval costs two fsyncs: the
// order_attempt, which carries the approval and the start, and the
// order_outcome with the end. ok is false for every other write, and for
// an outcome_unknown answer, which journals no end; a run that ends
// otherwise journals its end in onConfirmDone.
func (u *userActor) runEnd(a *action, clientOrderID string, answer any) (ev state.Event, ok bool) {
	id := a.origin.ConfirmationID
	if id == "" || a.after != nil || clientOrderID == "" {
		return state.Event{}, false
	}
	if e, failed := answer.(*messages.Error); failed && e.Code == messages.CodeOutcomeUnknown {
		// Its outcome settles the run; no end is journaled
		// (onConfirmDone).
		return state.Event{}, false
	}
	if c, found := u.state.Confirmations[id]; !found || c.Status != messages.ConfirmStatusExecuting || c.ClientOrderID != clientOrderID {
		return state.Event{}, false
	}
	return runEndEvent(id, answer, u.now()), true
}

// endedRun notes that a run's end is journaled: onConfirmDone only
// answers the decider.
func (u *userActor) endedRun(id string) {
	if u.runEnded == nil {
		u.runEnded = map[string]bool{}
	}
	u.runEnded[id] = true
}

// nextConfirmLinkID is the client order id of a confirmed action's next
// write in this process.
func (u *userActor) nextConfirmLinkID(id string) string {
	if u.executing == nil {
		u.executing = map[string]int{}
	}
	u.executing[id]++
	return confirmClientOrderID(id, u.executing[id])
}

// sweepAfter schedules a sweep.
func (u *userActor) sweepAfter(ctx actor.Context, d time.Duration) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(d+10*time.Millisecond, func() { root.Send(self, &confirmSweep{}) })
}

// onConfirmSweep journals one due change (an expiry, an approval whose run
// never started in time, or a run interrupted before it sent anything),
// then, once it is durable, looks again.
func (u *userActor) onConfirmSweep(ctx actor.Context) {
	now := u.now()
	for _, c := range u.state.Confirmations {
		var ev state.Event
		origin := systemOrigin
		switch {
		case c.Live() && c.Environment != u.env:
			// Parked on another venue (the server restarted with
			// another --venue): never decided or run here.
			ev = u.venueChangedEvent(c)
		case c.Waiting() && !now.Before(c.ExpiresAt):
			ev = u.decidedEvent(c, messages.DecisionExpire, "system", nil)
		case c.Status == messages.ConfirmStatusApproved && now.Sub(c.DecidedAt) > messages.ExecuteWithin:
			ev = u.decidedEvent(c, messages.DecisionExpire, "system", nil)
		case c.Status == messages.ConfirmStatusApproved:
			// Approved and not run by this process (a restart came
			// between): it runs now, still within ExecuteWithin.
			ctx.Send(ctx.Self(), &confirmExecute{id: c.ID})
			continue
		case c.Status == messages.ConfirmStatusExecuting && !u.runsConfirmation(c):
			// Nothing of it is in flight and no attempt is open: the
			// process stopped before its write was journaled, so nothing
			// was sent.
			origin = executorOrigin(c.ID)
			ev = state.Event{Type: messages.RecordConfirmationExecuted, Payload: messages.ConfirmationExecutedEvent{ConfirmationID: c.ID, Status: messages.ConfirmStatusFailed,
				At: now.UTC(), Error: &messages.Error{Code: messages.CodeInternalError, Message: "the server stopped before the approved action was sent; nothing was sent",
					NextStep: "call the tool again if the action is still wanted", Details: map[string]any{"reason": "interrupted"}}}}

		default:
			continue
		}
		u.write(ctx, ev, origin, func(_ wal.Record, err error) {
			if err != nil {
				u.logger.Error("confirmation sweep: journal write failed", "user", u.state.User, "err", err.Error())
				return
			}
			u.commit(ev)
			ctx.Send(ctx.Self(), &confirmSweep{})
		})
		return
	}
}

// runsConfirmation reports whether an executing confirmation still has
// something in flight: its run in this process, or an open attempt with
// its client order id (reconciled at start, never resent).
func (u *userActor) runsConfirmation(c state.Confirmation) bool {
	if _, ok := u.executing[c.ID]; ok {
		return true
	}
	prefix := confirmClientOrderID(c.ID, 1)
	for id := range u.state.Attempts {
		if strings.HasPrefix(id, prefix) {
			return true
		}
	}
	return false
}

// shownOf is the plan an approved action's run was approved with (nil for
// any other call).
func (u *userActor) shownOf(origin messages.Origin) *messages.ShownToUser {
	if origin.ConfirmationID == "" {
		return nil
	}
	return u.state.Confirmations[origin.ConfirmationID].Shown
}

// noChannel is the confirmation_channel_unavailable of an action the
// policy wants confirmed when no channel can ask a human: it says why
// each channel is closed and names what opens one (details.fix): the
// client's form when the client shows forms but the policy does not trust
// it (never on live), else the CLI channel.
func (u *userActor) noChannel(p messages.Policy, confirmedBy string, origin messages.Origin) *messages.Error {
	cli := "restart the server with `" + messages.ConfirmCLIFix + "` and approve with `guarded-exchange confirm approve`"
	form, fix := "this MCP client does not show forms (it declared no form elicitation)", messages.ConfirmCLIFix
	next := cli + ", or use an MCP client that shows forms (form elicitation)"
	switch {
	case origin.FormElicitation && u.venue == messages.VenueLive:
		form, next = "the client's form is never trusted on live", cli
	case origin.FormElicitation:
		fix = messages.TrustClientUIFix(u.state.User)
		form, next = "the policy does not trust the client's form (trust_client_ui is false)", "let the client's form confirm with `"+fix+"`, or "+cli
	}
	d := channelDetails(p, confirmedBy, origin.FormElicitation)
	d["fix"] = fix
	return &messages.Error{Code: messages.CodeConfirmationChannelUnavailable,
		Message: "the policy (" + confirmedBy + ") requires a human to confirm this action, and no confirmation channel is set up: " + form +
			", and the server runs without GX_CONFIRM_CLI_ENABLED=true; nothing was sent",
		NextStep: "a human, outside the chat: " + next + "; or change " + confirmedBy,
		Details:  d}
}
