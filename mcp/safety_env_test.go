package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Helpers of the dead-man switch and wait_for_update tests: a trade user
// whose venue actor runs the simulator's private stream, and an outside
// client of the same account (a person trading by hand: its orders are
// external).

func intp(v int) *int    { return &v }
func boolp(v bool) *bool { return &v }

// streamUser gives user a funded paper key, whose secret it keeps for an
// outside client, and a trade policy on BTCUSDT without confirmation,
// merged with settings. It returns the outside client.
func (e *env) streamUser(t testing.TB, user string, settings messages.PolicySettings) *venue.Client {
	t.Helper()
	var k struct {
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
	}
	simDo(t, http.MethodPost, e.simURL+"/sim/keys", map[string]any{}, &k)
	if _, err := e.sys.Handle(context.Background(), &messages.AddCredentialRequest{
		User: user, Environment: "paper", APIKey: k.APIKey, APISecret: messages.NewSecret(k.APISecret),
	}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	e.seed(t, k.APIKey, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	base := messages.PolicySettings{Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: user, Settings: base.Merge(settings)}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	c, err := venue.NewClient(venue.Config{BaseURL: e.simURL, APIKey: k.APIKey, APISecret: k.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// outsideOrder places a resting BTCUSDT buy at price from the outside
// client (not through the server) and returns its order id.
func outsideOrder(t testing.TB, c *venue.Client, price, linkID string) string {
	t.Helper()
	ack, err := c.CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.RequireFromString(price), OrderLinkID: linkID})
	if err != nil {
		t.Fatal(err)
	}
	return ack.OrderID
}

// waitResult is one wait_for_update answer, from a goroutine.
type waitResult struct {
	out   map[string]any
	isErr bool
	took  time.Duration
}

// waitAsync calls wait_for_update on its own goroutine.
func waitAsync(cs *sdk.ClientSession, args map[string]any) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wait_for_update", Arguments: args})
		r := waitResult{took: time.Since(start)}
		if err != nil {
			r.isErr, r.out = true, map[string]any{"protocol_error": err.Error()}
		} else {
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &r.out)
			r.isErr = res.IsError
		}
		ch <- r
	}()
	return ch
}

// waitStream returns once the user's private stream delivers to
// wait_for_update: a push sent before the stream subscribed is not
// replayed, so it places outside orders (far from the market) until a
// wait sees one. It returns the outside orders it placed.
func waitStream(t testing.TB, cs *sdk.ClientSession, outside *venue.Client) []string {
	t.Helper()
	var placed []string
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		ch := waitAsync(cs, map[string]any{"symbol": "BTCUSDT", "timeout_s": 2})
		time.Sleep(100 * time.Millisecond)
		placed = append(placed, outsideOrder(t, outside, "20000", fmt.Sprintf("probe-%d", i)))
		if r := <-ch; !r.isErr && r.out["changed"] == true {
			return placed
		}
	}
	t.Fatal("the private stream never delivered to wait_for_update")
	return nil
}

// openOrderIDs lists the user's open BTCUSDT orders as the venue shows
// them now.
func openOrderIDs(t testing.TB, e *env, user string) []string {
	t.Helper()
	res, err := e.sys.Account(context.Background(), &messages.GetOpenOrdersRequest{User: user, Category: messages.CategoryLinear, Symbol: "BTCUSDT", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range res.(*messages.Page[messages.Order]).Items {
		ids = append(ids, o.OrderID)
	}
	return ids
}

// placeResting places a resting BTCUSDT buy through the server and
// returns its order id.
func placeResting(t testing.TB, cs *sdk.ClientSession, price string) string {
	t.Helper()
	out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": price})
	if isErr || out["status"] != "accepted" || out["origin"] != "system" {
		t.Fatalf("place_order: %v", out)
	}
	return out["order_id"].(string)
}

// eventually polls cond until it holds or within passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deadmanRecords returns the deadman_triggered payloads and the order
// attempts journaled by system:deadman.
func deadmanRecords(t testing.TB, recs []wal.Record) ([]messages.DeadmanTriggeredEvent, []messages.OrderAttemptEvent) {
	t.Helper()
	var trig []messages.DeadmanTriggeredEvent
	var atts []messages.OrderAttemptEvent
	for _, r := range recs {
		switch messages.RecordType(r.Type) {
		case messages.RecordDeadmanTriggered:
			if r.Actor != messages.ActorDeadman {
				t.Fatalf("deadman_triggered by %s", r.Actor)
			}
			var ev messages.DeadmanTriggeredEvent
			if err := json.Unmarshal(r.Payload, &ev); err != nil {
				t.Fatal(err)
			}
			trig = append(trig, ev)
		case messages.RecordOrderAttempt:
			if r.Actor != messages.ActorDeadman {
				continue
			}
			var ev messages.OrderAttemptEvent
			if err := json.Unmarshal(r.Payload, &ev); err != nil {
				t.Fatal(err)
			}
			atts = append(atts, ev)
		}
	}
	return trig, atts
}

func containsAll(set []string, ids ...string) bool {
	for _, id := range ids {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return true
}

func containsNone(set []string, ids ...string) bool {
	for _, id := range ids {
		if slices.Contains(set, id) {
			return false
		}
	}
	return true
}
