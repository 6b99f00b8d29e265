package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStdioFilter feeds arbitrary lines to the stdio filter: it never
// panics; a line it admits is one the SDK's own decoder reads the same way
// (so the SDK neither ends the session on it nor answers a different id);
// a line it refuses gets exactly one well-formed JSON-RPC error answer with
// a fixed message, unless it is shaped like a response, which JSON-RPC
// never answers.
func FuzzStdioFilter(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"get_ticker","arguments":{"symbol":"BTCUSDT"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x","data":[1]}}`,
		`{}`, `{"id":"a7","method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, `{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":"x","method":"p","id":"y"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":` + nestFuzz(70) + `}}`,
		`{"jsonrpc":"2.0","id":"d","method":"ping","params":{"_meta":` + nestFuzz(10001) + `}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `"x"`, `not json`, ``, "\r\n",
		`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, `{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_ticker","arguments":{"a":[{"x":1,"\u0078":2}]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"` + strings.Repeat("A", 5000) + `"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > MaxStdioLine {
			return
		}
		msg, rej := admit(line, false)
		if msg != nil && rej != nil {
			t.Fatal("both admitted and refused")
		}
		if msg != nil {
			checkAdmitted(t, line, msg)
			return
		}
		trimmed := bytes.TrimSpace(line)
		if !rej.answer {
			if len(trimmed) > 0 && !looksLikeResponse(trimmed) {
				t.Fatalf("%q is left unanswered", line)
			}
			return
		}
		checkErrorAnswer(t, trimmed, rej.encode())
	})
}

func nestFuzz(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// checkAdmitted: the SDK decodes line to the message admit built.
func checkAdmitted(t *testing.T, line []byte, msg jsonrpc.Message) {
	if depth(line) > MaxStdioDepth {
		t.Fatalf("admitted %q, nested deeper than %d", line, MaxStdioDepth)
	}
	got, err := jsonrpc.DecodeMessage(bytes.TrimSpace(line))
	if err != nil {
		t.Fatalf("admitted %q, which the SDK refuses: %v", line, err)
	}
	if _, err := jsonrpc.EncodeMessage(msg); err != nil {
		t.Fatalf("admitted %q cannot be encoded: %v", line, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(line), &members); err != nil {
		t.Fatalf("admitted %q: %v", line, err)
	}
	if repeatsAName(bytes.TrimSpace(line)) {
		t.Fatalf("admitted %q, which names a member twice", line)
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() && len(bytes.TrimSpace(line)) > MaxStdioNotification {
			t.Fatalf("admitted a notification of %d bytes", len(line))
		}
		g, ok := got.(*jsonrpc.Request)
		if !ok || g.ID != m.ID || g.Method != m.Method || !bytes.Equal(g.Params, m.Params) {
			t.Fatalf("admitted %q as %+v; the SDK reads %+v", line, m, got)
		}
		if m.IsCall() {
			// The answer carries the id exactly as it was sent.
			enc, _ := json.Marshal(m.ID.Raw())
			var sent, back any
			if json.Unmarshal(members["id"], &sent) != nil || json.Unmarshal(enc, &back) != nil || sent != back {
				t.Fatalf("id %s would be answered as %s", members["id"], enc)
			}
		}
	case *jsonrpc.Response:
		g, ok := got.(*jsonrpc.Response)
		if !ok || g.ID != m.ID || !bytes.Equal(g.Result, m.Result) || (g.Error == nil) != (m.Error == nil) {
			t.Fatalf("admitted %q as %+v; the SDK reads %+v", line, m, got)
		}
		if m.Error != nil {
			ge, me := g.Error.(*jsonrpc.Error), m.Error.(*jsonrpc.Error)
			if ge.Code != me.Code || ge.Message != me.Message || !bytes.Equal(ge.Data, me.Data) {
				t.Fatalf("admitted %q with error %+v; the SDK reads %+v", line, me, ge)
			}
		}
	default:
		t.Fatalf("admitted %q as %T", line, msg)
	}
}

// repeatsAName: an object anywhere in line (valid JSON) names a member
// twice, read with encoding/json's tokenizer.
func repeatsAName(line []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(line))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token in this object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				continue
			}
			name := tok.(string)
			if top.names[name] {
				return true
			}
			top.names[name], top.key = true, false
			continue
		}
		if top != nil && top.object {
			top.key = true // this token starts the member's value
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// looksLikeResponse: a JSON object with "result" or "error" and no
// "method" member.
func looksLikeResponse(line []byte) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return false
	}
	_, m := members["method"]
	_, r := members["result"]
	_, e := members["error"]
	return !m && (r || e)
}

// checkErrorAnswer: one line, a JSON-RPC 2.0 error response with a fixed
// message and either a null id or the line's own valid id.
func checkErrorAnswer(t *testing.T, line, answer []byte) {
	if bytes.Count(answer, []byte("\n")) != 1 || answer[len(answer)-1] != '\n' {
		t.Fatalf("answer to %q is not one line: %q", line, answer)
	}
	var a struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(answer, &members) != nil || len(members) != 3 || json.Unmarshal(answer, &a) != nil ||
		a.JSONRPC != "2.0" || a.Error == nil || a.ID == nil {
		t.Fatalf("answer to %q is not a JSON-RPC error: %s", line, answer)
	}
	switch {
	case a.Error.Code == jsonrpc.CodeParseError && strings.HasPrefix(a.Error.Message, "parse error: "):
	case a.Error.Code == jsonrpc.CodeInvalidRequest && strings.HasPrefix(a.Error.Message, "invalid request: "):
	case a.Error.Code == jsonrpc.CodeInvalidParams && a.Error.Message == msgInvalidParams:
	default:
		t.Fatalf("answer to %q: code %d, message %q", line, a.Error.Code, a.Error.Message)
	}
	if len(a.Error.Message) > 120 {
		t.Fatalf("answer to %q: message %q", line, a.Error.Message)
	}
	if a.Error.Code == jsonrpc.CodeParseError && json.Valid(line) {
		t.Fatalf("%q is JSON but was answered with a parse error", line)
	}
	if string(a.ID) == "null" {
		return
	}
	var want any
	var lm map[string]json.RawMessage
	if json.Unmarshal(line, &lm) == nil {
		id, ok := parseID(lm["id"])
		if !ok {
			t.Fatalf("answer to %q names the invalid id %s", line, a.ID)
		}
		want = id.Raw()
	} else if id, deep := deepJSON(line); deep && id != nil {
		want = id // past encoding/json's nesting limit
	} else {
		t.Fatalf("answer to %q names id %s", line, a.ID)
	}
	var sent, back any
	enc, _ := json.Marshal(want)
	if json.Unmarshal(enc, &sent) != nil || json.Unmarshal(a.ID, &back) != nil || sent != back {
		t.Fatalf("answer to %q names id %s", line, a.ID)
	}
}
