package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// tryConnect opens an older-era session with the SDK's HTTP client
// transport (no standalone stream: the session is idle between calls).
func (h *httpEnv) tryConnect(token string) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return sdk.NewClient(&sdk.Implementation{Name: "older"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: h.url, HTTPClient: &http.Client{Transport: bearerRT{token: token}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: legacyEra})
}

// refusedSession sends one raw initialize of an older client for token
// and returns the refusal's status, Retry-After and JSON-RPC error.
func (h *httpEnv) refusedSession(t *testing.T, token string) (int, string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var msg struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   map[string]any `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.JSONRPC != "2.0" || msg.ID != nil || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("refusal body %q (%v)", body, err)
	}
	return res.StatusCode, res.Header.Get("Retry-After"), msg.Error
}

// hold keeps one request of session cs in flight (a listening GET
// stream) until the returned function is called.
func (h *httpEnv) hold(t *testing.T, token string, cs *sdk.ClientSession) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", legacyEra)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("listening stream: %v %v", res, err)
	}
	return func() {
		cancel()
		res.Body.Close()
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// Older-era (stateful) HTTP sessions are bounded per bearer token and in
// all (B4). Over the token's bound a new session takes the place of the
// token's own idle session (none in flight), and is refused while every
// one is in use; over the server's bound it takes the place of a session
// idle for 60 s, else it is refused. A refusal comes before the SDK opens
// anything (429 / 503, Retry-After, a JSON-RPC error) and is counted in
// sessions_refused records; a session ended with DELETE frees its place.
func TestHTTPOlderEraSessionsAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	var caps *sessionCaps
	h := newHTTPEnv(t, HTTPOptions{MaxSessionsPerToken: 3, MaxSessions: 5, RatePerSecond: 1000, Burst: 1000, now: clock,
		seeSessions: func(c *sessionCaps) { caps = c }})
	inFlight := func(cs *sdk.ClientSession) int { _, n, _ := caps.state(cs.ID()); return n }
	ended := func() int { _, _, n := caps.state(""); return n }
	settled := func(cs *sdk.ClientSession) bool { known, n, _ := caps.state(cs.ID()); return known && n == 0 }
	alice, bob := h.tokens["alice"].Token, h.tokens["bob"].Token
	open := func(token string) *sdk.ClientSession {
		t.Helper()
		advance(time.Second) // every session has its own last use
		cs, err := h.tryConnect(token)
		if err != nil {
			t.Fatalf("open a session: %v", err)
		}
		// Its last use is now: the requests of its opening are over.
		waitFor(t, "a new session counted and idle", func() bool { return settled(cs) })
		return cs
	}

	// Alice's three sessions each listen: none may give its place up.
	s := []*sdk.ClientSession{open(alice), open(alice), open(alice)}
	releases := []func(){h.hold(t, alice, s[0]), h.hold(t, alice, s[1]), h.hold(t, alice, s[2])}
	for _, cs := range s {
		waitFor(t, "a listening stream in flight", func() bool { return inFlight(cs) == 1 })
	}
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	if _, err := h.tryConnect(alice); err == nil {
		t.Fatal("a fourth session of one token was opened")
	}
	status, retry, rpcErr := h.refusedSession(t, alice)
	if status != http.StatusTooManyRequests || retry != "60" || rpcErr["code"] != float64(-32000) ||
		!strings.HasPrefix(rpcErr["message"].(string), "too many open sessions for this bearer token (at most 3, none idle)") {
		t.Fatalf("token bound: %d %q %v", status, retry, rpcErr)
	}

	// The server's bound: bob's third session would be the sixth in all,
	// and nothing has been idle for 60 s.
	b := []*sdk.ClientSession{open(bob), open(bob)}
	if status, _, rpcErr := h.refusedSession(t, bob); status != http.StatusServiceUnavailable ||
		!strings.HasPrefix(rpcErr["message"].(string), "too many open sessions on this server (at most 5, none idle)") {
		t.Fatalf("server bound: %d %v", status, rpcErr)
	}

	// s[0] stops listening: a new session of alice's takes its place at
	// once, and s[0] ends.
	releases[0]()
	releases[0] = func() {}
	waitFor(t, "the listening stream ended on the server", func() bool { return inFlight(s[0]) == 0 })
	s = append(s, open(alice))
	// A replaced session ends once its successor is open, just after the
	// successor's initialize was answered.
	waitFor(t, "s[0] ended", func() bool { return ended() == 1 })
	// Two minutes later bob's third session takes the place of the
	// longest-idle session of any token: b[0].
	advance(2 * time.Minute)
	b = append(b, open(bob))
	waitFor(t, "b[0] ended", func() bool { return ended() == 2 })
	ctx := context.Background()
	for i, cs := range append(s, b...) {
		_, err := cs.ListTools(ctx, nil)
		if gone := i == 0 || i == len(s); gone != (err != nil) {
			t.Fatalf("session %d after the evictions: %v", i, err)
		}
	}
	// A session ended with DELETE frees its place.
	if err := b[1].Close(); err != nil {
		t.Fatal(err)
	}
	open(bob)
	// Alice's next session, past the interval, journals the count of her
	// refusals not journaled yet.
	open(alice)

	var counts = map[string]int{}
	for _, r := range h.records(t) {
		if messages.RecordType(r.Type) != messages.RecordSessionsRefused {
			continue
		}
		var ev messages.SessionsRefusedEvent
		if err := json.Unmarshal(r.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		if r.Actor != messages.ActorAgent || r.User != ev.User || ev.TokenID != h.tokens[ev.User].ID {
			t.Fatalf("record %+v %+v", r, ev)
		}
		counts[ev.User+":"+ev.Scope] += ev.Count
	}
	if counts["alice:token"] != 2 || counts["bob:server"] != 1 {
		t.Fatalf("sessions_refused counts %v", counts)
	}
}
