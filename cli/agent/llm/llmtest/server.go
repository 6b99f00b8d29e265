package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is a scripted stand-in for the three provider APIs over
// real loopback HTTP: the official SDKs talk to it as to the real thing.
// Its first answer in a conversation is a call of place_order with
// {"symbol":"BTCUSDT","qty":"0.001"} (streamed in pieces where the API
// streams), its answer to a tool result is the text "Order placed.". It
// records every request.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Recorded
}

// Recorded is one request the server received.
type Recorded struct {
	Path string
	// Auth is the Authorization or x-api-key header.
	Auth string
	Body map[string]any
}

func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	auth := r.Header.Get("Authorization")
	if k := r.Header.Get("X-Api-Key"); k != "" {
		auth = k
	}
	s.mu.Lock()
	s.requests = append(s.requests, Recorded{Path: r.URL.Path, Auth: auth, Body: body})
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

func (s *Server) anthropic(w http.ResponseWriter, afterTool bool) {
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

func (s *Server) responses(w http.ResponseWriter, afterTool bool) {
	w.Header().Set("Content-Type", "application/json")
	output := `[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"place_order","arguments":"{\"symbol\":\"BTCUSDT\",\"qty\":\"0.001\"}","status":"completed"}]`
	if afterTool {
		output = `[{"type":"message","id":"m_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Order placed.","annotations":[]}]}]`
	}
	fmt.Fprintf(w, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-test","output":%s,"usage":{"input_tokens":120,"output_tokens":30,"total_tokens":150,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`, output)
}

func (s *Server) chat(w http.ResponseWriter, afterTool bool) {
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
