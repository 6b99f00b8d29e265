package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// lockedBuf is a goroutine-safe log sink.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// httpEnv is the real stack behind the real HTTP front on a loopback port.
type httpEnv struct {
	*env
	url    string
	tokens map[string]*messages.TokenIssued
	logs   *lockedBuf
}

var adminSocket = messages.Origin{Role: messages.RoleAdmin, Channel: messages.ChannelSocket, PeerUID: 1000, PeerPID: 1}

// sysProfile is the profile of the user's effective policy, "" when the
// user is disabled.
func sysProfile(e *env) func(context.Context, string) (string, error) {
	return func(ctx context.Context, user string) (string, error) {
		res, err := e.sys.Handle(ctx, &messages.ShowPolicyRequest{User: user}, messages.ActorAgent)
		if err != nil {
			return "", err
		}
		v := res.(*messages.PolicyView)
		if v.Disabled {
			return "", nil
		}
		return string(v.Effective.Profile), nil
	}
}

func newHTTPEnv(t testing.TB, o HTTPOptions, extra ...*tool) *httpEnv {
	t.Helper()
	e := newEnv(t)
	ctx := context.Background()
	trade := messages.ProfileTrade
	if _, err := e.sys.Submit(ctx, &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{Profile: &trade}}, adminSocket); err != nil {
		t.Fatal(err)
	}
	h := &httpEnv{env: e, tokens: map[string]*messages.TokenIssued{}, logs: &lockedBuf{}}
	for _, u := range []string{"alice", "bob"} {
		res, err := e.sys.Submit(ctx, &messages.IssueTokenRequest{User: u}, adminSocket)
		if err != nil {
			t.Fatal(err)
		}
		h.tokens[u] = res.(*messages.TokenIssued)
	}
	srv, err := NewServer(Options{
		Backend: HTTPBackend(e.sys, e.sys.Submit), Principal: HTTPPrincipal(sysProfile(e)), Venue: "paper",
		extraTools: append([]*tool{writeToolForTest()}, extra...),
		// The server's call budget follows the HTTP rate (a benchmark lifts both).
		CallsPerSecond: o.RatePerSecond, CallBurst: o.Burst,
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Authenticate = e.sys.Authenticate
	if o.SessionsRefused == nil {
		o.SessionsRefused = e.sys.SessionsRefused
	}
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, nil))
	handler, err := NewHTTPHandler(srv, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	h.url = ts.URL + "/mcp"
	return h
}

// bearerRT adds a bearer token (and any extra headers) to every request.
type bearerRT struct {
	token string
	extra http.Header
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	for k, v := range b.extra {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session over real HTTP with the SDK's client
// transport. clientName is what the client claims to be.
func (h *httpEnv) connect(t testing.TB, token, era, clientName string, extra http.Header) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: clientName}, nil).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: h.url, HTTPClient: &http.Client{Transport: bearerRT{token: token, extra: extra}}, MaxRetries: -1,
	}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// post sends one raw JSON-RPC initialize with the given headers.
func (h *httpEnv) post(t testing.TB, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// Every refusal happens before MCP processing, with its status, its
// headers and a request id; the logs carry the request ids, never a token.
func TestHTTPRefusalsBeforeMCP(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHTTPEnv(t, HTTPOptions{AllowedHosts: []string{"mcp.example"}, AllowedOrigins: []string{"https://app.example"},
		RatePerSecond: 1, Burst: 4, MaxBodyBytes: 4096, now: clock})
	alice, bob := "Bearer "+h.tokens["alice"].Token, "Bearer "+h.tokens["bob"].Token
	cases := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
	}{
		{"no token", nil, initBody, 401},
		{"unknown token", map[string]string{"Authorization": "Bearer gxt_nope"}, initBody, 401},
		{"token id as token", map[string]string{"Authorization": "Bearer " + h.tokens["alice"].ID}, initBody, 401},
		{"basic", map[string]string{"Authorization": "Basic " + h.tokens["alice"].Token}, initBody, 401},
		{"bad host", map[string]string{"Authorization": alice, "Host": "evil.example"}, initBody, 421},
		{"rebinding host", map[string]string{"Authorization": alice, "Host": "evil.example:8000"}, initBody, 421},
		{"bad origin", map[string]string{"Authorization": alice, "Origin": "http://evil.example"}, initBody, 403},
		{"origin look-alike", map[string]string{"Authorization": alice, "Origin": "http://localhost.evil.example"}, initBody, 403},
		{"bad host before auth", map[string]string{"Host": "evil.example"}, initBody, 421},
		{"allowed host", map[string]string{"Authorization": bob, "Host": "mcp.example:443"}, initBody, 200},
		{"allowed origin", map[string]string{"Authorization": bob, "Origin": "https://app.example"}, initBody, 200},
		{"loopback origin", map[string]string{"Authorization": bob, "Origin": "http://localhost:6274"}, initBody, 200},
		{"body too large", map[string]string{"Authorization": bob}, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, 413},
	}
	for _, c := range cases {
		res := h.post(t, c.hdr, c.body)
		if res.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, res.StatusCode, c.status)
		}
		if res.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", c.name)
		}
		if c.status == 401 {
			wa := res.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(wa, "Bearer ") || (c.hdr != nil) != strings.Contains(wa, "invalid_token") {
				t.Errorf("%s: WWW-Authenticate %q", c.name, wa)
			}
		}
		if !strings.Contains(h.logs.String(), res.Header.Get("X-Request-Id")) {
			t.Errorf("%s: the request id is not in the logs", c.name)
		}
	}
	// Rate limit per token: alice has her whole burst, bob spent his
	// (four requests above), and a second later bob has one more.
	for i := range 4 {
		if res := h.post(t, map[string]string{"Authorization": alice}, initBody); res.StatusCode != 200 {
			t.Fatalf("alice request %d: %d", i, res.StatusCode)
		}
	}
	for _, who := range []string{alice, bob} {
		res := h.post(t, map[string]string{"Authorization": who}, initBody)
		if res.StatusCode != 429 || res.Header.Get("Retry-After") != "1" {
			t.Fatalf("over the rate: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if res := h.post(t, map[string]string{"Authorization": bob}, initBody); res.StatusCode != 200 {
		t.Fatalf("after a second: %d", res.StatusCode)
	}
	if res := h.post(t, map[string]string{"Authorization": bob}, initBody); res.StatusCode != 429 {
		t.Fatalf("the bucket refilled more than the rate: %d", res.StatusCode)
	}
	for _, tok := range h.tokens {
		if strings.Contains(h.logs.String(), tok.Token) {
			t.Fatal("a token reached the logs")
		}
	}
	if !strings.Contains(h.logs.String(), `"token_id":"`+h.tokens["bob"].ID+`"`) {
		t.Fatal("the request log does not name the token id")
	}
}

// Two users over real HTTP, in both eras: each sees their own tools and
// policy, acts only on their own state, and nothing the client says
// (clientInfo, headers, arguments) changes who it is.
func TestHTTPTwoUsersIsolated(t *testing.T) {
	h := newHTTPEnv(t, HTTPOptions{})
	ctx := context.Background()
	for _, era := range eras {
		t.Run("era="+era, func(t *testing.T) {
			for _, u := range []string{"alice", "bob"} {
				if _, err := h.sys.Submit(ctx, &messages.SetKillSwitchRequest{User: u, On: false, Level: messages.KillSwitchAdmin}, adminSocket); err != nil {
					t.Fatal(err)
				}
			}
			spoof := http.Header{"X-User": {"alice"}, "X-Forwarded-User": {"alice"}, "Remote-User": {"alice"}}
			a := h.connect(t, h.tokens["alice"].Token, era, "alice", nil)
			b := h.connect(t, h.tokens["bob"].Token, era, "alice", spoof)
			if era != "" && a.InitializeResult().ProtocolVersion != era {
				t.Fatalf("negotiated %s", a.InitializeResult().ProtocolVersion)
			}
			names := func(cs *sdk.ClientSession) []string {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, tl := range res.Tools {
					out = append(out, tl.Name)
				}
				return out
			}
			// alice (trade) sees every tool bob (read_only) sees, plus the
			// trade-profile ones; bob sees none of those.
			an, bn := names(a), names(b)
			if !slices.Contains(an, "test_write") || slices.Contains(bn, "test_write") || slices.Contains(bn, "place_order") ||
				len(an) <= len(bn) || slices.ContainsFunc(bn, func(n string) bool { return !slices.Contains(an, n) }) {
				t.Fatalf("tools/list is not per principal: alice %v, bob %v", an, bn)
			}
			if res, _ := b.CallTool(ctx, &sdk.CallToolParams{Name: "test_write", Arguments: map[string]any{}}); res == nil || !res.IsError {
				t.Fatal("bob called a tool his profile hides")
			}
			if pol, isErr := callJSON(t, b, "get_my_policy", map[string]any{}); isErr || pol["user"] != "bob" {
				t.Fatalf("bob's get_my_policy answered for %v", pol["user"])
			}
			if pol, isErr := callJSON(t, b, "get_my_policy", map[string]any{"user": "alice"}); !isErr || pol["code"] != "invalid_params" {
				t.Fatalf("an argument naming another user was not refused: %v", pol)
			}
			if _, isErr := callJSON(t, a, "activate_kill_switch", map[string]any{}); isErr {
				t.Fatal("alice's kill switch")
			}
			if got := policyJSON(t, h.env, "alice"); !strings.Contains(got, `"kill_switch":"user"`) {
				t.Fatalf("alice: %s", got)
			}
			if got := policyJSON(t, h.env, "bob"); !strings.Contains(got, `"kill_switch":"none"`) {
				t.Fatalf("alice's call reached bob: %s", got)
			}
		})
	}
	// The journal names the token of each change and of each tool call.
	var found int
	calls := map[string]int{}
	for _, r := range h.records(t) {
		if messages.RecordType(r.Type) == messages.RecordToolCall {
			var tc messages.ToolCalled
			if err := json.Unmarshal(r.Payload, &tc); err != nil {
				t.Fatal(err)
			}
			if tc.User != r.User || tc.TokenID != h.tokens[r.User].ID {
				t.Fatalf("tool_call of %s names token %q", r.User, tc.TokenID)
			}
			calls[r.User]++
		}
		if messages.RecordType(r.Type) != messages.RecordKillSwitchOn {
			continue
		}
		if r.User != "alice" || r.Actor != messages.ActorAgent || r.Channel != "http token="+h.tokens["alice"].ID {
			t.Fatalf("kill_switch_on: user %s actor %s channel %q", r.User, r.Actor, r.Channel)
		}
		found++
	}
	if found != len(eras) {
		t.Fatalf("%d kill_switch_on records, want %d", found, len(eras))
	}
	if calls["alice"] != len(eras) || calls["bob"] != 3*len(eras) {
		t.Fatalf("tool_call records per user: %v", calls)
	}
}

// A revoked token fails on its next request, and so does every token of a
// disabled user, in both eras; other users are untouched.
func TestHTTPRevokeAndDisableApplyToTheNextRequest(t *testing.T) {
	for _, era := range eras {
		t.Run("era="+era, func(t *testing.T) {
			h := newHTTPEnv(t, HTTPOptions{})
			ctx := context.Background()
			a := h.connect(t, h.tokens["alice"].Token, era, "c", nil)
			b := h.connect(t, h.tokens["bob"].Token, era, "c", nil)
			for _, cs := range []*sdk.ClientSession{a, b} {
				if _, isErr := callJSON(t, cs, "get_my_policy", map[string]any{}); isErr {
					t.Fatal("get_my_policy before")
				}
			}
			if _, err := h.sys.Submit(ctx, &messages.RevokeTokenRequest{ID: h.tokens["alice"].ID}, adminSocket); err != nil {
				t.Fatal(err)
			}
			if _, err := a.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}}); err == nil {
				t.Fatal("a revoked token's next call went through")
			}
			if res := h.post(t, map[string]string{"Authorization": "Bearer " + h.tokens["alice"].Token}, initBody); res.StatusCode != 401 {
				t.Fatalf("revoked: %d", res.StatusCode)
			}
			if _, isErr := callJSON(t, b, "get_my_policy", map[string]any{}); isErr {
				t.Fatal("revoking alice's token broke bob")
			}
			if _, err := h.sys.Submit(ctx, &messages.DisableUserRequest{User: "bob"}, adminSocket); err != nil {
				t.Fatal(err)
			}
			if _, err := b.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}}); err == nil {
				t.Fatal("a disabled user's next call went through")
			}
		})
	}
}

// A token is unchanged by its user: a principal built from a request
// without the front's check is refused, and the backend refuses a command
// for another user than the token's.
func TestHTTPBackendActsOnlyForTheTokensUser(t *testing.T) {
	e := newEnv(t)
	b := HTTPBackend(e.sys, e.sys.Submit)
	ctx := context.WithValue(context.Background(), principalKey{}, Principal{User: "bob", Profile: ProfileReadOnly, TokenID: "tok_1"})
	if _, err := b.Handle(ctx, &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("bob's token acted for alice: %v", err)
	}
	if _, err := b.Handle(context.Background(), &messages.ShowPolicyRequest{User: "bob"}, messages.ActorAgent); err == nil {
		t.Fatal("a command without a token's principal went through")
	}
	if _, err := HTTPPrincipal(sysProfile(e))(context.Background(), &sdk.CallToolRequest{}); err == nil {
		t.Fatal("a principal without a token")
	}
	if got := policyJSON(t, e, "alice"); !strings.Contains(got, `"kill_switch":"none"`) {
		t.Fatalf("alice changed: %s", got)
	}
}

// Which listen addresses count as loopback (the rest get the TLS warning).
func TestIsLoopbackListen(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8000": true, "localhost:8000": true, "[::1]:8000": true, "127.1.2.3:0": true,
		"0.0.0.0:8000": false, ":8000": false, "[::]:8000": false, "192.168.1.2:8000": false, "example.com:443": false, "127.0.0.1": false,
	} {
		if got := IsLoopbackListen(addr); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
}

// A call whose answer stream is open when its token is revoked runs to its
// end; the token's next request is refused.
func TestHTTPRevokeLetsAnOpenStreamFinish(t *testing.T) {
	for _, era := range eras {
		t.Run("era="+era, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			slow := &tool{name: "test_slow", title: "slow", description: "test only", kind: KindRead, schema: objectSchema(nil, map[string]any{}),
				handle: func(ctx context.Context, c *call) (any, error) {
					close(entered)
					<-release
					return map[string]string{"done": "yes"}, nil
				}}
			h := newHTTPEnv(t, HTTPOptions{}, slow)
			ctx := context.Background()
			a := h.connect(t, h.tokens["alice"].Token, era, "c", nil)
			type answer struct {
				res *sdk.CallToolResult
				err error
			}
			got := make(chan answer, 1)
			go func() {
				res, err := a.CallTool(ctx, &sdk.CallToolParams{Name: "test_slow", Arguments: map[string]any{}})
				got <- answer{res, err}
			}()
			<-entered
			if _, err := h.sys.Submit(ctx, &messages.RevokeTokenRequest{ID: h.tokens["alice"].ID}, adminSocket); err != nil {
				t.Fatal(err)
			}
			close(release)
			ans := <-got
			if ans.err != nil || ans.res.IsError || !strings.Contains(ans.res.Content[0].(*sdk.TextContent).Text, "yes") {
				t.Fatalf("the open call did not finish: %v %+v", ans.err, ans.res)
			}
			if _, err := a.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}}); err == nil {
				t.Fatal("the revoked token's next request went through")
			}
		})
	}
}

// Confirmation over real HTTP in both eras: a 2026-07-28 client (stateless
// handler) gets input_required and calls again (MRTR); an older client
// (stateful handler) is asked through elicitation/create on its session.
// Either way the human is asked once and the handler sees the answer.
func TestHTTPConfirmationBothEras(t *testing.T) {
	h := newHTTPEnv(t, HTTPOptions{}, confirmTool())
	ctx := context.Background()
	for _, era := range eras {
		t.Run("era="+era, func(t *testing.T) {
			var asked atomic.Int32
			copts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked.Add(1)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "c"}, copts).Connect(ctx, &sdk.StreamableClientTransport{
				Endpoint: h.url, HTTPClient: &http.Client{Transport: bearerRT{token: h.tokens["bob"].Token}}, MaxRetries: -1,
			}, &sdk.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			out, isErr := callJSON(t, cs, "test_confirm", map[string]any{})
			if isErr || asked.Load() != 1 || out["approved"] != true {
				t.Fatalf("asked %d times, answer %v", asked.Load(), out)
			}
		})
	}
}

// A client that sends its body too slowly is answered 408 and does not
// hold a handler; headers over the bound get 431 from the server itself.
func TestHTTPSlowBodyAndLargeHeaders(t *testing.T) {
	e := newEnv(t)
	srv, err := NewServer(Options{Backend: HTTPBackend(e.sys, e.sys.Submit), Principal: HTTPPrincipal(sysProfile(e)), Venue: "paper"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.sys.Submit(context.Background(), &messages.IssueTokenRequest{User: "bob"}, adminSocket)
	if err != nil {
		t.Fatal(err)
	}
	token := res.(*messages.TokenIssued).Token
	handler, err := NewHTTPHandler(srv, HTTPOptions{Authenticate: e.sys.Authenticate, BodyTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(handler, slog.New(slog.DiscardHandler))
	go hs.Serve(ln)
	t.Cleanup(func() { _ = hs.Close() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", token)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("stalled body: %d after %v", resp.StatusCode, time.Since(start))
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/mcp", strings.NewReader(initBody))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Padding", strings.Repeat("a", MaxHeaderBytes+4096))
	big, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	big.Body.Close()
	if big.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("large headers: %d", big.StatusCode)
	}
}
