package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkGetPosture measures get_posture end to end (MCP in-memory
// transport → guard → user actor → answer from its own state and the
// stream cache; no exchange round trip) against a bare tool call (a tool
// that does nothing, same transport and guard), interleaved so both see
// the same machine. The user holds a position and a resting order, and
// its private stream runs. Target: posture-above-bare-µs ≤ 100.
// policy-p50-µs is get_my_policy, a read of the user actor's state of
// about the same size, for scale; server-µs is the posture request alone,
// straight to the actor system (no MCP). canned-above-bare-µs is a tool
// that answers the same bytes as get_posture without asking anyone: what
// the answer's size costs through the SDK (both ends), apart from the
// user actor.
func BenchmarkGetPosture(b *testing.B) {
	e := newPostureEnv(b, postureConfig{})
	key := e.addKey(b, "alice")
	e.seed(b, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{
		Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper,
	}}, messages.ActorCLIAdmin); err != nil {
		b.Fatal(err)
	}
	noop := &tool{name: "test_noop", title: "noop", description: "noop", kind: KindRead, schema: objectSchema(nil, map[string]any{}),
		handle: func(context.Context, *call) (any, error) { return map[string]any{}, nil }}
	var answer json.RawMessage
	canned := &tool{name: "test_canned", title: "canned", description: "canned", kind: KindRead, schema: objectSchema(nil, map[string]any{}),
		handle: func(context.Context, *call) (any, error) { return answer, nil }}
	cs := connect(b, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), extraTools: []*tool{noop, canned}, CallsPerSecond: 1e9, CallBurst: 1e9}, "")
	waitPosture(b, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	for _, args := range []map[string]any{marketBuy(), limitBuy("30000")} {
		if out, isErr := callJSON(b, cs, "place_order", args); isErr {
			b.Fatalf("place_order: %v", out)
		}
	}
	ctx := context.Background()
	posture := &sdk.CallToolParams{Name: "get_posture", Arguments: map[string]any{}}
	res, err := cs.CallTool(ctx, posture)
	if err != nil || res.IsError {
		b.Fatalf("get_posture: %v %+v", err, res)
	}
	if answer, err = json.Marshal(res.StructuredContent); err != nil {
		b.Fatal(err)
	}
	cannedCall := &sdk.CallToolParams{Name: "test_canned", Arguments: map[string]any{}}
	bare := &sdk.CallToolParams{Name: "test_noop", Arguments: map[string]any{}}
	policy := &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}}
	var ps, ns, qs, ss, cs2 []time.Duration
	for b.Loop() {
		start := time.Now()
		if res, err := cs.CallTool(ctx, posture); err != nil || res.IsError {
			b.Fatalf("get_posture: %v %+v", err, res)
		}
		ps = append(ps, time.Since(start))
		start = time.Now()
		if res, err := cs.CallTool(ctx, bare); err != nil || res.IsError {
			b.Fatalf("noop: %v %+v", err, res)
		}
		ns = append(ns, time.Since(start))
		start = time.Now()
		if res, err := cs.CallTool(ctx, policy); err != nil || res.IsError {
			b.Fatalf("get_my_policy: %v %+v", err, res)
		}
		qs = append(qs, time.Since(start))
		start = time.Now()
		if _, err := e.sys.Handle(ctx, &messages.ShowPostureRequest{User: "alice"}, messages.ActorAgent); err != nil {
			b.Fatal(err)
		}
		ss = append(ss, time.Since(start))
		start = time.Now()
		if res, err := cs.CallTool(ctx, cannedCall); err != nil || res.IsError {
			b.Fatalf("canned: %v %+v", err, res)
		}
		cs2 = append(cs2, time.Since(start))
	}
	p, n := medianOf(ps), medianOf(ns)
	b.ReportMetric(float64(medianOf(qs).Microseconds()), "policy-p50-µs")
	b.ReportMetric(float64(medianOf(ss).Microseconds()), "server-µs")
	b.ReportMetric(float64(p.Microseconds()), "posture-p50-µs")
	b.ReportMetric(float64(n.Microseconds()), "bare-p50-µs")
	b.ReportMetric(float64((p - n).Microseconds()), "posture-above-bare-µs")
	b.ReportMetric(float64((medianOf(cs2) - n).Microseconds()), "canned-above-bare-µs")
	b.ReportMetric(float64(len(answer)), "answer-bytes")
}
