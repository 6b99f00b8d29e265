package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// postureConfig is what a posture test changes in the stack.
type postureConfig struct {
	diskMargin, diskFloor uint64
	// streamVia, when set, gives the private stream URL the server dials
	// in place of the simulator's (a hostile proxy in front of it).
	streamVia func(simWS string) string
}

// newPostureEnv is newEnv with the private stream (pinging every 200 ms,
// so a ws_disconnect fault bites at once), a fast posture clock and the
// journal's disk watched.
func newPostureEnv(t testing.TB, pc postureConfig) *env {
	t.Helper()
	return envOf(testkit.Start(t, testkit.Options{
		StreamVia: pc.streamVia, Stream: true, StreamPing: 200 * time.Millisecond, StreamBackoff: 200 * time.Millisecond,
		WatchDisk: true, Users: []string{"alice", "bob"},
		Configure: func(c *actors.Config) {
			c.DiskMarginBytes, c.DiskFloorBytes = pc.diskMargin, pc.diskFloor
			c.PostureEvery, c.PositionPoll = 50*time.Millisecond, 100*time.Millisecond
		},
	}))
}

// posture calls get_posture and checks the answer's size.
func posture(t testing.TB, cs *sdk.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_posture", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_posture: %v %+v", err, res)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 2048 {
		t.Fatalf("get_posture answered %d bytes, more than 2 KB: %s", len(raw), raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitPosture polls get_posture until cond holds, or fails after d.
func waitPosture(t testing.TB, cs *sdk.ClientSession, d time.Duration, what string, cond func(p map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(d)
	var p map[string]any
	for time.Now().Before(deadline) {
		if p = posture(t, cs); cond(p) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("posture never became %s within %s: %v", what, d, p)
	return nil
}

func stateIs(state string, why ...string) func(p map[string]any) bool {
	return func(p map[string]any) bool {
		if p["state"] != state {
			return false
		}
		got, _ := p["why"].([]any)
		for _, w := range why {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				return false
			}
		}
		return true
	}
}

func streamConnected(p map[string]any) bool {
	s, _ := p["stream"].(map[string]any)
	return p["state"] == "ACTIVE" && s["connected"] == true
}

func limitBuy(price string) map[string]any {
	return map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": price}
}

func marketBuy() map[string]any {
	return map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.01"}
}

// refusedForPosture checks a limit_exceeded refusal naming cause.
func refusedForPosture(t *testing.T, out map[string]any, isErr bool, cause string) {
	t.Helper()
	d, _ := out["details"].(map[string]any)
	if !isErr || out["code"] != string(messages.CodeLimitExceeded) || d["reason"] != cause {
		t.Fatalf("a new order under REDUCING (%s): want limit_exceeded with reason %s, got %v", cause, cause, out)
	}
}

// postureRecords returns the posture_changed records of the journal.
func postureRecords(t *testing.T, e *env) []wal.Record {
	t.Helper()
	var out []wal.Record
	for _, r := range e.records(t) {
		if messages.RecordType(r.Type) == messages.RecordPostureChanged {
			out = append(out, r)
		}
	}
	return out
}

// hasTransition reports whether a posture_changed record by actor says
// reason with the given states.
func hasTransition(t *testing.T, recs []wal.Record, actor, reason, before, after string) bool {
	t.Helper()
	for _, r := range recs {
		var p messages.PostureChangedEvent
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if r.Actor == actor && p.Actor == actor && p.Reason == reason && string(p.Before) == before && string(p.After) == after {
			return true
		}
	}
	return false
}

func TestPostureStreamStaleEntersAndLeavesByItself(t *testing.T) {
	e := newPostureEnv(t, postureConfig{})
	stale := 1
	e.tradeUser(t, "alice", messages.PolicySettings{StreamStaleS: &stale})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)

	simDo(t, http.MethodPost, e.simURL+"/sim/faults", map[string]any{"kind": "ws_disconnect", "path": "/v5/private"}, nil)
	p := waitPosture(t, cs, 10*time.Second, "REDUCING for stream_stale", stateIs("REDUCING", messages.CauseStreamStale))
	if s := p["stream"].(map[string]any); s["connected"] != false || s["down_for_s"].(float64) < 1 {
		t.Fatalf("stream health under stream_stale: %v", s)
	}
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, out, isErr, messages.CauseStreamStale)

	simDo(t, http.MethodDelete, e.simURL+"/sim/faults", nil, nil)
	waitPosture(t, cs, 15*time.Second, "ACTIVE again", streamConnected)
	if out, isErr := callJSON(t, cs, "place_order", limitBuy("30000")); isErr {
		t.Fatalf("a new order once the stream is back: %v", out)
	}
	recs := postureRecords(t, e)
	if !hasTransition(t, recs, messages.ActorSystem, messages.CauseStreamStale, "ACTIVE", "REDUCING") ||
		!hasTransition(t, recs, messages.ActorSystem, messages.CauseStreamStale+"_cleared", "REDUCING", "ACTIVE") {
		t.Fatalf("the journal does not show stream_stale entering and clearing: %d posture records", len(recs))
	}
}

func TestPostureDailyLossEntersAndLeavesByItself(t *testing.T) {
	e := newPostureEnv(t, postureConfig{})
	e.tradeUser(t, "alice", messages.PolicySettings{MaxDailyLossUSDT: decp("5")})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	buy, isErr := callJSON(t, cs, "place_order", marketBuy())
	if isErr {
		t.Fatalf("buy: %v", buy)
	}
	p := waitPosture(t, cs, 5*time.Second, "showing the position", func(p map[string]any) bool {
		ps, _ := p["exposure"].(map[string]any)["positions"].([]any)
		return len(ps) == 1
	})
	pos := p["exposure"].(map[string]any)["positions"].([]any)[0].(map[string]any)
	if pos["symbol"] != "BTCUSDT" || pos["side"] != "Buy" || pos["size"] != "0.01" {
		t.Fatalf("position in get_posture: %v", pos)
	}
	entry := decimal.RequireFromString(buy["price"].(string))
	move := func(price decimal.Decimal) {
		simDo(t, http.MethodPost, e.simURL+"/sim/price", map[string]any{"category": "linear", "symbol": "BTCUSDT", "price": price.StringFixed(1)}, nil)
	}
	// 10 % down on 0.01 BTC is a loss far above 5 USDT.
	move(entry.Mul(decimal.RequireFromString("0.9")))
	p = waitPosture(t, cs, 5*time.Second, "REDUCING for daily_loss", stateIs("REDUCING", messages.CauseDailyLoss))
	if loss := decimal.RequireFromString(p["daily_loss"].(map[string]any)["loss_usdt"].(string)); loss.LessThan(decimal.NewFromInt(5)) {
		t.Fatalf("daily loss under REDUCING: %s", loss)
	}
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, out, isErr, messages.CauseDailyLoss)

	move(entry.Mul(decimal.RequireFromString("1.1")))
	waitPosture(t, cs, 5*time.Second, "ACTIVE once the loss is gone", stateIs("ACTIVE"))
	recs := postureRecords(t, e)
	if !hasTransition(t, recs, messages.ActorSystem, messages.CauseDailyLoss, "ACTIVE", "REDUCING") ||
		!hasTransition(t, recs, messages.ActorSystem, messages.CauseDailyLoss+"_cleared", "REDUCING", "ACTIVE") {
		t.Fatalf("the journal does not show daily_loss entering and clearing: %d posture records", len(recs))
	}
}

func TestPostureHumanReduceStaysUntilAHumanResumes(t *testing.T) {
	e := newPostureEnv(t, postureConfig{})
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	if out, isErr := callJSON(t, cs, "place_order", marketBuy()); isErr {
		t.Fatalf("buy: %v", out)
	}
	resting, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	if isErr {
		t.Fatalf("resting order: %v", resting)
	}
	ctx := context.Background()
	res, err := e.sys.Submit(ctx, &messages.SetPostureRequest{User: "alice", Reduce: true},
		messages.CLIOrigin(&messages.SetPostureRequest{}, messages.ChannelSocket, 1000, 4242, false))
	if err != nil || res.(*messages.PostureView).State != messages.PostureReducing || !res.(*messages.PostureView).Changed {
		t.Fatalf("posture reduce: %v %+v", err, res)
	}
	// Many posture evaluations later it still holds.
	time.Sleep(500 * time.Millisecond)
	p := posture(t, cs)
	if !stateIs("REDUCING", messages.CauseHuman)(p) {
		t.Fatalf("human REDUCING did not hold: %v", p)
	}
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30001"))
	refusedForPosture(t, out, isErr, messages.CauseHuman)
	if out, isErr := callJSON(t, cs, "cancel_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": resting["order_id"]}); isErr {
		t.Fatalf("cancel under REDUCING: %v", out)
	}
	out, isErr = callJSON(t, cs, "close_position", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	closeWorks(t, out, isErr)

	// The agent cannot leave; a human can.
	if _, err := e.sys.Handle(ctx, &messages.SetPostureRequest{User: "alice"}, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("the agent resuming: want permission_denied, got %v", err)
	}
	res, err = e.sys.Handle(ctx, &messages.SetPostureRequest{User: "alice"}, messages.ActorCLIUser)
	if err != nil || res.(*messages.PostureView).State != messages.PostureActive {
		t.Fatalf("posture resume: %v %+v", err, res)
	}
	if out, isErr := callJSON(t, cs, "place_order", limitBuy("30002")); isErr {
		t.Fatalf("a new order after resume: %v", out)
	}
	recs := postureRecords(t, e)
	if !hasTransition(t, recs, messages.ActorCLIUser, "human_reduce", "ACTIVE", "REDUCING") ||
		!hasTransition(t, recs, messages.ActorCLIUser, "human_resume", "REDUCING", "ACTIVE") {
		t.Fatalf("the journal does not show the human reduce and resume: %d posture records", len(recs))
	}
}

// get_posture answers from the user actor and the stream cache: with every
// REST call of the venue held for 3 s, it still answers at once, and it
// still shows the position and the resting order it learnt from the
// stream.
func TestGetPostureNeverWaitsOnTheExchange(t *testing.T) {
	e := newPostureEnv(t, postureConfig{})
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	for _, args := range []map[string]any{marketBuy(), limitBuy("30000")} {
		if out, isErr := callJSON(t, cs, "place_order", args); isErr {
			t.Fatalf("place_order: %v", out)
		}
	}
	waitPosture(t, cs, 5*time.Second, "showing the order and the position", func(p map[string]any) bool {
		x := p["exposure"].(map[string]any)
		ps, _ := x["positions"].([]any)
		sys, _ := x["open_orders"].(map[string]any)["system"].(map[string]any)
		return len(ps) == 1 && sys["count"] == float64(1) && sys["notional_usdt"] == "30"
	})
	simDo(t, http.MethodPost, e.simURL+"/sim/faults", map[string]any{"kind": "delay", "path": "/v5/*", "delay_ms": 3000}, nil)
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_posture", Arguments: map[string]any{}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("get_posture with the exchange slow: %v %+v", err, res)
		}
	}
	if p := posture(t, cs); len(p["exposure"].(map[string]any)["positions"].([]any)) != 1 {
		t.Fatalf("the cached position is gone: %v", p)
	}
}
