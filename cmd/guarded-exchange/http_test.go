package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is `serve --transport http` running on a loopback port.
type httpServer struct {
	url  string
	mu   sync.Mutex
	logs strings.Builder
}

func (h *httpServer) log() string { h.mu.Lock(); defer h.mu.Unlock(); return h.logs.String() }

func startHTTPServe(t *testing.T, in install, extraEnv ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--transport", "http", "--listen", "127.0.0.1:0")
	cmd.Env = in.env(extraEnv...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &httpServer{}
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			h.mu.Lock()
			h.logs.WriteString(sc.Text() + "\n")
			h.mu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving MCP over HTTP" {
				addr <- line.Addr
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
		if stdout.Len() != 0 {
			t.Errorf("serve --transport http wrote to stdout: %q", stdout.String())
		}
	})
	select {
	case a := <-addr:
		h.url = "http://" + a + "/mcp"
	case <-time.After(30 * time.Second):
		t.Fatalf("serve --transport http did not start:\n%s", h.log())
	}
	return h
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// Remote mode end to end: tokens issued by the CLI (over the control
// socket of the running server) open MCP sessions in both eras for their
// own user only; revoke and disable apply to the next request; the server
// writes nothing to stdout and logs no token.
func TestServeHTTPEndToEnd(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	h := startHTTPServe(t, in)
	if r := run(t, in.env(), "", "admin", "user", "create", "bob"); r.code != 0 {
		t.Fatalf("create bob: %q", r.stderr)
	}
	issue := func(user string) map[string]string {
		r := run(t, in.env(), "", "admin", "token", "issue", "--user", user, "--json")
		var tok map[string]string
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tok) != nil {
			t.Fatalf("issue %s: %d %q %q", user, r.code, r.stdout, r.stderr)
		}
		return tok
	}
	local, bob := issue("local"), issue("bob")
	ctx := context.Background()
	policyUser := func(cs *sdk.ClientSession) (string, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}})
		if err != nil {
			return "", err
		}
		var p struct{ User string }
		_ = json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &p)
		return p.User, nil
	}
	connect := func(token, era string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "local"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint: h.url, HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1,
		}, &sdk.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	for _, era := range []string{"", "2025-11-25"} {
		for token, want := range map[string]string{local["token"]: "local", bob["token"]: "bob"} {
			if got, err := policyUser(connect(token, era)); err != nil || got != want {
				t.Fatalf("era %q: the token of %s acts as %q (%v)", era, want, got, err)
			}
		}
	}
	res, err := http.Post(h.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") == "" || res.Header.Get("X-Request-Id") == "" {
		t.Fatalf("no token: %d %v", res.StatusCode, res.Header)
	}

	cs := connect(bob["token"], "")
	if r := run(t, in.env(), "", "admin", "token", "revoke", bob["id"]); r.code != 0 {
		t.Fatalf("revoke: %q", r.stderr)
	}
	if _, err := policyUser(cs); err == nil {
		t.Fatal("a revoked token's next request went through")
	}
	lcs := connect(local["token"], "2025-11-25")
	if r := run(t, in.env(), "", "admin", "user", "disable", "local", "--yes"); r.code != 0 {
		t.Fatalf("disable: %q", r.stderr)
	}
	if _, err := policyUser(lcs); err == nil {
		t.Fatal("a disabled user's next request went through")
	}
	d := run(t, in.env(), "", "journal", "dump", "--type", "token_issued", "--type", "token_revoked")
	if strings.Count(d.stdout, "\n") != 3 {
		t.Fatalf("journal: %q", d.stdout)
	}
	for _, tok := range []string{local["token"], bob["token"]} {
		if strings.Contains(h.log(), tok) {
			t.Fatal("a token reached the server's logs")
		}
	}
	if !strings.Contains(h.log(), `"token_id":"`+bob["id"]+`"`) {
		t.Fatal("the request log does not name the token id")
	}
}
