package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm/llmtest"
)

var testTools = []Tool{{
	Name:        "place_order",
	Description: "Place an order.",
	Schema: map[string]any{"type": "object", "properties": map[string]any{
		"symbol": map[string]any{"type": "string"}, "qty": map[string]any{"type": "string"},
	}, "required": []any{"symbol", "qty"}, "additionalProperties": false},
}}

// Each adapter, through its official SDK over loopback HTTP: the tools go
// out as listed, a tool call comes back with its arguments (streamed in
// pieces where the adapter streams), its result goes back under the
// call's id, the text streams, the tokens are counted and the key is sent
// as the provider's header.
func TestAdaptersOverTheOfficialSDKs(t *testing.T) {
	for _, tc := range []struct {
		provider, base, path string
		wantAuth             string
		streamed             bool
	}{
		{Anthropic, "", "/v1/messages", "Bearer sk-ant-test", true},
		{OpenAI, "/v1", "/v1/responses", "Bearer sk-openai-test", false},
		{OpenAICompatible, "/v1", "/v1/chat/completions", "Bearer local-test", true},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			key := strings.TrimPrefix(tc.wantAuth, "Bearer ")
			p, err := New(Config{Provider: tc.provider, Model: "m-test", BaseURL: srv.URL + tc.base, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			msgs := []Message{{Role: RoleUser, Text: "buy 0.001 BTCUSDT"}}
			var pieces []string
			r1, err := p.Complete(ctx, Request{System: "be careful", Messages: msgs, Tools: testTools}, func(s string) { pieces = append(pieces, s) })
			if err != nil {
				t.Fatal(err)
			}
			if len(r1.ToolCalls) != 1 || r1.ToolCalls[0].Name != "place_order" || r1.ToolCalls[0].ID == "" {
				t.Fatalf("tool calls %+v", r1.ToolCalls)
			}
			var args map[string]string
			if err := json.Unmarshal(r1.ToolCalls[0].Arguments, &args); err != nil || args["symbol"] != "BTCUSDT" || args["qty"] != "0.001" {
				t.Fatalf("arguments %s: %v", r1.ToolCalls[0].Arguments, err)
			}
			if r1.Usage.InputTokens != 120 || r1.Usage.OutputTokens != 30 {
				t.Fatalf("usage %+v", r1.Usage)
			}
			msgs = append(msgs, Message{Role: RoleAssistant, Text: r1.Text, ToolCalls: r1.ToolCalls},
				Message{Role: RoleTool, Results: []ToolResult{{CallID: r1.ToolCalls[0].ID, Name: "place_order", Text: `{"status":"accepted"}`}}})
			pieces = nil
			r2, err := p.Complete(ctx, Request{System: "be careful", Messages: msgs, Tools: testTools}, func(s string) { pieces = append(pieces, s) })
			if err != nil {
				t.Fatal(err)
			}
			if r2.Text != "Order placed." || len(r2.ToolCalls) != 0 {
				t.Fatalf("second answer %+v", r2)
			}
			if want := 1; tc.streamed {
				want = 2
				if len(pieces) != want {
					t.Fatalf("streamed pieces %q", pieces)
				}
			} else if len(pieces) != want {
				t.Fatalf("pieces %q", pieces)
			}

			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, r := range reqs {
				if r.Path != tc.path || !strings.Contains(r.Auth, key) {
					t.Fatalf("request to %s with auth %q", r.Path, r.Auth)
				}
			}
			first, _ := json.Marshal(reqs[0].Body["tools"])
			if !strings.Contains(string(first), `"place_order"`) || !strings.Contains(string(first), "Place an order.") || !strings.Contains(string(first), "additionalProperties") {
				t.Fatalf("tools sent: %s", first)
			}
			second, _ := json.Marshal(reqs[1].Body)
			if !hasToolResult(reqs[1].Body, r1.ToolCalls[0].ID) || !strings.Contains(string(second), `{\"status\":\"accepted\"}`) {
				t.Fatalf("the tool result did not go back under the call's id: %s", second)
			}
			if !strings.Contains(string(second), "be careful") {
				t.Fatalf("no system prompt: %s", second)
			}
		})
	}
}

// A provider that needs a key refuses to start without one, and the
// openai-compatible one needs an address.
func TestProvidersNeedTheirConfiguration(t *testing.T) {
	for _, cfg := range []Config{{Provider: Anthropic}, {Provider: OpenAI}, {Provider: OpenAICompatible}, {Provider: "other"}, {Provider: Fake, Model: "other"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// hasToolResult reports whether v holds a tool result (Anthropic's
// tool_result block, a Responses function_call_output item, a Chat tool
// message) answering the call id.
func hasToolResult(v any, id string) bool {
	switch x := v.(type) {
	case map[string]any:
		isResult := x["type"] == "tool_result" || x["type"] == "function_call_output" || x["role"] == "tool"
		if isResult && (x["tool_use_id"] == id || x["call_id"] == id || x["tool_call_id"] == id) {
			return true
		}
		for _, e := range x {
			if hasToolResult(e, id) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasToolResult(e, id) {
				return true
			}
		}
	}
	return false
}

// A provider's error never carries the API key or the password of
// --base-url, even when the SDK's error echoes the request's address and
// the answer's body and the server wrote the key into that body: the
// error goes to the console and into the eval report.
func TestProviderErrorsHideTheKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		echoed, _ := json.Marshal("invalid key: " + r.Header.Get("X-Api-Key") + r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":%s}}`, echoed)
	}))
	defer srv.Close()
	const password = "pw-planted-4711"
	base := strings.Replace(srv.URL, "http://", "http://user:"+password+"@", 1) + "/v1"
	for _, provider := range []string{Anthropic, OpenAI, OpenAICompatible} {
		key := "key-planted-" + provider
		p, err := New(Config{Provider: provider, Model: "m-test", BaseURL: base, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("%s: want the 401 in the error, got %v", provider, err)
		}
		if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), password) {
			t.Errorf("%s: the error shows a secret: %v", provider, err)
		}
	}
}

// The openai-compatible provider talks to a server that is not OpenAI: it
// sends its own key (GX_AGENT_API_KEY) and nothing of the OPENAI_*
// environment the OpenAI SDK would otherwise read (the key, the
// organisation, the project, custom headers, the address).
func TestCompatibleProviderIgnoresTheOpenAIEnvironment(t *testing.T) {
	var headers http.Header
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers, path = r.Header.Clone(), r.URL.Path
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-openai-planted")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-admin-planted")
	t.Setenv("OPENAI_ORG_ID", "org-planted")
	t.Setenv("OPENAI_PROJECT_ID", "proj-planted")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Planted: custom-planted")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/elsewhere")
	for _, key := range []string{"local-test", ""} {
		p, err := New(Config{Provider: OpenAICompatible, Model: "m-test", BaseURL: srv.URL + "/v1", APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		headers = nil
		_, _ = p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
		if headers == nil || path != "/v1/chat/completions" {
			t.Fatalf("key %q: no request reached --base-url (path %q)", key, path)
		}
		wantAuth := ""
		if key != "" {
			wantAuth = "Bearer " + key
		}
		if got := headers.Get("Authorization"); got != wantAuth {
			t.Errorf("key %q: Authorization %q, want %q", key, got, wantAuth)
		}
		for name, values := range headers {
			for _, v := range values {
				if strings.Contains(v, "planted") {
					t.Errorf("key %q: header %s carries %q from the OPENAI_* environment", key, name, v)
				}
			}
		}
	}
}

// An answer cut off at the token bound is an error, never a decision: a
// half-written tool call or an empty answer would otherwise pass as a
// refusal (Anthropic's stop_reason max_tokens, a Responses answer
// incomplete at max_output_tokens, Chat's finish_reason length).
func TestAnswerCutOffAtTheTokenBoundIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
		switch r.URL.Path {
		case "/v1/messages":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`),
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"place_order","input":{}}}`),
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"symbol\":\"BTC"}}`),
				ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
				ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":2048}}`),
				ev("message_stop", `{"type":"message_stop"}`))
		case "/v1/responses":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"resp_1","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"m","output":[],"usage":{"input_tokens":10,"output_tokens":2048,"total_tokens":2058,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":2048}}}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"I will"},"finish_reason":null}]}`+"\n\n",
				`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\n", "data: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ provider, base string }{{Anthropic, ""}, {OpenAI, "/v1"}, {OpenAICompatible, "/v1"}} {
		p, err := New(Config{Provider: tc.provider, Model: "m", BaseURL: srv.URL + tc.base, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := p.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "buy"}}, Tools: testTools}, nil)
		if err == nil || !strings.Contains(err.Error(), "cut off") {
			t.Errorf("%s: reply %+v, error %v; want the answer refused as cut off", tc.provider, reply, err)
		}
	}
}
