package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The stdin filter before it read lines without a decoder (D154): the
// reference the filter must still agree with on every line.

func refAdmit(line []byte, oversize bool) (jsonrpc.Message, *rejection) {
	invalid := func(id any, reason string) *rejection {
		return &rejection{answer: true, id: id, code: jsonrpc.CodeInvalidRequest, message: "invalid request: " + reason}
	}
	if oversize {
		return nil, invalid(nil, "the message is longer than 1048576 bytes")
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, &rejection{}
	}
	if !json.Valid(line) {
		// encoding/json refuses nesting past 10,000 levels; such a line
		// may still be JSON, and its id is worth answering.
		if id, ok := deepJSON(line); ok {
			return nil, invalid(id, "the message nests deeper than 64 levels")
		}
		return nil, &rejection{answer: true, code: jsonrpc.CodeParseError, message: "parse error: the line is not one JSON value"}
	}
	switch line[0] {
	case '{':
	case '[':
		return nil, invalid(nil, "batches are not supported; send one message per line")
	default:
		return nil, invalid(nil, "a message must be a JSON object")
	}
	members, _ := refTopMembers(line)
	_, hasMethod := members["method"]
	_, hasResult := members["result"]
	_, hasError := members["error"]
	if !hasMethod && (hasResult || hasError) {
		return refAdmitResponse(line, members)
	}

	rawID, hasID := members["id"]
	var id jsonrpc.ID
	var answerID any // what an error answer carries: the id if it is valid
	idOK := true
	if hasID {
		id, idOK = refParseID(rawID)
		if idOK {
			answerID = id.Raw()
		}
	}
	switch {
	case depth(line) > MaxStdioDepth:
		return nil, invalid(answerID, "the message nests deeper than 64 levels")
	case refDuplicateMember(line):
		return nil, invalid(answerID, "a member appears more than once")
	case !refIsVersion(members["jsonrpc"]):
		return nil, invalid(answerID, `"jsonrpc" must be "2.0"`)
	case !idOK:
		return nil, invalid(nil, `"id" must be a string of at most 256 bytes or an integer of at most 15 digits`)
	case !hasMethod:
		return nil, invalid(answerID, `a request needs a "method"`)
	case hasResult || hasError:
		return nil, invalid(answerID, `a request carries no "result" or "error"`)
	}
	var method string
	if err := json.Unmarshal(members["method"], &method); err != nil || members["method"][0] != '"' {
		return nil, invalid(answerID, `"method" must be a string`)
	}
	params, hasParams := members["params"]
	if hasParams && params[0] != '{' && params[0] != '[' {
		return nil, invalid(answerID, `"params" must be an object`)
	}
	if !hasID && len(line) > MaxStdioNotification {
		return nil, invalid(nil, "a notification is longer than 4096 bytes")
	}
	if method == "logging/setLevel" && !refValidLevel(params) {
		// The SDK logs the level it is given.
		return nil, &rejection{answer: true, id: answerID, code: jsonrpc.CodeInvalidParams, message: msgInvalidParams}
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: params}, nil
}

func refAdmitResponse(line []byte, members map[string]json.RawMessage) (jsonrpc.Message, *rejection) {
	drop := func(reason string) *rejection { return &rejection{code: jsonrpc.CodeInvalidRequest, message: reason} }
	id, ok := refParseID(members["id"])
	switch {
	case depth(line) > MaxStdioDepth:
		return nil, drop("the message nests deeper than 64 levels")
	case refDuplicateMember(line):
		return nil, drop("a member appears more than once")
	case !refIsVersion(members["jsonrpc"]):
		return nil, drop(`"jsonrpc" is not "2.0"`)
	case !ok:
		return nil, drop("the response has no valid id")
	}
	result, hasResult := members["result"]
	rawErr, hasError := members["error"]
	if hasResult == hasError {
		return nil, drop(`a response has exactly one of "result" and "error"`)
	}
	if hasResult {
		return &jsonrpc.Response{ID: id, Result: result}, nil
	}
	em, _ := refTopMembers(rawErr)
	var werr jsonrpc.Error
	if rawErr[0] != '{' || !errorCode.Match(em["code"]) ||
		len(em["message"]) == 0 || em["message"][0] != '"' ||
		json.Unmarshal(em["code"], &werr.Code) != nil || json.Unmarshal(em["message"], &werr.Message) != nil {
		return nil, drop(`"error" must be an object with an integer "code" and a string "message"`)
	}
	if data, ok := em["data"]; ok {
		werr.Data = data
	}
	return &jsonrpc.Response{ID: id, Error: &werr}, nil
}

func refParseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	switch {
	case len(raw) == 0:
		return jsonrpc.ID{}, false
	case raw[0] == '"':
		var s string
		if !utf8.Valid(raw) || json.Unmarshal(raw, &s) != nil || len(s) > MaxStdioIDLength {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	case numericID.Match(raw) && !bytes.Equal(raw, []byte("-0")):
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(f)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

func refIsVersion(raw json.RawMessage) bool {
	var v string
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &v) == nil && v == "2.0"
}

func refTopMembers(obj []byte) (map[string]json.RawMessage, bool) {
	members := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return members, false
	}
	dup := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return members, dup
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return members, dup
		}
		if _, seen := members[name]; seen {
			dup = true
		}
		members[name] = v
	}
	return members, dup
}

func refValidLevel(params json.RawMessage) bool {
	m, _ := refTopMembers(params)
	var level string
	return len(m["level"]) > 0 && m["level"][0] == '"' && json.Unmarshal(m["level"], &level) == nil && logLevels[level]
}

func refDuplicateMember(data []byte) bool {
	type frame struct {
		object, wantName bool
		names            map[string]struct{}
	}
	var stack []frame
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true, wantName: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantName = true
			}
		case '"':
			end := i + 1
			plain := true
			for ; data[end] != '"'; end++ {
				if data[end] == '\\' {
					end++
					plain = false
				} else if data[end] >= utf8.RuneSelf {
					plain = false
				}
			}
			if n := len(stack); n > 0 && stack[n-1].wantName {
				f := &stack[n-1]
				f.wantName = false
				name := string(data[i+1 : end])
				if !plain {
					_ = json.Unmarshal(data[i:end+1], &name)
				}
				if _, seen := f.names[name]; seen {
					return true
				}
				if f.names == nil {
					f.names = map[string]struct{}{}
				}
				f.names[name] = struct{}{}
			}
			i = end
		}
	}
	return false
}

// filterCases are lines the filter must judge as the reference does:
// the fuzz seeds, names escaped and repeated at every depth, objects past
// the filter's in-line name search, and members in any order.
func filterCases() []string {
	many := func(n int, dupAt int) string {
		var b strings.Builder
		b.WriteString(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			k := i
			if i == dupAt {
				k = 0
			}
			b.WriteString(`"k` + strings.Repeat("a", k%7) + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + `":` + "1")
		}
		b.WriteString(`}}}`)
		return b.String()
	}
	return []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		` {"jsonrpc" : "2.0" , "id" : "a b" , "method" : "tools/call" , "params" : {"name":"get_ticker","arguments":{"symbol":"BTCUSDT"}} } `,
		`{"method":"ping","id":9,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x","data":[1]}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"message":"x","code":-1,"code":2}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":7,"error":[1]}`, `{"jsonrpc":"2.0","id":7,"result":1,"error":{}}`,
		`{}`, `{"id":"a7","method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, `{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":123456789012345,"method":"ping"}`, `{"jsonrpc":"2.0","id":-1234567890123456,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":"x","method":"p","id":"y"}`,
		`{"jsonrpc":"2.0","\u0069d":"x","method":"p","id":"y"}`, `{"jsonrpc":"2.0","id":"x","m\u0065thod":"p"}`,
		`{"jsonrpc":"2.0","id":"\u00e9\n","method":"p\u00e9"}`, `{"jsonrpc":"2.0","id":"é","method":"pé"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"p\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}",
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 256) + `","method":"p"}`, `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 257) + `","method":"p"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `"x"`, `not json`, ``, "\r\n", `{"jsonrpc":"2.0","id":1,"method":1}`,
		`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, `{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_ticker","arguments":{"a":[{"x":1,"\u0078":2}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":{"b":1},"c":{"b":1},"b":[{"b":1},{"b":2}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":{"b":1,"c":{"d":1},"b":2}}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a\"b":1,"a\u0022b":2}}}`,
		many(10, -1), many(10, 9), many(17, -1), many(17, 16), many(40, -1), many(40, 39), many(40, 17), many(700, -1), many(700, 650),
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"` + strings.Repeat("A", 5000) + `"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"d\u0065bug"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":["debug"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
	}
}

func sameVerdict(t *testing.T, line []byte) {
	t.Helper()
	msg, rej := admit(line, false)
	refMsg, refRej := refAdmit(line, false)
	if (rej == nil) != (refRej == nil) {
		t.Fatalf("%q: refused %v, the reference %v", line, rej, refRej)
	}
	if rej != nil {
		if *rej != *refRej && !(rej.message == refRej.message && rej.code == refRej.code && rej.answer == refRej.answer && sameID(rej.id, refRej.id)) {
			t.Fatalf("%q: refusal %+v, the reference %+v", line, *rej, *refRej)
		}
		return
	}
	a, err1 := jsonrpc.EncodeMessage(msg)
	b, err2 := jsonrpc.EncodeMessage(refMsg)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("%q: admitted as %s, the reference as %s", line, a, b)
	}
}

func sameID(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The filter judges every line as the decoder-based reference did.
func TestStdioFilterMatchesReference(t *testing.T) {
	for _, c := range filterCases() {
		sameVerdict(t, []byte(c))
	}
}

func FuzzStdioFilterMatchesReference(f *testing.F) {
	for _, c := range filterCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > MaxStdioLine {
			return
		}
		sameVerdict(t, line)
	})
}

// Every line the stdio transport writes is what the SDK's encoder makes of
// the message, and a newline.
func TestStdioLineIsTheSDKEncoding(t *testing.T) {
	mustID := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"{\"a\":\"<b>&\u2028é\"}"}],"structuredContent":{"a":"<b>&\u2028é"}}`)
	var msgs []jsonrpc.Message
	for _, id := range []jsonrpc.ID{{}, mustID(float64(0)), mustID(float64(42)), mustID(float64(-123456789012345)), mustID("a"), mustID(""),
		mustID("é\u2028\"\\/"), mustID("<script>&"), mustID(strings.Repeat("x", 256))} {
		msgs = append(msgs, &jsonrpc.Response{ID: id, Result: result}, &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)},
			&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: -32600, Message: "invalid request: <x>"}},
			&jsonrpc.Request{ID: id, Method: "ping", Params: json.RawMessage(`{"a":1}`)})
	}
	msgs = append(msgs, &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"<&>"}`)})
	for _, m := range msgs {
		want, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendLine([]byte("kept"), m)
		if err != nil || string(got) != "kept"+string(want)+"\n" {
			t.Fatalf("line %q, the SDK encodes %q (%v)", got, want, err)
		}
	}
}

// The activity line reads the same fields of an answer as decoding the
// whole answer into a map did.
func TestAnswerFieldsMatchAMapDecode(t *testing.T) {
	for _, raw := range []string{
		`{}`, `[]`, `"x"`, `{"code":"rate_limited","message":"m","details":{"request_id":"0123abcd","limit":"max_leverage","x":1}}`,
		`{"status":"pending","confirmation_id":"cf_1","order_id":7,"client_order_id":"gx-1","action_id":null}`,
		`{"status":"a","status":"b","details":{"limit":"x"},"details":{"request_id":"r"}}`,
		`{"details":"x","code":{"a":"b"},"st\u0061tus":"filled","order_id":"\u00e9"}`,
		`{"nested":{"status":"no"},"list":[{"code":"no"}],"order_id":"o-1"}`,
		"{\"status\":\"\xff\"}",
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(raw), &m)
		want := map[string]any{}
		for _, k := range []string{"code", "status", "confirmation_id", "client_order_id", "order_id", "action_id"} {
			if v, ok := m[k].(string); ok {
				want[k] = v
			}
		}
		if d, ok := m["details"].(map[string]any); ok {
			for _, k := range []string{"request_id", "limit"} {
				if v, ok := d[k].(string); ok {
					want["details."+k] = v
				}
			}
		}
		got := answerFieldsOf([]byte(raw))
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", raw, got, want)
		}
		for k, v := range want {
			if got.get(k) != v {
				t.Fatalf("%s: %s is %v, want %v", raw, k, got.get(k), v)
			}
		}
	}
}
