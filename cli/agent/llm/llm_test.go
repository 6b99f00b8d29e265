package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// providerServer is a scripted stand-in for the three provider APIs over
// real loopback HTTP: the official SDKs talk to it as to the real thing.
// Its first answer in a conversation is a tool call, its answer to a
// tool result is text. It records every request.
type providerServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	path string
	auth string // Authorization or x-api-key
	body map[string]any
}

func newProviderServer(t *testing.T) *providerServer {
	t.Helper()
	s := &providerServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *providerServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	auth := r.Header.Get("Authorization")
	if k := r.Header.Get("X-Api-Key"); k != "" {
		auth = k
	}
	s.mu.Lock()
	s.requests = append(s.requests, recorded{path: r.URL.Path, auth: auth, body: body})
	s.mu.Unlock()
	toolResultSent := strings.Contains(string(raw), "tool_result") || strings.Contains(string(raw), "function_call_output") || strings.Contains(string(raw), `"role":"tool"`)
	switch r.URL.Path {
	case "/v1/messages":
		s.anthropic(w, toolResultSent)
	case "/v1/responses":
		s.responses(w, toolResultSent)
	case "/v1/chat/completions":
		s.chat(w, toolResultSent)
	default:
		http.NotFound(w, r)
	}
}

func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprint(w, e)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func (s *providerServer) anthropic(w http.ResponseWriter, afterTool bool) {
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	start := ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":120,"output_tokens":1}}}`)
	if afterTool {
		sse(w, start,
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Order "}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"placed."}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`),
			ev("message_stop", `{"type":"message_stop"}`))
		return
	}
	sse(w, start,
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Placing it."}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"place_order","input":{}}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"symbol\":\"BTC"}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"USDT\",\"qty\":\"0.001\"}"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}`),
		ev("message_stop", `{"type":"message_stop"}`))
}

func (s *providerServer) responses(w http.ResponseWriter, afterTool bool) {
	w.Header().Set("Content-Type", "application/json")
	output := `[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"place_order","arguments":"{\"symbol\":\"BTCUSDT\",\"qty\":\"0.001\"}","status":"completed"}]`
	if afterTool {
		output = `[{"type":"message","id":"m_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Order placed.","annotations":[]}]}]`
	}
	fmt.Fprintf(w, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-test","output":%s,"usage":{"input_tokens":120,"output_tokens":30,"total_tokens":150,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`, output)
}

func (s *providerServer) chat(w http.ResponseWriter, afterTool bool) {
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
	}
	usage := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"local","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}` + "\n\n"
	if afterTool {
		sse(w, chunk(`{"role":"assistant","content":"Order "}`, ""), chunk(`{"content":"placed."}`, ""), chunk(`{}`, "stop"), usage, "data: [DONE]\n\n")
		return
	}
	sse(w,
		chunk(`{"role":"assistant","content":"Placing it."}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"place_order","arguments":"{\"symbol\":\"BTC"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"USDT\",\"qty\":\"0.001\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"), usage, "data: [DONE]\n\n")
}

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
			srv := newProviderServer(t)
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

			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.requests) != 2 {
				t.Fatalf("%d requests", len(srv.requests))
			}
			for _, r := range srv.requests {
				if r.path != tc.path || !strings.Contains(r.auth, key) {
					t.Fatalf("request to %s with auth %q", r.path, r.auth)
				}
			}
			first, _ := json.Marshal(srv.requests[0].body["tools"])
			if !strings.Contains(string(first), `"place_order"`) || !strings.Contains(string(first), "Place an order.") || !strings.Contains(string(first), "additionalProperties") {
				t.Fatalf("tools sent: %s", first)
			}
			second, _ := json.Marshal(srv.requests[1].body)
			if !hasToolResult(srv.requests[1].body, r1.ToolCalls[0].ID) || !strings.Contains(string(second), `{\"status\":\"accepted\"}`) {
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
