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
	res, err := http.DefaultClient.Do(req)
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

// Older-era (stateful) HTTP sessions are bounded per bearer token and in
// all (B4): past a bound a new session is refused before the SDK opens it
// (429 for the token's bound, 503 for the server's, Retry-After and a
// JSON-RPC error), counted in sessions_refused records; a session ended
// with DELETE frees its place; once sessions have been idle long enough,
// a new one takes the place of the longest-idle, which ends.
func TestHTTPOlderEraSessionsAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := newHTTPEnv(t, HTTPOptions{MaxSessionsPerToken: 3, MaxSessions: 5, RatePerSecond: 1000, Burst: 1000, now: clock})
	alice, bob := h.tokens["alice"].Token, h.tokens["bob"].Token

	var mine []*sdk.ClientSession
	for range 3 {
		cs, err := h.tryConnect(alice)
		if err != nil {
			t.Fatalf("session %d: %v", len(mine)+1, err)
		}
		mine = append(mine, cs)
	}
	if _, err := h.tryConnect(alice); err == nil {
		t.Fatal("a fourth session of one token was opened")
	}
	status, retry, rpcErr := h.refusedSession(t, alice)
	if status != http.StatusTooManyRequests || retry != "60" || rpcErr["code"] != float64(-32000) ||
		!strings.HasPrefix(rpcErr["message"].(string), "too many open sessions for this bearer token (at most 3)") {
		t.Fatalf("token bound: %d %q %v", status, retry, rpcErr)
	}
	// A session ended with DELETE frees its place at once.
	if err := mine[0].Close(); err != nil {
		t.Fatal(err)
	}
	advance(time.Second) // mine[1] stays the longest idle
	cs, err := h.tryConnect(alice)
	if err != nil {
		t.Fatalf("a session after one ended: %v", err)
	}
	mine[0] = cs

	// The server's bound: bob gets two, the sixth session in all is
	// refused (none is idle yet).
	for range 2 {
		if _, err := h.tryConnect(bob); err != nil {
			t.Fatal(err)
		}
	}
	if status, _, rpcErr := h.refusedSession(t, bob); status != http.StatusServiceUnavailable ||
		!strings.HasPrefix(rpcErr["message"].(string), "too many open sessions on this server (at most 5)") {
		t.Fatalf("server bound: %d %v", status, rpcErr)
	}

	// Idle for longer than the eviction time: a new session of alice's
	// takes the place of her longest-idle one (mine[1]), which ends; the
	// others still work.
	advance(2 * time.Minute)
	ctx := context.Background()
	if _, err := mine[2].ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	advance(time.Second)
	if _, err := h.tryConnect(alice); err != nil {
		t.Fatalf("a session in place of an idle one: %v", err)
	}
	for i, cs := range mine {
		_, err := cs.ListTools(ctx, nil)
		if (i == 1) != (err != nil) {
			t.Fatalf("session %d after the eviction: %v", i, err)
		}
	}

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
