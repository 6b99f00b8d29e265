package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// readyHosts are one serving host activation per shard, each on a real
// system, without protoactor: host.serve is what an activation runs for
// each call it receives.
func readyHosts(t *testing.T, key []byte) []*host {
	t.Helper()
	return readyHostsLogging(t, key, slog.New(slog.DiscardHandler))
}

func readyHostsLogging(t *testing.T, key []byte, logger *slog.Logger) []*host {
	t.Helper()
	ready := make(chan struct{})
	close(ready)
	var hs []*host
	for i := range testShards {
		sys, _ := startSystem(t, route.Slot{Index: i, Count: testShards})
		hs = append(hs, &host{cfg: HostConfig{CallKey: key, Logger: logger}, n: i, id: strconv.Itoa(i), ready: ready, gone: make(chan struct{}), target: sys})
	}
	return hs
}

func hostTransport(hs []*host) Transport {
	return func(ctx context.Context, shard int, b []byte) ([]byte, error) {
		return hs[shard].serve(ctx, bytes.Clone(b)), nil
	}
}

func answerError(t *testing.T, out []byte) *messages.Error {
	t.Helper()
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return a.Error
}

// A Client holding the call key is served; a call without the key's
// authenticator (none, another key's, one byte changed, one sealed for
// another shard) is refused with call_not_authenticated, echoes nothing
// of the call and changes nothing on the shard.
func TestHostServesOnlySealedCalls(t *testing.T) {
	var logs lockedBuffer
	hs := readyHostsLogging(t, testCallKey, slog.New(slog.NewJSONHandler(&logs, nil)))
	cl := NewClient(testShards, hostTransport(hs), WithCallKey(testCallKey))
	ctx := context.Background()
	if _, err := cl.Submit(ctx, &messages.CreateUserRequest{User: "alice"}, adminOrigin); err != nil {
		t.Fatalf("a sealed call: %v", err)
	}
	n := route.OfUser("mallory", testShards)
	plain, err := json.Marshal(&call{Method: methodSubmit, Type: "admin.user.create", Body: json.RawMessage(`{"user":"mallory"}`), Origin: &adminOrigin})
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{8}, MinCallKeySize)
	flipped := SealCall(testCallKey, n, plain)
	flipped[len(flipped)-3] ^= 1
	for name, b := range map[string][]byte{
		"unsealed":      plain,
		"another key":   SealCall(other, n, plain),
		"changed":       flipped,
		"another shard": SealCall(testCallKey, (n+1)%testShards, plain),
		"short":         []byte(sealMagic + "x"),
		"empty":         nil,
	} {
		out := hs[n].serve(ctx, b)
		if e := answerError(t, out); !isReasonOf(e, messages.CodePermissionDenied, ReasonCallNotAuthenticated) {
			t.Fatalf("%s: answered %s", name, out)
		}
		if bytes.Contains(out, []byte("mallory")) || bytes.Contains(out, []byte("admin.user.create")) {
			t.Fatalf("%s: the refusal echoes the call: %s", name, out)
		}
	}
	if _, err := cl.Submit(ctx, &messages.ShowPolicyRequest{User: "mallory"}, adminOrigin); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("a refused call created its user: %v", err)
	}
	if got := logs.String(); strings.Count(got, "refused a call without this cluster's authenticator") != 6 || strings.Contains(got, "mallory") {
		t.Fatalf("the refusals' logs (one each, without the call):\n%s", got)
	}
	// A Client without the key is refused the same way.
	bare := NewClient(testShards, hostTransport(hs))
	if _, err := bare.Submit(ctx, &messages.CreateUserRequest{User: "mallory"}, adminOrigin); !isReasonOf(messages.AsError(err), messages.CodePermissionDenied, ReasonCallNotAuthenticated) {
		t.Fatalf("an unsealed client: %v", err)
	}
	// A host without a key refuses even a sealed call.
	keyless := readyHosts(t, nil)
	if _, err := NewClient(testShards, hostTransport(keyless), WithCallKey(testCallKey)).Submit(ctx, &messages.CreateUserRequest{User: "alice"}, adminOrigin); !isReasonOf(messages.AsError(err), messages.CodePermissionDenied, ReasonCallNotAuthenticated) {
		t.Fatalf("a host without a key: %v", err)
	}
}

// A Client refuses an answer that is not sealed to its own call: none,
// changed, another key's, or a captured answer to another call.
func TestClientRefusesUnsealedAnswers(t *testing.T) {
	hs := readyHosts(t, testCallKey)
	ctx := context.Background()
	var captured []byte
	real := hostTransport(hs)
	capture := NewClient(testShards, func(ctx context.Context, shard int, b []byte) ([]byte, error) {
		out, err := real(ctx, shard, b)
		captured = bytes.Clone(out)
		return out, err
	}, WithCallKey(testCallKey))
	if _, err := capture.Submit(ctx, &messages.CreateUserRequest{User: "alice"}, adminOrigin); err != nil {
		t.Fatal(err)
	}
	forged := encodeAnswer(answer{Result: json.RawMessage(`{"user":"alice"}`)})
	for name, rewrite := range map[string]func(out []byte) []byte{
		"unsealed":       func([]byte) []byte { return forged },
		"another key":    func([]byte) []byte { return SealAnswer(bytes.Repeat([]byte{8}, 32), make([]byte, macSize), forged) },
		"changed":        func(out []byte) []byte { out[len(out)-2] ^= 1; return out },
		"another answer": func([]byte) []byte { return captured },
	} {
		cl := NewClient(testShards, func(ctx context.Context, shard int, b []byte) ([]byte, error) {
			out, err := real(ctx, shard, b)
			return rewrite(out), err
		}, WithCallKey(testCallKey))
		_, err := cl.Submit(ctx, &messages.ShowPolicyRequest{User: "alice"}, adminOrigin)
		if !isReasonOf(messages.AsError(err), messages.CodeInternalError, ReasonAnswerNotAuthenticated) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := NewClient(testShards, real, WithCallKey([]byte("short"))).Submit(ctx, &messages.ShowPolicyRequest{User: "alice"}, adminOrigin); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("a short key: %v", err)
	}
}

func isReasonOf(e *messages.Error, code messages.Code, reason string) bool {
	return e != nil && e.Code == code && e.Details["reason"] == reason
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A token that fails the cheap checks (no prefix, longer than 256 bytes)
// is refused by the Client with the shard's own answer and sent to no
// shard; a well-formed one is asked of its shard.
func TestClientAuthenticateChecksTokenShape(t *testing.T) {
	hs := readyHosts(t, testCallKey)
	var sent int
	real := hostTransport(hs)
	cl := NewClient(testShards, func(ctx context.Context, shard int, b []byte) ([]byte, error) {
		sent++
		return real(ctx, shard, b)
	}, WithCallKey(testCallKey))
	for _, tok := range []string{"", "Bearer x", "abc", messages.TokenPrefix + strings.Repeat("a", 257-len(messages.TokenPrefix))} {
		if _, _, err := cl.Authenticate(tok); messages.CodeOf(err) != messages.CodePermissionDenied {
			t.Fatalf("token of %d bytes: %v", len(tok), err)
		}
	}
	if sent != 0 {
		t.Fatalf("%d malformed tokens were sent to a shard", sent)
	}
	if _, _, err := cl.Authenticate(messages.TokenPrefix + strings.Repeat("a", 40)); messages.CodeOf(err) != messages.CodePermissionDenied || sent != 1 {
		t.Fatalf("a well-formed unknown token: %v, %d calls", err, sent)
	}
}
