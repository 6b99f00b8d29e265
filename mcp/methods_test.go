package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server declares only tools: every prompts/*, resources/* and
// completion/complete request gets -32601 in both eras, over HTTP and
// stdio, and a tools/call refused by the guard (no such tool) carries
// resultType "complete" for a 2026-07-28 client and none for an older one,
// like an answer of a tool handler.
func TestUnusedMethodsAndRefusalResultType(t *testing.T) {
	h := newHTTPEnv(t, HTTPOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, era := range []string{ModernEra, "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			cs := h.connect(t, h.tokens["alice"].Token, era, "test", nil)
			calls := map[string]func() error{
				"prompts/list":             func() error { _, err := cs.ListPrompts(ctx, nil); return err },
				"prompts/get":              func() error { _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "p"}); return err },
				"resources/list":           func() error { _, err := cs.ListResources(ctx, nil); return err },
				"resources/templates/list": func() error { _, err := cs.ListResourceTemplates(ctx, nil); return err },
				"resources/read":           func() error { _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///x"}); return err },
				"completion/complete": func() error {
					_, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "p"},
						Argument: sdk.CompleteParamsArgument{Name: "a", Value: "b"}})
					return err
				},
			}
			if era != ModernEra { // removed from the protocol in 2026-07-28
				calls["resources/subscribe"] = func() error { return cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "file:///x"}) }
			}
			for method, call := range calls {
				var je *jsonrpc.Error
				if err := call(); !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
					t.Errorf("%s: %v, want -32601", method, err)
				}
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
			if err != nil || !res.IsError {
				t.Fatalf("unknown tool: %v %+v", err, res)
			}
			b, _ := json.Marshal(res)
			if got, want := strings.Contains(string(b), `"resultType":"complete"`), era == ModernEra; got != want {
				t.Errorf("refusal %s: resultType complete %v, want %v", b, got, want)
			}
			// A tool handler's own answer, for comparison: the same shape.
			ok, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}})
			if err != nil || ok.IsError {
				t.Fatalf("get_my_policy: %v %+v", err, ok)
			}
			b, _ = json.Marshal(ok)
			if got, want := strings.Contains(string(b), `"resultType":"complete"`), era == ModernEra; got != want {
				t.Errorf("handler answer %s: resultType complete %v, want %v", b, got, want)
			}
		})
	}
}

// Over stdio (its own filter in front of the SDK) the answer is -32601 too.
func TestStdioUnusedMethods(t *testing.T) {
	e := newEnv(t)
	s := serveStdio(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly)}, &stdioTransport{maxInFlight: MaxInFlight})
	for i, m := range []string{"prompts/list", "resources/list", "resources/templates/list", "completion/complete"} {
		s.send(`{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"` + m + `","params":{}}`)
		ans := s.next()
		e, _ := ans["error"].(map[string]any)
		if e == nil || e["code"] != float64(jsonrpc.CodeMethodNotFound) {
			t.Errorf("%s: %v, want -32601", m, ans)
		}
	}
}
