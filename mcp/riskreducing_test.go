package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The ways out of a position stay open whatever was done before: the rate
// limits count and limit risk-increasing actions only (docs/tools.md "The action path" step 2,
// D51).

func closeWorks(t *testing.T, out map[string]any, isErr bool) {
	t.Helper()
	if isErr {
		t.Fatalf("close_position was refused: %v", out)
	}
	if out["side"] != "Sell" || out["reduce_only"] != true {
		t.Fatalf("close_position did not send a reduce-only sell: %v", out)
	}
}

func TestCloseAfterManyStopMovesUnderKillSwitch(t *testing.T) {
	for _, mpm := range []int{10, 1000} {
		t.Run(fmt.Sprint("max_orders_per_minute=", mpm), func(t *testing.T) {
			e := newEnv(t)
			e.tradeUser(t, "alice", messages.PolicySettings{MaxOrdersPerMinute: &mpm})
			cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
			if out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.002"}); isErr {
				t.Fatalf("buy: %v", out)
			}
			if out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{}); isErr {
				t.Fatalf("kill switch: %v", out)
			}
			// Each move raises the stop toward the price: risk-reducing.
			for i := 0; i < 9; i++ { // the simulator allows 10 stop writes a second
				sl := fmt.Sprint(1000 + i)
				if out, isErr := callJSON(t, cs, "set_trading_stop", map[string]any{"symbol": "BTCUSDT", "category": "linear", "stop_loss": sl}); isErr {
					t.Fatalf("stop %s: %v", sl, out)
				}
			}
			out, isErr := callJSON(t, cs, "close_position", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
			closeWorks(t, out, isErr)
		})
	}
}

func TestCloseAfterCancelAllOfManyOrders(t *testing.T) {
	e := newEnv(t)
	key := e.addKey(t, "alice")
	e.seed(t, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	mpm := 1000
	base := messages.PolicySettings{Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper, MaxOrdersPerMinute: &mpm}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: base}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	if out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.002"}); isErr {
		t.Fatalf("buy: %v", out)
	}
	var orders []map[string]any
	for i := 0; i < 12; i++ {
		orders = append(orders, openOrder("BTCUSDT"))
	}
	e.seedOrders(t, key, orders)
	callJSON(t, cs, "activate_kill_switch", map[string]any{})
	if out, isErr := callJSON(t, cs, "cancel_all_orders", map[string]any{"symbol": "BTCUSDT", "category": "linear"}); isErr {
		t.Fatalf("cancel_all_orders: %v", out)
	}
	out, isErr := callJSON(t, cs, "close_position", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	closeWorks(t, out, isErr)
}

// Risk-increasing orders are still limited, and risk-reducing actions in
// between neither count nor are refused.
func TestRateLimitsCountRiskIncreasingOnly(t *testing.T) {
	e := newEnv(t)
	mpm := 3
	e.tradeUser(t, "alice", messages.PolicySettings{MaxOrdersPerMinute: &mpm})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	limit := func(price string) map[string]any {
		return map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": price}
	}
	for _, p := range []string{"30000", "30001"} {
		out, isErr := callJSON(t, cs, "place_order", limit(p))
		if isErr {
			t.Fatalf("order at %s: %v", p, out)
		}
		for i := 0; i < 3; i++ {
			// cancel and re-check: risk-reducing, never limited
			if c, isErr := callJSON(t, cs, "cancel_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": out["order_id"]}); isErr && i == 0 {
				t.Fatalf("cancel: %v", c)
			}
		}
	}
	if out, isErr := callJSON(t, cs, "place_order", limit("30002")); isErr {
		t.Fatalf("third risk-increasing order refused although cancels must not count: %v", out)
	}
	out, isErr := callJSON(t, cs, "place_order", limit("30003"))
	if !isErr || out["code"] != string(messages.CodeLimitExceeded) || out["details"].(map[string]any)["limit"] != "max_orders_per_minute" {
		t.Fatalf("fourth risk-increasing order in a minute: want max_orders_per_minute, got %v", out)
	}
}

// Narrowing the allowlist does not trap a position or its orders: the
// ways out skip the allowlist; adding risk on the dropped symbol does not.
func TestNarrowedAllowlistKeepsWaysOut(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	if out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.002"}); isErr {
		t.Fatalf("buy: %v", out)
	}
	var ids []any
	for _, p := range []string{"30000", "30001"} {
		out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": p})
		if isErr {
			t.Fatalf("resting order: %v", out)
		}
		ids = append(ids, out["order_id"])
	}
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{Allow: stringsp("linear:ETHUSDT")}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30002"})
	if !isErr || out["code"] != string(messages.CodePermissionDenied) || out["details"].(map[string]any)["limit"] != "allow" {
		t.Fatalf("a risk-increasing order off the allowlist: %v", out)
	}
	if out, isErr := callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": "20"}); !isErr || out["code"] != string(messages.CodePermissionDenied) {
		t.Fatalf("raising leverage off the allowlist: %v", out)
	}
	callJSON(t, cs, "activate_kill_switch", map[string]any{})
	if out, isErr := callJSON(t, cs, "cancel_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": ids[0]}); isErr {
		t.Fatalf("cancel_order off the allowlist: %v", out)
	}
	if out, isErr := callJSON(t, cs, "cancel_all_orders", map[string]any{"symbol": "BTCUSDT", "category": "linear"}); isErr || out["count"] != float64(1) {
		t.Fatalf("cancel_all_orders off the allowlist: %v", out)
	}
	if out, isErr := callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": "1"}); isErr {
		t.Fatalf("lowering leverage off the allowlist: %v", out)
	}
	out, isErr = callJSON(t, cs, "close_position", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	closeWorks(t, out, isErr)
}

// Under the kill switch a stop-loss may be set or tightened, never
// loosened: moving it away from the price is risk-increasing.
func TestStopLossCannotBeLoosenedUnderKillSwitch(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	if out, isErr := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.002"}); isErr {
		t.Fatalf("buy: %v", out)
	}
	stop := func(sl string) (map[string]any, bool) {
		return callJSON(t, cs, "set_trading_stop", map[string]any{"symbol": "BTCUSDT", "category": "linear", "stop_loss": sl})
	}
	if out, isErr := stop("60000"); isErr || out["status"] != "set" {
		t.Fatalf("first stop-loss: %v", out)
	}
	// Without the kill switch a looser stop is allowed.
	if out, isErr := stop("59000"); isErr || out["status"] != "set" {
		t.Fatalf("looser stop-loss without the kill switch: %v", out)
	}
	callJSON(t, cs, "activate_kill_switch", map[string]any{})
	out, isErr := stop("0.1")
	if !isErr || out["code"] != string(messages.CodeKillSwitchActive) {
		t.Fatalf("stop-loss moved away from the price under the kill switch: %v", out)
	}
	if out, isErr := stop("61000"); isErr || out["status"] != "set" {
		t.Fatalf("stop-loss moved toward the price under the kill switch: %v", out)
	}
	if out, isErr := stop("60500"); !isErr || out["code"] != string(messages.CodeKillSwitchActive) {
		t.Fatalf("stop-loss loosened again under the kill switch: %v", out)
	}
	pos, _ := callJSON(t, cs, "get_positions", map[string]any{})
	if b := mustString(pos); !strings.Contains(b, `"stop_loss":"61000"`) {
		t.Fatalf("position after the refusals: %s", b)
	}
}

// A sell priced below the bid fills at the bid: it is valued at the bid,
// for place_order and for amend_order.
func TestMarketableLimitSellValuedAtBid(t *testing.T) {
	e := newEnv(t)
	e.tradeUser(t, "alice", messages.PolicySettings{MaxOrderNotionalUSDT: decp("100000"), DailyNotionalCapUSDT: decp("1000000")})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	probe, _ := callJSON(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Sell", "order_type": "Limit", "qty": "0.001", "price": "1", "dry_run": true})
	low := decimal.RequireFromString(probe["details"].(map[string]any)["min_sell_price"].(string))
	tk, _ := callJSON(t, cs, "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "linear"})
	bid := decimal.RequireFromString(tk["bid1_price"].(string))
	if !bid.GreaterThan(low) {
		t.Fatalf("the band's lowest sell %s is not below the bid %s", low, bid)
	}
	// The sell is priced halfway between the band's lowest sell and the
	// bid, so the walk of a second or two keeps it inside the band and
	// below the bid. qty 0.01: worth less than the limit at its own price,
	// more at the bid.
	two := decimal.NewFromInt(2)
	mid := low.Add(bid).Div(two).Round(0)
	limit := mid.Add(bid).Div(two).Div(decimal.NewFromInt(100)).Round(2)
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{MaxOrderNotionalUSDT: &limit}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	sell := map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Sell", "order_type": "Limit", "qty": "0.01", "price": mid.String()}
	out, isErr := callJSON(t, cs, "place_order", sell)
	if !isErr || out["details"].(map[string]any)["limit"] != "max_order_notional_usdt" {
		t.Fatalf("a sell at %s below the bid %s under a limit of %s: %v", mid, bid, limit, out)
	}
	// A sell resting above the bid is valued at its price and is placed;
	// amending it below the bid is valued at the bid.
	above := bid.Add(decimal.NewFromInt(1000)).Round(0)
	small := with(sell, "qty", "0.001", "price", above.String())
	out, isErr = callJSON(t, cs, "place_order", small)
	if isErr {
		t.Fatalf("a small resting sell: %v", out)
	}
	am, isErr := callJSON(t, cs, "amend_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": out["order_id"], "qty": "0.01", "price": mid.String()})
	if !isErr || am["details"].(map[string]any)["limit"] != "max_order_notional_usdt" {
		t.Fatalf("amend to a sell below the bid: %v", am)
	}
}
