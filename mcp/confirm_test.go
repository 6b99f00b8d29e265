package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The client's own form (docs/tools.md "Confirmation", channel 1) with the go-sdk client over
// in-memory transports, against the real actor system, the journal and
// the simulator.

// formTTL is the shortest confirmation_ttl_s the policy allows: the
// "never answers" cases wait it out.
const formTTL = 10

// confirmUser creates user with a funded paper key and a trade policy
// that confirms every place_order and trusts the client UI. It returns
// the simulator API key of the user's account.
func (e *env) confirmUser(t testing.TB, user string, trustUI bool) string {
	t.Helper()
	if _, err := e.sys.Handle(context.Background(), &messages.CreateUserRequest{User: user}, messages.ActorCLIAdmin); err != nil &&
		messages.CodeOf(err) != messages.CodeInvalidParams {
		t.Fatal(err)
	}
	key := e.addKey(t, user)
	e.seed(t, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	ttl := formTTL
	s := messages.PolicySettings{Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"),
		ConfirmActions: stringsp("place_order"), ConfirmationTTLS: &ttl, TrustClientUI: &trustUI, VenueCeiling: &paper}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: user, Settings: s}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	return key
}

// simOrder is one order the simulator received.
type simOrder struct {
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
	APIKey      string `json:"apiKey"`
	Price       string `json:"price"`
}

// ordersOf lists the orders the simulator received for the account key.
func (e *env) ordersOf(t testing.TB, key string) []simOrder {
	t.Helper()
	var all []simOrder
	simDo(t, http.MethodGet, e.simURL+"/sim/orders", nil, &all)
	var out []simOrder
	for _, o := range all {
		if o.APIKey == key {
			out = append(out, o)
		}
	}
	return out
}

// status reads a confirmation as the server keeps it.
func (e *env) status(t testing.TB, user, id string) *messages.ConfirmationStatus {
	t.Helper()
	res, err := e.sys.Handle(context.Background(), &messages.ConfirmationStatusCommand{User: user, ConfirmationID: id}, messages.ActorCLIUser)
	if err != nil {
		t.Fatalf("status of %s: %v", id, err)
	}
	return res.(*messages.ConfirmationStatus)
}

// cliOrigin is a human at the CLI, over the control socket.
var cliOrigin = messages.Origin{Role: messages.RoleUser, Channel: messages.ChannelSocket, PeerUID: int64(os.Getuid()), PeerPID: int64(os.Getpid())}

// cliDecide decides a confirmation as `confirm approve|reject` does.
func (e *env) cliDecide(user, id, decision string) (any, error) {
	return e.sys.Submit(context.Background(), &messages.DecideConfirmationCommand{User: user, ConfirmationID: id,
		Decision: decision, Channel: messages.ConfirmChannelCLI}, cliOrigin)
}

// An answer of the human in the form.
type formAnswer struct {
	name   string
	answer func(ctx context.Context) (*sdk.ElicitResult, error)
	// approves is whether the answer approves.
	approves bool
}

var formAnswers = []formAnswer{
	{"accept", func(context.Context) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}, true},
	{"decline", func(context.Context) (*sdk.ElicitResult, error) { return &sdk.ElicitResult{Action: "decline"}, nil }, false},
	{"cancel", func(context.Context) (*sdk.ElicitResult, error) { return &sdk.ElicitResult{Action: "cancel"}, nil }, false},
	{"unticked", func(context.Context) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
	}, false},
	{"never", func(ctx context.Context) (*sdk.ElicitResult, error) { <-ctx.Done(); return nil, ctx.Err() }, false},
}

// asked records the forms a client was shown.
type asked struct {
	mu    sync.Mutex
	forms []*sdk.ElicitParams
}

func (a *asked) add(p *sdk.ElicitParams) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forms = append(a.forms, p)
}

func (a *asked) list() []*sdk.ElicitParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*sdk.ElicitParams{}, a.forms...)
}

// formClient connects a go-sdk client that declared form elicitation and
// answers every form with fa.
func formClient(t testing.TB, o Options, era string, fa formAnswer, seen *asked) *sdk.ClientSession {
	t.Helper()
	return connectWith(t, o, era, &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		seen.add(req.Params)
		return fa.answer(ctx)
	}})
}

// connectWith is connect with client options.
func connectWith(t testing.TB, o Options, era string, copts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return serveOn(t, o, testkit.Client{Name: "form-test", Era: era, Options: copts})
}

func limitOrder(price string) map[string]any {
	return map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.01", "price": price}
}

// resultJSON decodes a tool result's structured content.
func resultJSON(t testing.TB, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return m
}

// checkForm checks what the human was shown: the server's own plan (its
// summary, the symbol, the confirmation id) and one required boolean.
func checkForm(t testing.TB, f *sdk.ElicitParams, cs *messages.ConfirmationStatus) {
	t.Helper()
	if f.Mode != "" && f.Mode != "form" {
		t.Fatalf("form mode %q", f.Mode)
	}
	if cs.ShownToUser == nil || !strings.Contains(f.Message, cs.ShownToUser.Summary) || !strings.Contains(f.Message, cs.ConfirmationID) ||
		!strings.Contains(f.Message, "BTCUSDT") {
		t.Fatalf("the form does not show the server's plan:\n%s\nplan: %+v", f.Message, cs.ShownToUser)
	}
	b, _ := json.Marshal(f.RequestedSchema)
	var schema struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(b, &schema); err != nil || schema.Type != "object" || len(schema.Properties) != 1 ||
		schema.Properties["approve"]["type"] != "boolean" || len(schema.Required) != 1 || schema.Required[0] != "approve" {
		t.Fatalf("form schema %s", b)
	}
}

// onlyConfirmation returns the one confirmation of user.
func (e *env) onlyConfirmation(t testing.TB, user string) *messages.ConfirmationStatus {
	t.Helper()
	res, err := e.sys.Handle(context.Background(), &messages.ListConfirmationsCommand{User: user, All: true}, messages.ActorCLIUser)
	if err != nil {
		t.Fatal(err)
	}
	l := res.(*messages.ConfirmationList)
	if len(l.Confirmations) != 1 {
		t.Fatalf("%s has %d confirmations, want 1", user, len(l.Confirmations))
	}
	return &l.Confirmations[0]
}

// Every answer of the human, in both protocol eras: the form shows the
// server's plan with one required box; accepted with the box ticked the
// order goes out and the tool answers it; declined, cancelled, unticked
// or unanswered within the TTL nothing is sent, the confirmation is
// finished (the CLI can no longer approve it), and the agent's answer
// does not say which of these the human did.
func TestClientFormEveryAnswerBothEras(t *testing.T) {
	e := newEnvConfig(t, func(c *actors.Config) { c.ConfirmCLI = true })
	for _, era := range eras {
		for _, fa := range formAnswers {
			user := "f-legacy-" + fa.name
			if modernEraName(era) {
				user = "f-modern-" + fa.name
			}
			key := e.confirmUser(t, user, true)
			t.Run(eraName(era)+"/"+fa.name, func(t *testing.T) {
				t.Parallel()
				seen := &asked{}
				cs := formClient(t, Options{Backend: e.sys, Principal: fixedPrincipal(user, ProfileTrade)}, era, fa, seen)
				ctx, cancel := context.WithTimeout(context.Background(), (formTTL+5)*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: limitOrder("30000")})
				conf := e.onlyConfirmation(t, user)
				forms := seen.list()
				if len(forms) != 1 {
					t.Fatalf("the human was asked %d times", len(forms))
				}
				checkForm(t, forms[0], conf)
				orders := e.ordersOf(t, key)
				if fa.approves {
					if err != nil || res.IsError {
						t.Fatalf("approved: %v %+v", err, res)
					}
					out := resultJSON(t, res)
					if out["status"] != "accepted" || out["order_id"] == nil || len(orders) != 1 || orders[0].OrderID != out["order_id"] {
						t.Fatalf("approved: answer %v, orders on the venue %+v", out, orders)
					}
					if conf.Status != messages.ConfirmStatusExecuted || conf.DecidedChannel != messages.ConfirmChannelClientUI {
						t.Fatalf("approved: confirmation %+v", conf)
					}
					return
				}
				if len(orders) != 0 {
					t.Fatalf("%s sent %d orders", fa.name, len(orders))
				}
				if fa.name == "never" && modernEraName(era) {
					// MRTR holds nothing open: the client gave up; the
					// confirmation expires in the actor.
					if err == nil {
						t.Fatalf("the client answered nothing but the call returned %+v", res)
					}
					deadline := time.Now().Add(5 * time.Second)
					for conf.Status == messages.ConfirmStatusPending && time.Now().Before(deadline) {
						time.Sleep(100 * time.Millisecond)
						conf = e.status(t, user, conf.ConfirmationID)
					}
				} else {
					if err != nil || res.IsError {
						t.Fatalf("%s: %v %+v", fa.name, err, res)
					}
					out := resultJSON(t, res)
					if out["status"] != conf.Status || out["confirmation_id"] != conf.ConfirmationID {
						t.Fatalf("%s: answer %v, confirmation %+v", fa.name, out, conf)
					}
					text := res.Content[0].(*sdk.TextContent).Text
					for _, leak := range []string{"decline", "cancel", "unticked", "accept", "Tick the box", `"approve"`} {
						if strings.Contains(text, leak) {
							t.Fatalf("the agent's answer tells the human's answer (%q): %s", leak, text)
						}
					}
				}
				switch {
				case conf.Status == messages.ConfirmStatusRejected && conf.DecidedChannel == messages.ConfirmChannelClientUI:
				case fa.name == "never" && conf.Status == messages.ConfirmStatusExpired:
				default:
					t.Fatalf("%s: confirmation %+v", fa.name, conf)
				}
				if _, err := e.cliDecide(user, conf.ConfirmationID, messages.DecisionApprove); err == nil {
					t.Fatalf("%s: the CLI approved a finished confirmation", fa.name)
				}
				if n := len(e.ordersOf(t, key)); n != 0 {
					t.Fatalf("%s: %d orders after the CLI tried", fa.name, n)
				}
			})
		}
	}
}

func modernEraName(era string) bool { return era == "" || era >= modernEra }

// manualClient is a 2026-07-28 client that does not fulfil input
// requests itself: the test sees the form and the requestState and plays
// the client (and the hostile agent behind it).
func manualClient(t testing.TB, o Options) *sdk.ClientSession {
	t.Helper()
	return connectWith(t, o, "", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not used: the test answers by hand")
		},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
}

// firstRound calls a tool and returns its input_required answer.
func firstRound(t testing.TB, cs *sdk.ClientSession, tool string, args map[string]any) (*sdk.ElicitParams, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("want input_required with a state, got %+v", res)
	}
	f, ok := res.InputRequests[formKey].(*sdk.ElicitParams)
	if !ok || len(res.InputRequests) != 1 {
		t.Fatalf("input requests %+v", res.InputRequests)
	}
	return f, res.RequestState
}

// answerRound repeats the call with the form's answer and a state.
func answerRound(t testing.TB, cs *sdk.ClientSession, tool string, args map[string]any, state string, r *sdk.ElicitResult) map[string]any {
	t.Helper()
	out, err := answerRoundErr(cs, tool, args, state, r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// answerRoundErr is answerRound for a goroutine other than the test's.
func answerRoundErr(cs *sdk.ClientSession, tool string, args map[string]any, state string, r *sdk.ElicitResult) (map[string]any, error) {
	p := &sdk.CallToolParams{Name: tool, Arguments: args, RequestState: state}
	if r != nil {
		p.InputResponses = sdk.InputResponseMap{formKey: r}
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return map[string]any{"input_required": true}, nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	out["is_error"] = res.IsError
	return out, nil
}

var ticked = &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}

// wantStateRefused: the repeated call was refused for its state.
func wantStateRefused(t testing.TB, what string, out map[string]any) {
	t.Helper()
	d, _ := out["details"].(map[string]any)
	if out["is_error"] != true || out["code"] != "invalid_params" || d["field"] != "requestState" {
		t.Fatalf("%s: %v", what, out)
	}
}

// A hostile agent (with a client that forwards whatever it says) cannot
// approve: not with a forged, tampered or foreign state, not with
// another call's arguments, not as another principal, not without a
// client that can show a form, not with arguments or text; the genuine
// answer approves once, and its replay does nothing more.
func TestClientFormHostileAgent(t *testing.T) {
	e := newEnv(t)
	key := e.confirmUser(t, "alice", true)
	e.confirmUser(t, "bob", true)
	stateKey := make([]byte, 32)
	copy(stateKey, "one server's state key, 32 bytes")
	alice := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), StateKey: stateKey})
	order := limitOrder("30000")
	form, state := firstRound(t, alice, "place_order", order)
	conf := e.onlyConfirmation(t, "alice")
	checkForm(t, form, conf)

	// Arguments and text: every extra field is refused before anything.
	for _, extra := range []string{"approve", "requestState", "request_state", "client_ui", "confirmation_id", "decision", "inputResponses"} {
		out, isErr := callJSON(t, alice, "place_order", with(order, extra, true))
		// The refusal names the field, or only "arguments" for a name it
		// does not repeat.
		if d, _ := out["details"].(map[string]any); !isErr || out["code"] != "invalid_params" || d["field"] != extra && d["field"] != "arguments" {
			t.Fatalf("argument %s: %v", extra, out)
		}
	}
	res, err := alice.CallTool(context.Background(), &sdk.CallToolParams{Name: "place_order",
		Arguments: with(order, "idempotency_key", "approve:"+conf.ConfirmationID)})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("a key that says approve: %v %+v", err, res)
	}

	// Forged, tampered and foreign states.
	forged := requestStatePrefix + strings.Repeat("A", 120)
	wantStateRefused(t, "forged", answerRound(t, alice, "place_order", order, forged, ticked))
	tampered := []byte(state)
	tampered[len(tampered)/2] ^= 0x02
	wantStateRefused(t, "tampered", answerRound(t, alice, "place_order", order, string(tampered), ticked))
	wantStateRefused(t, "other arguments", answerRound(t, alice, "place_order", with(order, "price", "29000"), state, ticked))
	wantStateRefused(t, "other tool", answerRound(t, alice, "cancel_all_orders", map[string]any{"symbol": "BTCUSDT", "category": "linear"}, state, ticked))
	// Another server (another state key) does not open it.
	other := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)})
	wantStateRefused(t, "another key", answerRound(t, other, "place_order", order, state, ticked))
	// Bob, on the same server key, with alice's state and arguments.
	bob := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("bob", ProfileTrade), StateKey: stateKey})
	wantStateRefused(t, "another user", answerRound(t, bob, "place_order", order, state, ticked))
	// A token of alice's other than the one the form was made for.
	tok := manualClient(t, Options{Backend: e.sys, Principal: func(context.Context, sdk.Request) (Principal, error) {
		return Principal{User: "alice", Profile: ProfileTrade, TokenID: "tok_other"}, nil
	}, StateKey: stateKey})
	wantStateRefused(t, "another token", answerRound(t, tok, "place_order", order, state, ticked))
	// A client that declared no elicitation cannot answer a form.
	blind := connectWith(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), StateKey: stateKey}, "",
		&sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
	wantStateRefused(t, "no elicitation", answerRound(t, blind, "place_order", order, state, ticked))
	// The box unticked is not an approval, and neither is content the
	// form did not ask for; without an answer the form is asked again.
	if out := answerRound(t, alice, "place_order", order, state, nil); out["input_required"] != true {
		t.Fatalf("no answer: %v", out)
	}
	if got := e.status(t, "alice", conf.ConfirmationID); got.Status != messages.ConfirmStatusPending || len(e.ordersOf(t, key)) != 0 {
		t.Fatalf("after the refusals: %+v, %d orders", got, len(e.ordersOf(t, key)))
	}

	// The genuine answer approves once.
	out := answerRound(t, alice, "place_order", order, state, ticked)
	if out["is_error"] != false || out["status"] != "accepted" || len(e.ordersOf(t, key)) != 1 {
		t.Fatalf("approve: %v", out)
	}
	// Replayed, as it was and as a rejection: nothing more.
	for _, r := range []*sdk.ElicitResult{ticked, {Action: "decline"}} {
		out := answerRound(t, alice, "place_order", order, state, r)
		if out["is_error"] != true || out["status"] == "accepted" {
			t.Fatalf("replay: %v", out)
		}
	}
	if n := len(e.ordersOf(t, key)); n != 1 {
		t.Fatalf("%d orders after the replays", n)
	}
	if got := e.status(t, "alice", conf.ConfirmationID); got.Status != messages.ConfirmStatusExecuted || got.DecidedChannel != messages.ConfirmChannelClientUI {
		t.Fatalf("after the replays: %+v", got)
	}

	// Bob's own genuine state names bob's confirmation: with it bob
	// decides only his own, never alice's.
	_, bstate := firstRound(t, bob, "place_order", limitOrder("31000"))
	wantStateRefused(t, "bob's state for alice's call", answerRound(t, alice, "place_order", limitOrder("31000"), bstate, ticked))
}

// The form and the CLI decide the same confirmation at the same moment:
// exactly one decision wins, the journal names its channel once, and at
// most one order reaches the venue (exactly one when the winner approved).
func TestClientFormRacesCLI(t *testing.T) {
	e := newEnvConfig(t, func(c *actors.Config) { c.ConfirmCLI = true })
	key := e.confirmUser(t, "alice", true)
	cs := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)})
	const rounds = 8
	ids := make([]string, 0, rounds)
	wantOrders := 0
	wins := map[string]int{}
	var winner []string
	for i := 0; i < rounds; i++ {
		order := limitOrder(fmt.Sprint(30000 + i))
		_, state := firstRound(t, cs, "place_order", order)
		res, err := e.sys.Handle(context.Background(), &messages.ListConfirmationsCommand{User: "alice"}, messages.ActorCLIUser)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		for _, c := range res.(*messages.ConfirmationList).Confirmations {
			if c.Status == messages.ConfirmStatusPending {
				id = c.ConfirmationID
			}
		}
		ids = append(ids, id)
		formApproves := i%2 == 0 // odd rounds: the form rejects while the CLI approves
		var formOut map[string]any
		var formErr, cliErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			r := ticked
			if !formApproves {
				r = &sdk.ElicitResult{Action: "decline"}
			}
			formOut, formErr = answerRoundErr(cs, "place_order", order, state, r)
		}()
		go func() {
			defer wg.Done()
			<-start
			_, cliErr = e.cliDecide("alice", id, messages.DecisionApprove)
		}()
		close(start)
		wg.Wait()
		if formErr != nil {
			t.Fatal(formErr)
		}
		formWon := formOut["is_error"] == false
		cliWon := cliErr == nil
		if formWon == cliWon {
			t.Fatalf("round %d: form won %v (%v), cli won %v (%v)", i, formWon, formOut, cliWon, cliErr)
		}
		st := e.status(t, "alice", id)
		wantChannel := messages.ConfirmChannelCLI
		if formWon {
			wantChannel = messages.ConfirmChannelClientUI
		}
		if st.DecidedChannel != wantChannel {
			t.Fatalf("round %d: decided channel %q, want %q", i, st.DecidedChannel, wantChannel)
		}
		if cliWon || formApproves {
			wantOrders++
		}
		wins[wantChannel]++
		winner = append(winner, wantChannel)
		if n := len(e.ordersOf(t, key)); n != wantOrders {
			t.Fatalf("round %d: %d orders on the venue, want %d", i, n, wantOrders)
		}
	}
	t.Logf("winners: %v", wins)
	// One confirmation_decided per confirmation, naming the winner.
	decided := map[string]int{}
	channel := map[string]string{}
	for _, r := range e.records(t) {
		if messages.RecordType(r.Type) != messages.RecordConfirmationDecided {
			continue
		}
		var p messages.ConfirmationDecidedEvent
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		decided[p.ConfirmationID]++
		channel[p.ConfirmationID] = p.Channel
	}
	for i, id := range ids {
		if decided[id] != 1 || channel[id] != winner[i] {
			t.Fatalf("%s: %d confirmation_decided records, channel %q, want %q", id, decided[id], channel[id], winner[i])
		}
	}
}

// Over real HTTP, both eras (the stateless handler for 2026-07-28, the
// stateful one before): the human approves or declines in the form; a
// form state is bound to the bearer token it was made for, so another
// token of the same user cannot answer it.
func TestHTTPClientFormBothEras(t *testing.T) {
	h := newHTTPEnv(t, HTTPOptions{})
	key := h.confirmUser(t, "alice", true)
	ctx := context.Background()
	price := 30000
	for _, era := range eras {
		for _, fa := range []formAnswer{formAnswers[0], formAnswers[1]} {
			t.Run(eraName(era)+"/"+fa.name, func(t *testing.T) {
				seen := &asked{}
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "c"}, &sdk.ClientOptions{
					ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						seen.add(req.Params)
						return fa.answer(ctx)
					}}).Connect(ctx, &sdk.StreamableClientTransport{
					Endpoint: h.url, HTTPClient: &http.Client{Transport: bearerRT{token: h.tokens["alice"].Token}}, MaxRetries: -1,
				}, &sdk.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				before := len(h.ordersOf(t, key))
				price++
				out, isErr := callJSON(t, cs, "place_order", limitOrder(fmt.Sprint(price)))
				after := len(h.ordersOf(t, key))
				if len(seen.list()) != 1 {
					t.Fatalf("asked %d times", len(seen.list()))
				}
				if fa.approves && (isErr || out["status"] != "accepted" || after != before+1) ||
					!fa.approves && (isErr || out["status"] != "rejected" || after != before) {
					t.Fatalf("answer %v, orders %d -> %d", out, before, after)
				}
			})
		}
	}
	// Another token of alice's cannot answer a form made for the first.
	res, err := h.sys.Submit(ctx, &messages.IssueTokenRequest{User: "alice"}, adminSocket)
	if err != nil {
		t.Fatal(err)
	}
	second := res.(*messages.TokenIssued)
	manual := func(token string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "m"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return nil, errors.New("answered by hand")
			},
			MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		}).Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint: h.url, HTTPClient: &http.Client{Transport: bearerRT{token: token}}, MaxRetries: -1,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	first := manual(h.tokens["alice"].Token)
	order := limitOrder("29000")
	_, state := firstRound(t, first, "place_order", order)
	wantStateRefused(t, "another token", answerRound(t, manual(second.Token), "place_order", order, state, ticked))
	before := len(h.ordersOf(t, key))
	if out := answerRound(t, first, "place_order", order, state, ticked); out["status"] != "accepted" || len(h.ordersOf(t, key)) != before+1 {
		t.Fatalf("the token's own answer: %v", out)
	}
}

// The human ticks the box after the kill switch went on: the approval is
// checked again as of that moment, and a risk-increasing order is not
// sent. And a form answered after the confirmation expired executes
// nothing, however genuine its state.
func TestClientFormApprovalRecheckedAndLate(t *testing.T) {
	e := newEnv(t)
	key := e.confirmUser(t, "alice", true)
	cs := manualClient(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)})

	order := limitOrder("30000")
	_, state := firstRound(t, cs, "place_order", order)
	if _, err := e.sys.Handle(context.Background(), &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	out := answerRound(t, cs, "place_order", order, state, ticked)
	if out["is_error"] != true || out["code"] != string(messages.CodeKillSwitchActive) || len(e.ordersOf(t, key)) != 0 {
		t.Fatalf("approved under the kill switch: %v, %d orders", out, len(e.ordersOf(t, key)))
	}
	if _, err := e.sys.Handle(context.Background(), &messages.SetKillSwitchRequest{User: "alice", On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}

	late := limitOrder("30500")
	_, state = firstRound(t, cs, "place_order", late)
	time.Sleep((formTTL + 1) * time.Second)
	wantStateRefused(t, "after expiry", answerRound(t, cs, "place_order", late, state, ticked))
	if n := len(e.ordersOf(t, key)); n != 0 {
		t.Fatalf("%d orders after a late approval", n)
	}
}
