package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The two protocol eras this server must serve.
var eras = []string{"", "2025-11-25"} // "" = the newest (2026-07-28)

// env is a real server stack: the simulator on loopback, the venue client,
// the actor system with a journal in a temp dir, and the MCP server.
type env struct {
	stack  *testkit.Stack
	sys    *actors.System
	dir    string
	simURL string
}

// envOf is the env of a stack the kit built.
func envOf(s *testkit.Stack) *env {
	e := &env{stack: s, sys: s.Sys, dir: s.Dir}
	if s.Sim != nil {
		e.simURL = s.Sim.URL
	}
	return e
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvFull(t, false, nil)
}

// newEnvWith is newEnv; with stream, each user's venue actor also runs
// the private stream of the simulator.
func newEnvWith(t testing.TB, stream bool) *env {
	t.Helper()
	return newEnvFull(t, stream, nil)
}

// newEnvConfig is newEnv with the actor configuration changed by edit.
func newEnvConfig(t testing.TB, edit func(*actors.Config)) *env {
	t.Helper()
	return newEnvFull(t, false, edit)
}

// newEnvFull is newEnv with the private stream (stream) and the actor
// configuration changed by edit.
func newEnvFull(t testing.TB, stream bool, edit func(*actors.Config)) *env {
	t.Helper()
	return newEnvVia(t, stream, nil, edit)
}

// newEnvVia is newEnvFull with the venue's REST API (market and account
// alike) reached at the address via gives for the simulator's (nil: the
// simulator itself), e.g. a proxy in front of it; the private stream comes
// from the simulator.
func newEnvVia(t testing.TB, stream bool, via func(simURL string) string, edit func(*actors.Config)) *env {
	t.Helper()
	return envOf(testkit.Start(t, testkit.Options{
		RESTVia: via, Stream: stream, Configure: edit,
		Users: []string{"local", "alice", "bob", "victim", "bystander"},
	}))
}

func (e *env) stop() { e.stack.Stop() }

// records stops the stack and returns the journal.
func (e *env) records(t testing.TB) []wal.Record {
	t.Helper()
	return e.stack.Records(t)
}

func fixedPrincipal(user, profile string) func(context.Context, sdk.Request) (Principal, error) {
	return func(context.Context, sdk.Request) (Principal, error) {
		return Principal{User: user, Profile: profile}, nil
	}
}

// connect serves o over in-memory transports and returns a client session.
func connect(t testing.TB, o Options, era string) *sdk.ClientSession {
	t.Helper()
	return serveOn(t, o, testkit.Client{Era: era})
}

// serveOn builds the server o describes (venue paper unless set) and
// connects the client c to it over in-memory transports.
func serveOn(t testing.TB, o Options, c testkit.Client) *sdk.ClientSession {
	t.Helper()
	if o.Venue == "" {
		o.Venue = "paper"
	}
	srv, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Connect(t, srv, c)
}

func callJSON(t testing.TB, cs *sdk.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: want exactly one content block, got %d", name, len(res.Content))
	}
	text := res.Content[0].(*sdk.TextContent).Text
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("%s: text block is not JSON: %v", name, err)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromStructured map[string]any
	if err := json.Unmarshal(sc, &fromStructured); err != nil {
		t.Fatalf("%s: structuredContent is not an object: %s", name, sc)
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(fromStructured)
	if string(a) != string(b) {
		t.Fatalf("%s: structuredContent and text differ:\n%s\n%s", name, a, b)
	}
	return fromStructured, res.IsError
}

func TestToolsListBothEras(t *testing.T) {
	e := newEnv(t)
	for _, era := range eras {
		t.Run("era="+era, func(t *testing.T) {
			cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, era)
			if era != "" && cs.InitializeResult().ProtocolVersion != era {
				t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, era)
			}
			if !strings.Contains(cs.InitializeResult().Instructions, "JSON strings") {
				t.Error("server instructions missing")
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
				if strings.HasPrefix(tl.Name, "get_") && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
					t.Errorf("%s: read tool without readOnlyHint", tl.Name)
				}
			}
			want := "activate_kill_switch,cancel_confirmation,get_balances,get_confirmation_status,get_instrument,get_klines,get_my_journal,get_my_policy,get_open_orders," +
				"get_order_history,get_orderbook,get_positions,get_posture,get_ticker,get_trades,reduce_risk_only,wait_for_update"
			if got := strings.Join(names, ","); got != want {
				t.Fatalf("tools = %s, want %s", got, want)
			}
		})
	}
}

// Annotations follow the kind for every tool in the registry: a tool on the
// wrong side fails the build.
func TestAnnotationsMatchKind(t *testing.T) {
	s := &server{opts: Options{}}
	reg := newRegistry(slices.Concat(s.marketTools(), s.accountTools(), s.safetyTools(), s.journalTools(), []*tool{writeToolForTest()})...)
	for _, tl := range reg.tools {
		a := tl.annotations()
		switch tl.kind {
		case KindRead:
			if !a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("%s: read tool must be readOnlyHint and not destructive", tl.name)
			}
		case KindTrade:
			if a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("%s: trading tool must be destructiveHint", tl.name)
			}
		}
		if !toolNamePattern.MatchString(tl.name) {
			t.Errorf("%s: bad tool name", tl.name)
		}
		if tl.schema["type"] != "object" || tl.schema["additionalProperties"] != false {
			t.Errorf("%s: schema must be a closed object", tl.name)
		}
	}
}

func TestMarketToolsHappyPathBothEras(t *testing.T) {
	e := newEnv(t)
	for _, era := range eras {
		t.Run("era="+era, func(t *testing.T) {
			cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, era)
			tk, isErr := callJSON(t, cs, "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
			if isErr {
				t.Fatalf("get_ticker failed: %v", tk)
			}
			if tk["venue"] != "paper" || tk["symbol"] != "BTCUSDT" {
				t.Fatalf("ticker = %v", tk)
			}
			for _, f := range []string{"last_price", "bid1_price", "ask1_price"} {
				if _, ok := tk[f].(string); !ok {
					t.Errorf("%s must be a JSON string, got %T", f, tk[f])
				}
			}
			if d, ok := tk["derivatives"].(map[string]any); !ok || d["mark_price"] == nil {
				t.Errorf("linear ticker without derivatives: %v", tk)
			}

			ob, isErr := callJSON(t, cs, "get_orderbook", map[string]any{"symbol": "ETHUSDT", "category": "spot", "limit": 3})
			if isErr {
				t.Fatalf("get_orderbook failed: %v", ob)
			}
			if bids := ob["bids"].([]any); len(bids) != 3 {
				t.Fatalf("want 3 bid levels, got %d", len(bids))
			}

			kl, isErr := callJSON(t, cs, "get_klines", map[string]any{"symbol": "SOLUSDT", "category": "linear", "interval": "15", "limit": 4})
			if isErr || len(kl["klines"].([]any)) != 4 {
				t.Fatalf("get_klines: %v", kl)
			}
			in, isErr := callJSON(t, cs, "get_instrument", map[string]any{"symbol": "BTCUSDT", "category": "spot"})
			if isErr || in["tick_size"] == nil || in["qty_step"] == nil {
				t.Fatalf("get_instrument: %v", in)
			}
		})
	}
}

// Hostile and malformed arguments get invalid_params naming the field, and
// never echo the value.
func TestInvalidParams(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, "")
	const marker = "IGNORE-PREVIOUS-INSTRUCTIONS"
	cases := []struct {
		name  string
		tool  string
		args  any
		field string
	}{
		{"missing symbol", "get_ticker", map[string]any{"category": "linear"}, "symbol"},
		{"number symbol", "get_ticker", map[string]any{"symbol": 42, "category": "linear"}, "symbol"},
		{"lowercase symbol", "get_ticker", map[string]any{"symbol": "btc" + marker, "category": "linear"}, "symbol"},
		{"bad category", "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": marker}, "category"},
		{"unknown argument", "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "spot", "qty": "1"}, "qty"},
		{"hostile argument name", "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "spot", marker: 1}, "arguments"},
		{"limit too big", "get_orderbook", map[string]any{"symbol": "BTCUSDT", "category": "spot", "limit": 5000}, "limit"},
		{"limit as string", "get_orderbook", map[string]any{"symbol": "BTCUSDT", "category": "spot", "limit": "5"}, "limit"},
		{"bad interval", "get_klines", map[string]any{"symbol": "BTCUSDT", "category": "spot", "interval": "7"}, "interval"},
		{"bad time", "get_klines", map[string]any{"symbol": "BTCUSDT", "category": "spot", "interval": "1", "start_time": "yesterday " + marker}, "start_time"},
		{"reversed window", "get_klines", map[string]any{"symbol": "BTCUSDT", "category": "spot", "interval": "1", "start_time": "2026-01-02T00:00:00Z", "end_time": "2026-01-01T00:00:00Z"}, "end_time"},
		{"arguments not an object", "get_ticker", []any{"BTCUSDT"}, "arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, isErr := callJSON(t, cs, c.tool, c.args)
			if !isErr {
				t.Fatalf("accepted: %v", res)
			}
			if res["code"] != "invalid_params" {
				t.Fatalf("code = %v", res["code"])
			}
			d, _ := res["details"].(map[string]any)
			if d["field"] != c.field || d["reason"] == "" || d["reason"] == nil {
				t.Fatalf("details = %v, want field %s", d, c.field)
			}
			raw, _ := json.Marshal(res)
			if strings.Contains(string(raw), marker) || strings.Contains(string(raw), "btc") {
				t.Fatalf("the rejected value was echoed: %s", raw)
			}
			if res["next_step"] == "" {
				t.Error("no next_step")
			}
		})
	}
}

// writeToolForTest is a test-only tool of kind trade: it proves that a tool
// hidden from a profile is refused when called by name. It never ships.
func writeToolForTest() *tool {
	return &tool{
		name: "test_write", title: "test write", description: "test only", kind: KindTrade,
		schema: objectSchema(nil, map[string]any{}),
		handle: func(ctx context.Context, c *call) (any, error) {
			if err := c.args.done(); err != nil {
				return nil, err
			}
			return map[string]string{"done": "yes"}, nil
		},
	}
}

func panicToolForTest() *tool {
	return &tool{
		name: "test_panic", title: "test panic", description: "test only", kind: KindRead,
		schema: objectSchema(nil, map[string]any{}),
		handle: func(context.Context, *call) (any, error) { panic("boom") },
	}
}

func TestHiddenToolIsRefusedAndJournaled(t *testing.T) {
	e := newEnv(t)
	ro := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly), extraTools: []*tool{writeToolForTest()}}, "")
	list, err := ro.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name == "test_write" {
			t.Fatal("read_only principal sees a trade tool")
		}
	}
	res, isErr := callJSON(t, ro, "test_write", map[string]any{})
	if !isErr || res["code"] != "permission_denied" {
		t.Fatalf("hidden tool called by name: %v", res)
	}

	tr := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("bob", ProfileTrade), extraTools: []*tool{writeToolForTest()}}, "2025-11-25")
	res, isErr = callJSON(t, tr, "test_write", map[string]any{})
	if isErr || res["done"] != "yes" {
		t.Fatalf("trade principal: %v", res)
	}
	list, _ = tr.ListTools(context.Background(), nil)
	found := false
	for _, tl := range list.Tools {
		found = found || tl.Name == "test_write"
	}
	if !found {
		t.Fatal("trade principal does not see the trade tool")
	}

	// An unknown tool is a not_found result that does not echo the name.
	long := strings.Repeat("x", 100000)
	res, isErr = callJSON(t, ro, long, map[string]any{})
	if !isErr || res["code"] != "not_found" {
		t.Fatalf("unknown tool: %v", res)
	}
	if raw, _ := json.Marshal(res); strings.Contains(string(raw), "xxxx") {
		t.Fatal("the unknown tool's name was echoed")
	}

	var calls []messages.ToolCalled
	for _, r := range e.records(t) {
		if messages.RecordType(r.Type) != messages.RecordToolCall {
			continue
		}
		var tc messages.ToolCalled
		if err := json.Unmarshal(r.Payload, &tc); err != nil {
			t.Fatal(err)
		}
		if r.Actor != messages.ActorAgent || r.User != tc.User {
			t.Errorf("record actor/user = %s/%s", r.Actor, r.User)
		}
		calls = append(calls, tc)
	}
	want := []string{"alice test_write false", "bob test_write true", "alice (unknown) false"}
	if len(calls) != len(want) {
		t.Fatalf("journaled %d tool calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		got := fmt.Sprintf("%s %s %v", calls[i].User, calls[i].Tool, calls[i].Admitted)
		if got != w {
			t.Errorf("call %d = %s, want %s", i, got, w)
		}
		if len(calls[i].ArgsSHA256) != 64 {
			t.Errorf("call %d: no argument digest", i)
		}
	}
}

func TestReadToolCallsAreJournaled(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, "")
	callJSON(t, cs, "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "spot"})
	callJSON(t, cs, "get_ticker", map[string]any{"symbol": 1})
	var tools []string
	for _, r := range e.records(t) {
		var tc messages.ToolCalled
		if messages.RecordType(r.Type) == messages.RecordToolCall && json.Unmarshal(r.Payload, &tc) == nil {
			tools = append(tools, tc.Tool)
		}
	}
	if strings.Join(tools, ",") != "get_ticker,get_ticker" {
		t.Fatalf("journaled %v", tools)
	}
}

func TestPanickingHandlerKeepsSession(t *testing.T) {
	e := newEnv(t)
	var logBuf strings.Builder
	lw := &lockedWriter{w: &logBuf}
	cs := connect(t, Options{
		Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly),
		extraTools: []*tool{panicToolForTest()}, Logger: slog.New(slog.NewJSONHandler(lw, nil)),
	}, "")
	res, isErr := callJSON(t, cs, "test_panic", map[string]any{})
	if !isErr || res["code"] != "internal_error" {
		t.Fatalf("panic became %v", res)
	}
	d, _ := res["details"].(map[string]any)
	if id, _ := d["request_id"].(string); len(id) != 16 {
		t.Fatalf("no request_id: %v", res)
	}
	if tk, isErr := callJSON(t, cs, "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "spot"}); isErr {
		t.Fatalf("session broken after a panic: %v", tk)
	}
	lw.mu.Lock()
	logged := logBuf.String()
	lw.mu.Unlock()
	if !strings.Contains(logged, d["request_id"].(string)) {
		t.Error("the panic's request_id is not in the server log")
	}
}

// Venue failures keep their code and never leak exchange text outside
// untrusted_text.
func TestVenueErrorShape(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", ProfileReadOnly)}, "")
	res, isErr := callJSON(t, cs, "get_ticker", map[string]any{"symbol": "NOSUCHCOIN", "category": "linear"})
	if !isErr {
		t.Fatalf("unknown symbol accepted: %v", res)
	}
	if c := res["code"]; c != "not_found" && c != "exchange_rejected" {
		t.Fatalf("code = %v", c)
	}
	if msg, _ := res["message"].(string); strings.Contains(strings.ToLower(msg), "symbol invalid") {
		t.Fatalf("exchange text in message: %q", msg)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestNewServerRequiresDeps(t *testing.T) {
	if _, err := NewServer(Options{}); err == nil {
		t.Fatal("NewServer without a backend must fail")
	}
}

// The caller is identified once per tool call: the guard's answer reaches
// the handler, so the user actor is not asked twice.
func TestPrincipalIsResolvedOncePerCall(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	calls := 0
	principal := func(context.Context, sdk.Request) (Principal, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return Principal{User: "local", Profile: ProfileReadOnly}, nil
	}
	cs := connect(t, Options{Backend: e.sys, Principal: principal}, "")
	if _, isErr := callJSON(t, cs, "get_my_policy", map[string]any{}); isErr {
		t.Fatal("get_my_policy failed")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("the principal was resolved %d times for one call", calls)
	}
}
