package shard

// The wire between a member's front and a shard (docs/cluster.md "The
// wire"): one call is one JSON envelope {method, per-method fields} in the
// bytes a Transport carries (a wrapperspb.BytesValue across members), and
// one answer is {result, type} or {error}. Commands travel as the control
// socket sends them: their wire name (messages.Commands) and their JSON
// body.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Target is what a shard serves to the other members: the calls of a
// member's HTTP front (mcp.Backend's user calls), its control socket
// (control.Backend) and its authentication. *actors.System is one.
type Target interface {
	Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error)
	Authenticate(token string) (user, tokenID string, err error)
	CallerProfile(user string) (messages.Profile, error)
	ToolCalled(ctx context.Context, call *messages.ToolCalled, durable bool) (wait func(context.Context) error, err error)
	Account(ctx context.Context, req messages.AccountRequest) (any, error)
	MyJournal(user string, before uint64, limit int) messages.JournalPage
	SessionEvent(ctx context.Context, user string, kind messages.SessionEventKind)
	WaitForUpdate(ctx context.Context, r *messages.WaitForUpdateRequest) (*messages.UpdateAnswer, error)
	CallsRateLimited(ev *messages.CallsRateLimitedEvent) error
}

// SessionsRefusedTarget is a Target that also journals the HTTP front's
// refused sessions (*actors.System is one); Serve answers the
// sessions_refused method only for such a Target.
type SessionsRefusedTarget interface {
	SessionsRefused(ev *messages.SessionsRefusedEvent) error
}

// FrontSessionsTarget is a Target that keeps its agent sessions by the
// member whose front holds them (*actors.System is one, docs/cluster.md
// "Sessions and the dead-man switch"); Serve gives it a front's report of
// a user's sessions.
type FrontSessionsTarget interface {
	FrontSessionsChanged(ctx context.Context, r *messages.FrontSessions) error
}

// Transport carries one encoded call to shard number shard and returns
// the shard's encoded answer. An error is a transport failure (no answer
// came); the call's own errors travel inside the answer.
type Transport func(ctx context.Context, shard int, call []byte) ([]byte, error)

// The methods of the wire, one per Target method, plus the second half of
// a durable ToolCalled and the optional sessions_refused.
const (
	methodSubmit          = "submit"
	methodAuthenticate    = "authenticate"
	methodCallerProfile   = "caller_profile"
	methodToolCalled      = "tool_called"
	methodToolCalledWait  = "tool_called_wait"
	methodAccount         = "account"
	methodMyJournal       = "my_journal"
	methodSessionEvent    = "session_event"
	methodWaitForUpdate   = "wait_for_update"
	methodCallsRateLimit  = "calls_rate_limited"
	methodSessionsRefused = "sessions_refused"
)

// Wire reasons (details.reason of an internal_error).
const (
	// ReasonBadCall: the shard could not read the call (garbage,
	// truncated, unknown method or command).
	ReasonBadCall = "bad_call"
	// ReasonBadAnswer: the member could not read the shard's answer.
	ReasonBadAnswer = "bad_answer"
	// ReasonShardUnreachable: no answer came from the shard (the
	// transport failed); the call may or may not have been served.
	ReasonShardUnreachable = "shard_unreachable"
	// ReasonNotRoutable: a command that names no user and that no merge
	// of every shard's answers can serve.
	ReasonNotRoutable = "not_routable"
	// ReasonServePanic: serving the call panicked (a fault of the server,
	// never of the call's bytes: FuzzServe looks for it).
	ReasonServePanic = "serve_panic"
	// ReasonWaitLost: the second half of a durable tool call found no
	// first half on the shard (it moved, or the wait expired).
	ReasonWaitLost = "tool_call_wait_lost"
)

// call is one encoded call: the method and its fields.
type call struct {
	Method string `json:"method"`
	// Submit: the command's wire name and JSON body (as on the control
	// socket), and the origin the member's channel established.
	Type   string           `json:"type,omitempty"`
	Body   json.RawMessage  `json:"body,omitempty"`
	Origin *messages.Origin `json:"origin,omitempty"`
	// Authenticate: the bearer token (never put in an answer or a log).
	Token string `json:"token,omitempty"`
	// CallerProfile, MyJournal, SessionEvent: the user.
	User string `json:"user,omitempty"`
	// ToolCalled.
	Call    *messages.ToolCalled `json:"call,omitempty"`
	Durable bool                 `json:"durable,omitempty"`
	// tool_called_wait: the first half's wait id.
	WaitID string `json:"wait_id,omitempty"`
	// Account: the request's kind (accountKinds) and Body.
	Kind string `json:"kind,omitempty"`
	// MyJournal.
	Before uint64 `json:"before,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	// SessionEvent: the event; for an open or a close reported by a
	// member's front (Client.WithFront), the front's report instead.
	Event    messages.SessionEventKind `json:"event,omitempty"`
	Sessions *messages.FrontSessions   `json:"sessions,omitempty"`
	// WaitForUpdate.
	Wait *messages.WaitForUpdateRequest `json:"wait,omitempty"`
	// CallsRateLimited, SessionsRefused.
	RateLimited     *messages.CallsRateLimitedEvent `json:"rate_limited,omitempty"`
	SessionsRefused *messages.SessionsRefusedEvent  `json:"sessions_refused,omitempty"`
}

// answer is one encoded answer: Error, or Result with its concrete type
// (resultTypes) when it has one.
type answer struct {
	Error  *messages.Error `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Type   string          `json:"type,omitempty"`
	// Authenticate.
	User    string `json:"user,omitempty"`
	TokenID string `json:"token_id,omitempty"`
	// tool_called with durable: the id of the wait the shard keeps.
	WaitID string `json:"wait_id,omitempty"`
}

// accountKinds tags an AccountRequest by its concrete type.
var accountKinds = map[string]func() messages.AccountRequest{
	"balances":      func() messages.AccountRequest { return &messages.GetBalancesRequest{} },
	"positions":     func() messages.AccountRequest { return &messages.GetPositionsRequest{} },
	"open_orders":   func() messages.AccountRequest { return &messages.GetOpenOrdersRequest{} },
	"order_history": func() messages.AccountRequest { return &messages.GetOrderHistoryRequest{} },
	"trades":        func() messages.AccountRequest { return &messages.GetTradesRequest{} },
}

func accountKind(req messages.AccountRequest) (string, bool) {
	switch req.(type) {
	case *messages.GetBalancesRequest:
		return "balances", true
	case *messages.GetPositionsRequest:
		return "positions", true
	case *messages.GetOpenOrdersRequest:
		return "open_orders", true
	case *messages.GetOrderHistoryRequest:
		return "order_history", true
	case *messages.GetTradesRequest:
		return "trades", true
	}
	return "", false
}

// resultTypes are the concrete answer types a result is decoded into, by
// their Go type name: every command's Result and the account answers. A
// command whose answer varies (confirm.decide answers a confirmation's
// status or the executed tool's answer) is thus decoded into what the
// shard answered, not into one declared type.
var resultTypes = func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	add := func(v any) {
		if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer && t.Elem() != reflect.TypeOf(json.RawMessage{}) {
			m[t.String()] = t.Elem()
		}
	}
	for _, c := range messages.Commands {
		add(c.Result())
	}
	for _, v := range []any{&messages.WalletBalance{}, &messages.Page[messages.Position]{}, &messages.Page[messages.Order]{},
		&messages.Page[messages.Execution]{}, &messages.UpdateAnswer{}, &messages.ConfirmationStatus{}} {
		add(v)
	}
	return m
}()

// Serve decodes one call, runs it on t and encodes its answer. It never
// panics on bad bytes: they are answered with an internal_error (reason
// bad_call) that echoes nothing of the call.
func Serve(ctx context.Context, t Target, callBytes []byte) (out []byte) {
	defer func() {
		if p := recover(); p != nil {
			e := messages.Internal(fmt.Errorf("shard: serve: panic %v", p))
			e.Details = map[string]any{"reason": ReasonServePanic}
			out = encodeAnswer(answer{Error: e})
		}
	}()
	var c call
	if err := strictJSON(callBytes, &c); err != nil {
		return encodeAnswer(answer{Error: badCall(errors.New("not a call"))})
	}
	return encodeAnswer(serve(ctx, t, &c))
}

func serve(ctx context.Context, t Target, c *call) answer {
	switch c.Method {
	case methodSubmit:
		cmd, ok := messages.NewCommand(c.Type)
		if !ok || c.Origin == nil {
			return answer{Error: badCall(errors.New("unknown command or no origin"))}
		}
		// A confirmation's execution and a form's answer are origins the
		// user's actor sets itself, never a channel (messages.Origin):
		// from the wire they would pass a call as approved by a human.
		if c.Origin.ConfirmationID != "" || c.Origin.FormAnswer {
			return answer{Error: badCall(errors.New("an origin only the shard sets"))}
		}
		if len(c.Body) > 0 {
			if err := strictJSON(c.Body, cmd); err != nil {
				return answer{Error: badCall(errors.New("bad command body"))}
			}
		}
		return result(t.Submit(ctx, cmd, *c.Origin))
	case methodAuthenticate:
		user, id, err := t.Authenticate(c.Token)
		if err != nil {
			return answer{Error: messages.AsError(err)}
		}
		return answer{User: user, TokenID: id}
	case methodCallerProfile:
		p, err := t.CallerProfile(c.User)
		return result(p, err)
	case methodToolCalled:
		if c.Call == nil {
			return answer{Error: badCall(errors.New("no tool call"))}
		}
		wait, err := t.ToolCalled(ctx, c.Call, c.Durable)
		if err != nil {
			return answer{Error: messages.AsError(err)}
		}
		if wait == nil {
			return answer{}
		}
		return answer{WaitID: waits.keep(wait)}
	case methodToolCalledWait:
		wait := waits.take(c.WaitID)
		if wait == nil {
			return answer{Error: waitLost()}
		}
		if err := wait(ctx); err != nil {
			return answer{Error: messages.AsError(err)}
		}
		return answer{}
	case methodAccount:
		mk, ok := accountKinds[c.Kind]
		if !ok {
			return answer{Error: badCall(errors.New("unknown account request"))}
		}
		req := mk()
		if err := strictJSON(c.Body, req); err != nil {
			return answer{Error: badCall(errors.New("bad account request"))}
		}
		return result(t.Account(ctx, req))
	case methodMyJournal:
		return result(t.MyJournal(c.User, c.Before, c.Limit), nil)
	case methodSessionEvent:
		if r := c.Sessions; r != nil {
			if ft, ok := t.(FrontSessionsTarget); ok {
				return result(nil, ft.FrontSessionsChanged(ctx, r))
			}
			t.SessionEvent(ctx, r.User, r.Event)
			return answer{}
		}
		t.SessionEvent(ctx, c.User, c.Event)
		return answer{}
	case methodWaitForUpdate:
		if c.Wait == nil {
			return answer{Error: badCall(errors.New("no wait request"))}
		}
		return result(t.WaitForUpdate(ctx, c.Wait))
	case methodCallsRateLimit:
		if c.RateLimited == nil {
			return answer{Error: badCall(errors.New("no event"))}
		}
		return result(nil, t.CallsRateLimited(c.RateLimited))
	case methodSessionsRefused:
		sr, ok := t.(SessionsRefusedTarget)
		if !ok || c.SessionsRefused == nil {
			return answer{Error: badCall(errors.New("sessions_refused not served"))}
		}
		return result(nil, sr.SessionsRefused(c.SessionsRefused))
	}
	return answer{Error: badCall(errors.New("unknown method"))}
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data, as the control socket does: a field this shard does not
// know (a member of another version) is refused, never dropped.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// result encodes a Target's answer.
func result(v any, err error) answer {
	if err != nil {
		return answer{Error: messages.AsError(err)}
	}
	if v == nil || (reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil()) {
		return answer{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return answer{Error: messages.Internal(fmt.Errorf("shard: encode %T: %w", v, err))}
	}
	a := answer{Result: b}
	if _, ok := resultTypes[reflect.TypeOf(v).String()]; ok {
		a.Type = reflect.TypeOf(v).String()
	}
	return a
}

func encodeAnswer(a answer) []byte {
	b, err := json.Marshal(a)
	if err != nil {
		// An *messages.Error always encodes; a Details value that does not
		// is dropped rather than lost with the whole answer.
		b, _ = json.Marshal(answer{Error: messages.Internal(err)})
	}
	return b
}

// badCall is the answer to bytes the shard cannot read. It names no part
// of the call: a call may carry a bearer token.
func badCall(cause error) *messages.Error {
	return &messages.Error{
		Code:     messages.CodeInternalError,
		Message:  "the shard could not read the call",
		NextStep: "retry; if it persists, check that every member runs the same version",
		Details:  map[string]any{"reason": ReasonBadCall},
		Err:      cause,
	}
}

func waitLost() *messages.Error {
	return &messages.Error{
		Code:     messages.CodeInternalError,
		Message:  "the shard no longer knows this tool call's record: it may or may not be durable",
		NextStep: "check get_my_journal before repeating a change",
		Details:  map[string]any{"reason": ReasonWaitLost},
	}
}

// waitKeep is how long a shard keeps the wait of a durable tool call for
// its second half; a member that never asks lets it go then.
const waitKeep = 5 * time.Minute

// waitTable holds the waits of durable tool calls between the two halves
// of the call (docs/cluster.md "The wire").
type waitTable struct {
	mu sync.Mutex
	m  map[string]func(context.Context) error
}

var waits = &waitTable{m: map[string]func(context.Context) error{}}

func (w *waitTable) keep(wait func(context.Context) error) string {
	id := hex.EncodeToString(randomID())
	w.mu.Lock()
	w.m[id] = wait
	w.mu.Unlock()
	time.AfterFunc(waitKeep, func() { w.take(id) })
	return id
}

func (w *waitTable) take(id string) func(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	wait := w.m[id]
	delete(w.m, id)
	return wait
}

func randomID() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

// Client is a member's handle on every shard of the cluster: each call is
// routed by its user (or token, or token id) to its shard (package
// route) and carried by the Transport. Its methods mirror Target's, so a
// *Client serves where a single process uses *actors.System.
type Client struct {
	count int
	tr    Transport
	// front is the member id session events name (WithFront), and
	// sessions its count of each user's open sessions.
	front    string
	sessions *frontReports
	// key seals calls and opens answers (WithCallKey); nil: calls travel
	// unsealed, as Serve reads them (a Transport that calls Serve in the
	// same process).
	key []byte
}

// WithFront returns a copy of cl whose session events name front, the
// id of the member whose HTTP front holds the sessions (member.ID), so
// that a shard can end them when that member leaves the cluster.
func (cl *Client) WithFront(front string) *Client {
	c := *cl
	c.front = front
	c.sessions = &frontReports{open: map[string]int{}, last: map[string]uint64{}}
	return &c
}

// NewClient returns a Client for a cluster of count shards. Across
// members it needs WithCallKey: a host refuses every unsealed call.
func NewClient(count int, tr Transport, opts ...ClientOption) *Client {
	c := &Client{count: max(count, 1), tr: tr}
	for _, o := range opts {
		o(c)
	}
	return c
}

// noContextTimeout bounds the calls of the methods that take no context
// (CallerProfile, MyJournal, CallsRateLimited,
// SessionsRefused).
const noContextTimeout = 30 * time.Second

// do sends c to shard and decodes its answer.
func (cl *Client) do(ctx context.Context, shard int, c *call) (*answer, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, messages.Internal(fmt.Errorf("shard: encode call %s: %w", c.Method, err))
	}
	var mac []byte
	if cl.key != nil {
		if len(cl.key) < MinCallKeySize {
			return nil, messages.Internal(errNoKey)
		}
		mac = callMAC(cl.key, shard, b)
		b = seal(mac, b)
	}
	out, err := cl.tr(ctx, shard, b)
	if err != nil {
		var me *messages.Error
		if errors.As(err, &me) {
			return nil, me
		}
		return nil, &messages.Error{
			Code:     messages.CodeInternalError,
			Message:  "the user's shard did not answer; the call may or may not have been served",
			NextStep: "retry; a change is safe to repeat with the same idempotency key or client order id",
			Details:  map[string]any{"reason": ReasonShardUnreachable, "shard": shard},
			Err:      err,
		}
	}
	if cl.key != nil {
		opened, me := openAnswer(cl.key, mac, out)
		if me != nil {
			return nil, me
		}
		out = opened
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, &messages.Error{
			Code:     messages.CodeInternalError,
			Message:  "the shard's answer could not be read; the call may or may not have been served",
			NextStep: "retry; if it persists, check that every member runs the same version",
			Details:  map[string]any{"reason": ReasonBadAnswer},
			Err:      err,
		}
	}
	if a.Error != nil {
		return nil, a.Error
	}
	return &a, nil
}

// decode decodes an answer's result: into its own type when the shard
// named a known one, else into fallback (nil: a nil result).
func decode(a *answer, fallback func() any) (any, error) {
	if len(a.Result) == 0 || string(a.Result) == "null" {
		return nil, nil
	}
	var v any
	if t, ok := resultTypes[a.Type]; ok {
		v = reflect.New(t).Interface()
	} else if fallback != nil {
		v = fallback()
	} else {
		v = new(json.RawMessage)
	}
	if err := json.Unmarshal(a.Result, v); err != nil {
		return nil, &messages.Error{Code: messages.CodeInternalError, Message: "the shard's answer could not be read",
			NextStep: "retry; if it persists, check that every member runs the same version",
			Details:  map[string]any{"reason": ReasonBadAnswer}, Err: err}
	}
	return v, nil
}

func noContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), noContextTimeout)
}

// Submit routes a command to its user's shard: a revoke by its token id
// (route.OfTokenID: the shard that issued it), any other user command by
// its user (route.OfUser). admin.user.list asks every shard and merges
// the lists. A command naming no user that no merge serves is refused
// with internal_error, reason not_routable.
func (cl *Client) Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error) {
	name := cmd.CommandName()
	if _, ok := messages.CommandByName(name); !ok {
		return nil, messages.InvalidParams("type", "not a command this server handles")
	}
	// The control socket's encoding: the one that carries a key's secret
	// (a command's own MarshalJSON redacts it).
	body, err := messages.EncodeCommand(cmd)
	if err != nil {
		return nil, messages.Internal(fmt.Errorf("shard: encode %s: %w", name, err))
	}
	c := &call{Method: methodSubmit, Type: name, Body: body, Origin: &origin}
	var shard int
	switch m := cmd.(type) {
	case *messages.RevokeTokenRequest:
		shard = route.OfTokenID(m.ID, cl.count)
	case *messages.ListUsersRequest:
		return cl.listUsers(ctx, c)
	case messages.UserCommand:
		shard = route.OfUser(m.TargetUser(), cl.count)
	default:
		return nil, &messages.Error{
			Code:     messages.CodeInternalError,
			Message:  "this command names no user, so no shard of the cluster serves it",
			NextStep: "send it for one user, or to a single-process server",
			Details:  map[string]any{"reason": ReasonNotRoutable},
		}
	}
	a, err := cl.do(ctx, shard, c)
	if err != nil {
		return nil, tradingUnknown(name, err)
	}
	return decode(a, func() any { return messages.NewResult(name) })
}

// tradingUnknown turns the error of a trading call that may have been
// served (no answer came, or one that could not be read or opened) into
// outcome_unknown, as a local server answers a trading call whose wait
// ended: the shard reconciles it, and it must not be sent again blindly.
// Any other error is returned as it is.
func tradingUnknown(name string, err error) error {
	var me *messages.Error
	if !strings.HasPrefix(name, "trade.") || !errors.As(err, &me) || me.Code != messages.CodeInternalError {
		return err
	}
	reason, _ := me.Details["reason"].(string)
	switch reason {
	case ReasonShardUnreachable, ReasonBadAnswer, ReasonAnswerNotAuthenticated:
	default:
		return err
	}
	return &messages.Error{Code: messages.CodeOutcomeUnknown,
		Message:  "the user's shard did not answer the trading call; it may have reached the exchange and is reconciled there, never resent",
		NextStep: "do not send it again; check get_open_orders, get_order_history and get_my_journal in a little while",
		Details:  map[string]any{"reason": reason}, Err: me}
}

// Handle is Submit with the origin of a journal actor name (as
// actors.System.Handle).
func (cl *Client) Handle(ctx context.Context, cmd messages.Command, origin string) (any, error) {
	return cl.Submit(ctx, cmd, messages.OriginOfActor(origin))
}

// Validate checks a trading command's arguments as Submit would on the
// shard (actors.ValidateCommand), here, before any hop.
func (cl *Client) Validate(cmd messages.Command) error { return actors.ValidateCommand(cmd) }

// listUsers asks every shard for its users and merges the lists, sorted by
// name. A shard that does not answer fails the whole list: a list that
// silently misses a shard's users would not be the cluster's.
func (cl *Client) listUsers(ctx context.Context, c *call) (any, error) {
	lists := make([]*messages.UserList, cl.count)
	errs := make([]error, cl.count)
	var wg sync.WaitGroup
	for i := range cl.count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := cl.do(ctx, i, c)
			if err != nil {
				errs[i] = err
				return
			}
			v, err := decode(a, func() any { return &messages.UserList{} })
			if l, ok := v.(*messages.UserList); ok && err == nil {
				lists[i] = l
				return
			}
			errs[i] = messages.AsError(err)
			if err == nil {
				errs[i] = messages.Internal(fmt.Errorf("shard %d: user list answered %T", i, v))
			}
		}()
	}
	wg.Wait()
	out := &messages.UserList{Users: []messages.UserSummary{}}
	for i := range cl.count {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out.Users = append(out.Users, lists[i].Users...)
	}
	slices.SortFunc(out.Users, func(a, b messages.UserSummary) int { return strings.Compare(a.User, b.User) })
	return out, nil
}

// authenticateTimeout bounds an Authenticate call: the HTTP front waits
// for it before anything else of a request.
const authenticateTimeout = 5 * time.Second

// Authenticate asks the token's shard (route.OfToken: tokens are drawn to
// route to their user's shard) for the token's user and id. A token that
// fails the cheap checks (actors.TokenWellFormed) is refused here, with
// the shard's own answer, and sent nowhere.
func (cl *Client) Authenticate(token string) (user, tokenID string, err error) {
	if !actors.TokenWellFormed(token) {
		return "", "", actors.Unauthenticated()
	}
	ctx, cancel := context.WithTimeout(context.Background(), authenticateTimeout)
	defer cancel()
	a, err := cl.do(ctx, route.OfToken(token, cl.count), &call{Method: methodAuthenticate, Token: token})
	if err != nil {
		return "", "", err
	}
	return a.User, a.TokenID, nil
}

// CallerProfile asks the user's shard for the user's profile.
func (cl *Client) CallerProfile(user string) (messages.Profile, error) {
	ctx, cancel := noContext()
	defer cancel()
	a, err := cl.do(ctx, route.OfUser(user, cl.count), &call{Method: methodCallerProfile, User: user})
	if err != nil {
		return "", err
	}
	var p messages.Profile
	if len(a.Result) > 0 {
		if err := json.Unmarshal(a.Result, &p); err != nil {
			return "", messages.Internal(err)
		}
	}
	return p, nil
}

// ToolCalled has the user's shard queue the call's tool_call record, and
// returns once it is queued: its refusal (the disk's reserve) comes before
// the call is handled, and the record is in the journal before the
// call's own records, as in one process. For a durable call the returned
// wait asks the shard, in a second call, to wait until the record is
// durable (docs/cluster.md "The wire").
func (cl *Client) ToolCalled(ctx context.Context, tc *messages.ToolCalled, durable bool) (wait func(context.Context) error, err error) {
	shard := route.OfUser(tc.User, cl.count)
	a, err := cl.do(ctx, shard, &call{Method: methodToolCalled, Call: tc, Durable: durable})
	if err != nil {
		return nil, err
	}
	if a.WaitID == "" {
		return nil, nil
	}
	id := a.WaitID
	return func(ctx context.Context) error {
		_, err := cl.do(ctx, shard, &call{Method: methodToolCalledWait, WaitID: id})
		return err
	}, nil
}

// Account sends an account read to the user's shard.
func (cl *Client) Account(ctx context.Context, req messages.AccountRequest) (any, error) {
	kind, ok := accountKind(req)
	if !ok {
		return nil, messages.Internal(fmt.Errorf("shard: account request %T has no wire kind", req))
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, messages.Internal(err)
	}
	a, err := cl.do(ctx, route.OfUser(messages.AccountUser(req), cl.count), &call{Method: methodAccount, Kind: kind, Body: body})
	if err != nil {
		return nil, err
	}
	return decode(a, nil)
}

// MyJournal asks the user's shard for a page of the user's records. Its
// signature has no error: a shard that does not answer gives an empty
// page (MyJournalContext tells the error).
func (cl *Client) MyJournal(user string, before uint64, limit int) messages.JournalPage {
	ctx, cancel := noContext()
	defer cancel()
	p, _ := cl.MyJournalContext(ctx, user, before, limit)
	return p
}

// MyJournalContext is MyJournal with a context and the call's error.
func (cl *Client) MyJournalContext(ctx context.Context, user string, before uint64, limit int) (messages.JournalPage, error) {
	a, err := cl.do(ctx, route.OfUser(user, cl.count), &call{Method: methodMyJournal, User: user, Before: before, Limit: limit})
	if err != nil {
		return messages.JournalPage{}, err
	}
	var p messages.JournalPage
	if len(a.Result) > 0 {
		if err := json.Unmarshal(a.Result, &p); err != nil {
			return messages.JournalPage{}, messages.Internal(err)
		}
	}
	return p, nil
}

// SessionEvent tells the user's shard about a session of the user. It
// returns when the shard took it (for SessionClosed, when the dead-man
// switch's cancels are done or ctx ends), so a caller's events arrive in
// their order. Without a front, a shard that does not answer loses the
// event, as a stopped process would.
//
// With a front (WithFront), an open or a close is reported as the count
// of the user's sessions the front holds after it (messages.FrontSessions),
// and a report whose answer does not come (the shard moving, a member
// gone) is sent again until the shard takes it, a newer report replaces
// it, or sessionReportWait passes: the shard takes a report once, so a
// session's end is not lost while its shard moves, and the dead-man
// switch still runs (docs/cluster.md "Sessions and the dead-man switch").
// A close waits for that, as it waits for the switch; an open's report is
// sent again in the background.
func (cl *Client) SessionEvent(ctx context.Context, user string, kind messages.SessionEventKind) {
	if cl.sessions == nil || (kind != messages.SessionOpened && kind != messages.SessionClosed) {
		_, _ = cl.do(ctx, route.OfUser(user, cl.count), &call{Method: methodSessionEvent, User: user, Event: kind})
		return
	}
	r, ok := cl.sessions.change(cl.front, user, kind)
	if !ok {
		return // a close without an open this front reported
	}
	if cl.reportSessions(ctx, r) == nil {
		return
	}
	if kind == messages.SessionOpened {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionReportWait)
			defer cancel()
			cl.resendSessions(ctx, r)
		}()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, sessionReportWait)
	defer cancel()
	cl.resendSessions(ctx, r)
}

// sessionReportWait bounds how long a front sends a report of a user's
// sessions again: longer than a shard's move (lock TTL, membership TTL and
// the new owner's start).
const sessionReportWait = 60 * time.Second

// frontReports is a front's count of each user's open sessions, and the
// number of each user's newest report.
type frontReports struct {
	mu   sync.Mutex
	seq  uint64
	open map[string]int
	last map[string]uint64
}

// change counts an open or a close of one of user's sessions and returns
// the report of it; a close with no session open is not reported.
func (f *frontReports) change(front, user string, kind messages.SessionEventKind) (*messages.FrontSessions, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.open[user]
	if kind == messages.SessionClosed {
		if n == 0 {
			return nil, false
		}
		n--
	} else {
		n++
	}
	f.seq++
	if n == 0 {
		delete(f.open, user)
	} else {
		f.open[user] = n
	}
	f.last[user] = f.seq
	return &messages.FrontSessions{User: user, Front: front, Event: kind, Open: n, Seq: f.seq}, true
}

// taken notes that the shard took r: the user's count needs no report
// until it changes again.
func (f *frontReports) taken(r *messages.FrontSessions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last[r.User] == r.Seq && r.Open == 0 {
		delete(f.last, r.User)
	}
}

// superseded reports whether a newer report of r's user was made.
func (f *frontReports) superseded(r *messages.FrontSessions) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	last, ok := f.last[r.User]
	return !ok || last > r.Seq // none: a newer one with no session open was taken
}

// reportSessions sends r once.
func (cl *Client) reportSessions(ctx context.Context, r *messages.FrontSessions) error {
	_, err := cl.do(ctx, route.OfUser(r.User, cl.count), &call{Method: methodSessionEvent, User: r.User, Sessions: r})
	if err == nil {
		cl.sessions.taken(r)
	}
	return err
}

// resendSessions sends r again, backing off, until the shard takes it, a
// newer report of its user was made (it carries the count), a report
// could never be taken (invalid_params), or ctx ends.
func (cl *Client) resendSessions(ctx context.Context, r *messages.FrontSessions) {
	wait := 100 * time.Millisecond
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if cl.sessions.superseded(r) {
			return
		}
		err := cl.reportSessions(ctx, r)
		if err == nil || messages.CodeOf(err) == messages.CodeInvalidParams {
			return
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// WaitForUpdate waits on the user's shard for a change the user's private
// stream shows.
func (cl *Client) WaitForUpdate(ctx context.Context, r *messages.WaitForUpdateRequest) (*messages.UpdateAnswer, error) {
	a, err := cl.do(ctx, route.OfUser(r.User, cl.count), &call{Method: methodWaitForUpdate, Wait: r})
	if err != nil {
		return nil, err
	}
	u := &messages.UpdateAnswer{}
	if len(a.Result) > 0 {
		if err := json.Unmarshal(a.Result, u); err != nil {
			return nil, messages.Internal(err)
		}
	}
	return u, nil
}

// CallsRateLimited has the user's shard journal a count of refused calls.
func (cl *Client) CallsRateLimited(ev *messages.CallsRateLimitedEvent) error {
	ctx, cancel := noContext()
	defer cancel()
	_, err := cl.do(ctx, route.OfUser(ev.User, cl.count), &call{Method: methodCallsRateLimit, RateLimited: ev})
	return err
}

// SessionsRefused has the user's shard journal a count of refused
// sessions (the HTTP front's bounds).
func (cl *Client) SessionsRefused(ev *messages.SessionsRefusedEvent) error {
	ctx, cancel := noContext()
	defer cancel()
	_, err := cl.do(ctx, route.OfUser(ev.User, cl.count), &call{Method: methodSessionsRefused, SessionsRefused: ev})
	return err
}
