package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
)

// confirmTool is a test tool shaped like a confirmed action: it asks the
// human through the client's UI when the client declared form elicitation
// (an input_required answer, then the repeated call with the response),
// and otherwise answers "pending".
func confirmTool() *tool {
	return &tool{
		name: "test_confirm", title: "test", description: "test", kind: KindSafety,
		schema: objectSchema(nil, map[string]any{}),
		handle: func(ctx context.Context, c *call) (any, error) {
			if resp, state, ok := c.inputResponse("confirm"); ok {
				er, _ := resp.(*sdk.ElicitResult)
				return map[string]any{"approved": er != nil && er.Action == "accept" && er.Content["approve"] == true, "state": state}, nil
			}
			if c.canElicitForm() {
				return inputRequiredResult(sdk.InputRequestMap{"confirm": &sdk.ElicitParams{
					Message: "Approve the test action?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
						"approve": map[string]any{"type": "boolean"}}, "required": []any{"approve"}},
				}}, "state-1"), nil
			}
			return pendingResult(Pending{Venue: "paper", ConfirmationID: "cf_1", ExpiresAt: time.Unix(0, 0).UTC(),
				ShownToUser: map[string]any{"action": "test"}, NextStep: "a human approves it outside the chat"}), nil
		},
	}
}

// Handlers get the request: with a client that declared elicitation the
// handler asks the human and sees the answer on the repeated call; with one
// that did not it answers pending.
func TestHandlersGetTheRequest(t *testing.T) {
	e := newEnv(t)
	opts := Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly), Venue: "paper", extraTools: []*tool{confirmTool()}}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, elicit := range []bool{true, false} {
		ctx := context.Background()
		copts := &sdk.ClientOptions{}
		asked := 0
		if elicit {
			copts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked++
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}
		}
		cs := testkit.Connect(t, srv, testkit.Client{Options: copts})
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "test_confirm", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("elicit %v: %v %+v", elicit, err, res)
		}
		var out map[string]any
		json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
		if elicit {
			if asked != 1 || out["approved"] != true || out["state"] != "state-1" {
				t.Fatalf("with elicitation: asked %d, %v", asked, out)
			}
		} else if out["status"] != "pending" || out["confirmation_id"] != "cf_1" || out["shown_to_user"] == nil {
			t.Fatalf("without elicitation: %v", out)
		}
		cs.Close()
	}
}
