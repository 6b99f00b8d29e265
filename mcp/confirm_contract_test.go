package mcp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// contractBackend plays the user actor's side of the confirmation
// contract (messages/confirm.go) and records what the MCP layer sends:
// it parks every place_order, for the client UI when the command says the
// client can show a form, else for the CLI; it decides each confirmation
// once.
type contractBackend struct {
	Backend // nil: only the methods below are used
	ttl     time.Duration
	mu      sync.Mutex
	cmds    []messages.Command
	status  map[string]*messages.ConfirmationStatus
	n       int
}

func (b *contractBackend) ToolCalled(context.Context, *messages.ToolCalled, bool) (func(context.Context) error, error) {
	return nil, nil
}

// SessionEvent ignores the dead-man switch's session events (the
// presence middleware reports every session's first message).
func (b *contractBackend) SessionEvent(context.Context, string, messages.SessionEventKind) {}

// CallsRateLimited ignores the call budget's refusal counts.
func (b *contractBackend) CallsRateLimited(*messages.CallsRateLimitedEvent) error { return nil }

// Validate accepts every command: the calls of this contract are valid
// (a repeat with a form's state is checked by it first).
func (b *contractBackend) Validate(messages.Command) error { return nil }

func (b *contractBackend) Handle(_ context.Context, cmd messages.Command, origin string) (any, error) {
	if v, ok := cmd.(*messages.ShowPolicyRequest); ok {
		// The trust check before a form (not recorded): the policy
		// trusts the client UI (paper defaults).
		return &messages.PolicyView{User: v.User, Effective: messages.DefaultPolicy(messages.VenuePaper)}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cmds = append(b.cmds, cmd)
	if origin != messages.ActorAgent {
		return nil, fmt.Errorf("origin %s", origin)
	}
	switch c := cmd.(type) {
	case *messages.PlaceOrderCommand:
		b.n++
		id := fmt.Sprintf("cf_%024x", b.n)
		ch := messages.ConfirmChannelCLI
		if c.ClientUI {
			ch = messages.ConfirmChannelClientUI
		}
		shown := &messages.ShownToUser{Tool: "place_order", User: c.User, Venue: "paper", Summary: "Buy 0.01 BTCUSDT (linear) Limit 30000"}
		b.status[id] = &messages.ConfirmationStatus{ConfirmationID: id, User: c.User, Status: messages.ConfirmStatusPending, Tool: "place_order",
			Channel: ch, ExpiresAt: time.Now().Add(b.ttl), ShownToUser: shown}
		return &messages.ConfirmationPending{ConfirmationID: id, Channel: ch, Tool: "place_order", Venue: "paper",
			ExpiresAt: time.Now().Add(b.ttl), ShownToUser: shown, ArgsSHA256: "actor-digest-" + id}, nil
	case *messages.ConfirmationStatusCommand:
		s, ok := b.status[c.ConfirmationID]
		if !ok || s.User != c.User {
			return nil, &messages.Error{Code: messages.CodeNotFound, Message: "no such confirmation"}
		}
		cp := *s
		return &cp, nil
	case *messages.DecideConfirmationCommand:
		s, ok := b.status[c.ConfirmationID]
		switch {
		case !ok || s.User != c.User:
			return nil, &messages.Error{Code: messages.CodeNotFound, Message: "no such confirmation"}
		case c.ArgsSHA256 != "actor-digest-"+c.ConfirmationID || c.Channel != s.Channel:
			return nil, messages.InvalidParams("args_sha256", "does not match")
		case s.Status != messages.ConfirmStatusPending:
			return nil, messages.InvalidParams("confirmation_id", "confirmation_not_pending")
		}
		s.DecidedChannel = c.Channel
		if c.Decision == messages.DecisionApprove {
			s.Status = messages.ConfirmStatusExecuted
			return &messages.OrderAnswer{Status: "accepted", OrderID: "o-" + c.ConfirmationID}, nil
		}
		s.Status = messages.ConfirmStatusRejected
		cp := *s
		return &cp, nil
	}
	return nil, fmt.Errorf("unexpected %T", cmd)
}

func (b *contractBackend) sent() []messages.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]messages.Command{}, b.cmds...)
}

// The MCP layer's side of the contract, both eras: ClientUI is set only
// for a client that declared form elicitation (a tool argument cannot set
// it); a CLI confirmation answers pending without a form; the decision
// carries channel client_ui and the actor's digest back; a legacy form
// nobody answers is rejected when the confirmation expires.
func TestClientFormContract(t *testing.T) {
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			b := &contractBackend{ttl: 2 * time.Second, status: map[string]*messages.ConfirmationStatus{}}
			o := Options{Backend: b, Principal: fixedPrincipal("alice", ProfileTrade)}

			// No elicitation: ClientUI false, pending for the CLI, no form.
			plain := connectWith(t, o, era, &sdk.ClientOptions{})
			out, isErr := callJSON(t, plain, "place_order", limitOrder("30000"))
			if isErr || out["status"] != "pending" || out["confirmation_id"] == nil || out["shown_to_user"] == nil {
				t.Fatalf("pending: %v", out)
			}
			if pc := b.sent()[0].(*messages.PlaceOrderCommand); pc.ClientUI {
				t.Fatal("ClientUI set for a client without elicitation")
			}
			if _, isErr := callJSON(t, plain, "place_order", with(limitOrder("30000"), "client_ui", true)); !isErr {
				t.Fatal("client_ui accepted as an argument")
			}

			// Elicitation: ClientUI true, the form, the decision.
			for _, fa := range formAnswers {
				seen := &asked{}
				cs := formClient(t, o, era, fa, seen)
				before := len(b.sent())
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: limitOrder("30000")})
				cancel()
				cmds := b.sent()[before:]
				pc, ok := cmds[0].(*messages.PlaceOrderCommand)
				if !ok || !pc.ClientUI {
					t.Fatalf("%s: first command %+v", fa.name, cmds[0])
				}
				if n := len(seen.list()); n != 1 {
					t.Fatalf("%s: asked %d times", fa.name, n)
				}
				if fa.name == "never" && modernEraName(era) {
					// MRTR: the client gives up; nothing is decided here
					// (the actor expires the confirmation).
					if err == nil || len(cmds) != 1 {
						t.Fatalf("never: %v, commands %+v", err, cmds)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", fa.name, err)
				}
				var d *messages.DecideConfirmationCommand
				for _, c := range cmds {
					if x, ok := c.(*messages.DecideConfirmationCommand); ok {
						if d != nil {
							t.Fatalf("%s: two decisions", fa.name)
						}
						d = x
					}
				}
				want := messages.DecisionReject
				if fa.approves {
					want = messages.DecisionApprove
				}
				if d == nil || d.Decision != want || d.Channel != messages.ConfirmChannelClientUI || d.User != "alice" ||
					d.ArgsSHA256 != "actor-digest-"+d.ConfirmationID {
					t.Fatalf("%s: decision %+v", fa.name, d)
				}
				got := resultJSON(t, res)
				if fa.approves && (res.IsError || got["status"] != "accepted") || !fa.approves && (res.IsError || got["status"] != "rejected") {
					t.Fatalf("%s: answer %v", fa.name, got)
				}
			}
		})
	}
}
