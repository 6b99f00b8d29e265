package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Channel 1 of docs/tools.md "Confirmation": the client's own UI.
//
// A trading command carries ClientUI only when the calling client declared
// form elicitation. When the user actor parks the action for that channel
// (the effective policy trusts the client UI, never on live), the tool
// asks the human through the client, in a form built from the server's own
// record (shown_to_user) with one required boolean:
//   - protocol 2026-07-28: the call answers input_required (MRTR) with the
//     form and a sealed requestState (confirmstate.go); the client asks the
//     human and calls again with the answer and the state;
//   - older protocols: the handler sends a classic elicitation/create on
//     the session and waits for the answer, at most until the
//     confirmation expires.
//
// Accept with the box ticked approves: the MCP layer sends the decision
// (channel client_ui) and the tool answers what the action did. Decline,
// cancel, an unticked box, a failed or missing answer within the TTL
// reject it: the user actor journals the decision, and the confirmation can
// no longer be approved anywhere. The agent sees only the outcome, never
// the form or the human's answer. A confirmation parked for the CLI
// answers status pending (pendingResult).

// formKey names the one input request of a confirmation form.
const formKey = "confirm"

// approveField is the form's one required boolean.
const approveField = "approve"

// approveSchema is the form's schema: one required boolean, unticked by
// default (a flat object of primitives, docs/tools.md "Confirmation").
var approveSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		approveField: map[string]any{
			"type":        "boolean",
			"title":       "Approve and execute exactly this plan",
			"description": "Tick the box and submit to approve. Anything else rejects the action.",
			"default":     false,
		},
	},
	"required": []any{approveField},
}

// decideTimeout bounds the journaling of a reject decided after the
// client went away (its call's context is gone by then).
const decideTimeout = 10 * time.Second

// answerCheck checks the user actor's answer to a trading command (or to
// an approval, which answers the same) and passes it on: answerOf[T].
type answerCheck func(res any, err error) (any, error)

// trade sends a trading command to the user actor and answers the call:
// the tool's own answer; status pending for a confirmation the CLI decides;
// or, for one the client's UI decides, the human is asked (MRTR on
// 2026-07-28, elicitation/create before). A repeated MRTR call (it carries
// a requestState) is the human's answer to such a form: it decides the
// confirmation the sealed state names and sends no new command. args are
// the command's parsed arguments, bound into the state.
func (s *server) trade(ctx context.Context, c *call, tool string, args any, cmd messages.Command, check answerCheck) (any, error) {
	digest := callDigest(tool, args)
	if c.req != nil && c.req.Params != nil && c.req.Params.RequestState != "" {
		if err := s.opts.Backend.Validate(cmd); err != nil {
			return nil, err
		}
		return s.formAnswered(ctx, c, tool, digest, check)
	}
	res, err := s.opts.Backend.Handle(ctx, cmd, messages.ActorAgent)
	if err != nil {
		return nil, err
	}
	p, parked := res.(*messages.ConfirmationPending)
	if !parked {
		return check(res, nil)
	}
	if p.Channel != messages.ConfirmChannelClientUI || !c.canElicitForm() || !s.formTrusted(ctx, c, p.Venue) {
		// The CLI decides; or the confirmation waits for the form of
		// another client (a repeat of a call made there); or the form
		// may no longer decide it.
		return pendingResult(s.pending(p)), nil
	}
	st := formState{User: c.principal.User, TokenID: c.principal.TokenID, Tool: tool, CallDigest: digest,
		ConfirmationID: p.ConfirmationID, ActorDigest: p.ArgsSHA256, Env: p.Venue, Expires: p.ExpiresAt.UnixMilli()}
	form := s.formParams(p.ConfirmationID, p.ExpiresAt, p.ShownToUser)
	if modernClient(c.req) {
		wire, err := s.sealer.seal(st)
		if err != nil {
			return nil, messages.Internal(err)
		}
		return inputRequiredResult(sdk.InputRequestMap{formKey: form}, wire), nil
	}
	return s.elicitLegacy(ctx, c, p, st, form, check)
}

// formTrusted reports whether the client's form may still decide a
// confirmation parked on venue, asked
// before the human is asked (again: a repeat of a parked call answers the
// same confirmation): the effective policy trusts the client UI now (it
// never does on live), and p was parked on the venue the server runs on.
// The user actor checks the same at the decision; this keeps a human from
// answering a form whose answer would be refused. Any doubt (the policy
// cannot be read) shows no form.
func (s *server) formTrusted(ctx context.Context, c *call, venue string) bool {
	if s.opts.Venue != "" && venue != s.opts.Venue {
		return false
	}
	v, err := s.policyView(ctx, &messages.ShowPolicyRequest{User: c.principal.User})
	return err == nil && v.Effective.TrustClientUI
}

// pending is the docs/tools.md "Confirmation" pending answer of a parked action.
func (s *server) pending(p *messages.ConfirmationPending) Pending {
	next := "a human approves or rejects it outside the chat (`guarded-exchange confirm approve|reject " + p.ConfirmationID +
		"`); watch it with get_confirmation_status, withdraw it with cancel_confirmation; it expires at expires_at"
	if p.Channel == messages.ConfirmChannelClientUI {
		next = "the human is asked in the client that made the first call; watch it with get_confirmation_status, " +
			"withdraw it with cancel_confirmation; it expires at expires_at"
	}
	venue := p.Venue
	if venue == "" {
		venue = s.opts.Venue
	}
	return Pending{Venue: venue, ConfirmationID: p.ConfirmationID, ExpiresAt: p.ExpiresAt.UTC(), ShownToUser: p.ShownToUser, ConfirmedBy: p.ConfirmedBy, NextStep: next}
}

// formAnswered handles the repeated call of an MRTR form: the sealed state
// must open for this principal, tool and call; then the human's answer
// decides. Without an answer the form is asked again (docs/tools.md
// "Confirmation": missing input is asked for, not failed).
func (s *server) formAnswered(ctx context.Context, c *call, tool, digest string, check answerCheck) (any, error) {
	if !c.canElicitForm() {
		return nil, stateRefused(stateReasonForeign)
	}
	st, e := s.sealer.open(c.req.Params.RequestState, c.principal, tool, digest, s.opts.Venue)
	if e != nil {
		return nil, e
	}
	resp, ok := c.req.Params.InputResponses[formKey]
	if !ok {
		res, err := s.opts.Backend.Handle(ctx, &messages.ConfirmationStatusCommand{User: st.User, ConfirmationID: st.ConfirmationID}, messages.ActorAgent)
		if err != nil {
			return nil, err
		}
		cs, ok := res.(*messages.ConfirmationStatus)
		if !ok {
			return nil, messages.Internal(fmt.Errorf("unexpected answer %T", res))
		}
		if cs.Status != messages.ConfirmStatusPending {
			return s.outcome(cs), nil
		}
		if !s.formTrusted(ctx, c, st.Env) {
			return pendingResult(s.pending(&messages.ConfirmationPending{ConfirmationID: cs.ConfirmationID, Channel: cs.Channel,
				Tool: cs.Tool, Venue: st.Env, ExpiresAt: cs.ExpiresAt, ShownToUser: cs.ShownToUser, ConfirmedBy: cs.ConfirmedBy})), nil
		}
		wire, err := s.sealer.seal(st)
		if err != nil {
			return nil, messages.Internal(err)
		}
		return inputRequiredResult(sdk.InputRequestMap{formKey: s.formParams(cs.ConfirmationID, cs.ExpiresAt, cs.ShownToUser)}, wire), nil
	}
	er, _ := resp.(*sdk.ElicitResult)
	return s.decide(ctx, c, st, approved(er), check)
}

// elicitLegacy asks the human with a classic elicitation/create on the
// session (protocols before 2026-07-28) and waits for the answer until
// the confirmation expires; then decides. One form at a time is open per
// confirmation: a repeat of the call while the human has the form
// answers status pending (p) and opens nothing.
func (s *server) elicitLegacy(ctx context.Context, c *call, p *messages.ConfirmationPending, st formState, form *sdk.ElicitParams, check answerCheck) (any, error) {
	ss, ok := c.req.GetSession().(*sdk.ServerSession)
	if !ok || ss == nil {
		return s.decide(ctx, c, st, false, check)
	}
	release, first := legacyForms.claim(st.User, st.ConfirmationID)
	if !first {
		return pendingResult(s.pending(p)), nil
	}
	defer release()
	// The wait ends a moment before the confirmation expires, so that a
	// form nobody answered is journaled as this channel's rejection.
	ectx, cancel := context.WithDeadline(ctx, time.UnixMilli(st.Expires).Add(-legacyMargin))
	er, err := ss.Elicit(ectx, form)
	cancel()
	if err != nil {
		// No answer within the TTL, a client that failed or went away:
		// the action is rejected. The error is not passed on: it may
		// describe the human's client.
		s.logger.Info("confirmation form not answered; rejecting", "confirmation_id", st.ConfirmationID, "cause", err.Error())
		er = nil
	}
	yes := approved(er)
	res, err := s.decide(ctx, c, st, yes, check)
	if err == nil || yes {
		return res, err
	}
	// The rejection came too late to be a decision (the confirmation
	// expired, or was decided or withdrawn elsewhere meanwhile): the
	// call answers what became of it.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
	defer scancel()
	sres, serr := s.opts.Backend.Handle(sctx, &messages.ConfirmationStatusCommand{User: st.User, ConfirmationID: st.ConfirmationID}, messages.ActorAgent)
	if cs, isStatus := sres.(*messages.ConfirmationStatus); serr == nil && isStatus && cs.Status != messages.ConfirmStatusPending {
		return s.outcome(cs), nil
	}
	return nil, err
}

// openForms are the confirmations whose classic elicitation form is open
// now, each named by user and confirmation id. It is safe for concurrent
// use.
type openForms struct {
	mu   sync.Mutex
	open map[string]struct{}
}

// legacyForms are the open classic forms of the whole process: a
// confirmation can be repeated on another session of the same user (each
// relayed or HTTP session has its own server), and the human still gets
// one form.
var legacyForms = &openForms{open: map[string]struct{}{}}

// claim marks the form of a confirmation open. first is false when it is
// open already; otherwise release marks it closed again.
func (f *openForms) claim(user, confirmationID string) (release func(), first bool) {
	k := user + "\x00" + confirmationID
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.open[k]; busy {
		return nil, false
	}
	f.open[k] = struct{}{}
	return func() {
		f.mu.Lock()
		delete(f.open, k)
		f.mu.Unlock()
	}, true
}

// legacyMargin is how long before the confirmation's expiry a classic
// elicitation stops waiting.
const legacyMargin = time.Second

// approved reports whether the human accepted the form with the box
// ticked. Anything else (decline, cancel, an unticked or missing box, a
// value that is not a boolean) is a rejection.
func approved(er *sdk.ElicitResult) bool {
	if er == nil || er.Action != "accept" {
		return false
	}
	v, ok := er.Content[approveField].(bool)
	return ok && v
}

// decide sends the human's decision (channel client_ui) to the user
// actor. An approval answers what the action did (the tool's own answer);
// a rejection answers the confirmation's status, without the human's
// words or which of decline, cancel or unticked it was.
func (s *server) decide(ctx context.Context, c *call, st formState, approve bool, check answerCheck) (any, error) {
	cmd := &messages.DecideConfirmationCommand{User: st.User, ConfirmationID: st.ConfirmationID,
		Decision: messages.DecisionReject, Channel: messages.ConfirmChannelClientUI, ArgsSHA256: st.ActorDigest}
	if approve {
		cmd.Decision = messages.DecisionApprove
		return check(s.opts.Backend.Handle(ctx, cmd, messages.ActorAgent))
	}
	if ctx.Err() != nil {
		// The call is gone (the client cancelled it or disconnected);
		// the rejection is journaled all the same.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
		defer cancel()
	}
	res, err := s.opts.Backend.Handle(ctx, cmd, messages.ActorAgent)
	if err != nil {
		return nil, err
	}
	cs, ok := res.(*messages.ConfirmationStatus)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("unexpected answer %T", res))
	}
	return s.outcome(cs), nil
}

// confirmOutcome is the answer of a trading call whose confirmation ended
// without being executed through this call (rejected, expired, cancelled,
// or decided elsewhere).
type confirmOutcome struct {
	Status         string `json:"status"`
	Venue          string `json:"venue"`
	ConfirmationID string `json:"confirmation_id"`
	Tool           string `json:"tool"`
	DecidedChannel string `json:"decided_channel,omitempty"`
	// Result is the action's answer when it was executed (decided on the
	// other channel).
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *messages.Error `json:"error,omitempty"`
	NextStep string          `json:"next_step"`
}

func (s *server) outcome(cs *messages.ConfirmationStatus) confirmOutcome {
	o := confirmOutcome{Status: cs.Status, Venue: s.opts.Venue, ConfirmationID: cs.ConfirmationID, Tool: cs.Tool,
		DecidedChannel: cs.DecidedChannel, Result: cs.Result, Error: cs.Error}
	switch cs.Status {
	case messages.ConfirmStatusRejected:
		o.NextStep = "the human did not approve this action; nothing was sent. Do not repeat it unless the human asks for it"
	case messages.ConfirmStatusExpired:
		o.NextStep = "nobody approved this action in time; nothing was sent. Do not repeat it unless the human asks for it"
	default:
		o.NextStep = "see get_confirmation_status for what happened to this action"
	}
	return o
}

// formParams builds the form the human sees: the server's own record of
// the action (its summary and every field of its plan) and one box.
func (s *server) formParams(id string, expires time.Time, shown *messages.ShownToUser) *sdk.ElicitParams {
	return &sdk.ElicitParams{Mode: "form", Message: formMessage(id, expires, shown), RequestedSchema: approveSchema}
}

// formMessage renders shown_to_user for a human: a heading, the server's
// one-line summary, then the plan as sorted "field: value" lines.
func formMessage(id string, expires time.Time, shown *messages.ShownToUser) string {
	var b strings.Builder
	b.WriteString("guarded-exchange asks you to approve an action the AI agent requested.\n\n")
	if shown != nil {
		fmt.Fprintf(&b, "%s\n\n", messages.Printable(shown.Summary))
		fmt.Fprintf(&b, "tool: %s\nuser: %s\nvenue: %s\nrisk increasing: %t\n",
			messages.Printable(shown.Tool), messages.Printable(shown.User), messages.Printable(shown.Venue), shown.RiskIncreasing)
		var plan map[string]any
		if json.Unmarshal(mustJSON(shown), &plan) == nil {
			for _, k := range []string{"tool", "user", "venue", "summary", "risk_increasing"} {
				delete(plan, k)
			}
			for _, line := range flatten("", plan) {
				b.WriteString(line)
				b.WriteByte('\n')
			}
		}
	}
	fmt.Fprintf(&b, "\nconfirmation: %s\nexpires: %s\n\n", id, expires.UTC().Format("2006-01-02 15:04:05 MST"))
	b.WriteString("This is the server's own plan, not the agent's description. Tick the box and submit to execute it; " +
		"declining, cancelling, leaving the box unticked or not answering rejects it.")
	return b.String()
}

// planSkip are fields of a plan that say nothing to the human (a dry
// run's own status and bookkeeping), and the text the agent chose itself
// (its idempotency key, at every level of the plan): the form shows the
// server's plan only, so nothing in it is the model's to word.
var planSkip = map[string]bool{"status": true, "result_source": true, "venue": true, "idempotency_key": true}

// flatten lists a JSON value as "path: value" lines, keys sorted. Values
// may be the exchange's text (a cancel-all row's order id): control and
// format characters are replaced before a human reads them.
func flatten(prefix string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if planSkip[k] {
				continue
			}
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, flatten(p, x[k])...)
		}
		return out
	case []any:
		var out []string
		for i, e := range x {
			out = append(out, flatten(prefix+"["+strconv.Itoa(i)+"]", e)...)
		}
		return out
	case nil:
		return nil
	default:
		return []string{messages.Printable(prefix) + ": " + messages.Printable(fmt.Sprint(x))}
	}
}
