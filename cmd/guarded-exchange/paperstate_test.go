package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// paperCeiling lets local trade BTCUSDT on paper, with confirm naming the
// tools that wait for a human ("none" for none).
func paperCeiling(t *testing.T, in install, confirm string) {
	t.Helper()
	if r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", confirm, "--venue-ceiling", "paper", "--max-orders-per-minute", "1000", "--max-unconfirmed-per-hour", "1000"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
}

// startServe starts `serve` on stdio and returns the MCP session and the
// process, so a test can kill it.
func startServe(t *testing.T, in install, extraEnv ...string) (*sdk.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env(extraEnv...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs, cmd
}

// killServe ends serve with SIGKILL: nothing of it runs after this.
func killServe(t *testing.T, cs *sdk.ClientSession, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cs.Close()
}

// structuredOf calls a tool that must succeed and decodes its structured
// answer into v.
func structuredOf(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, v any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// paperSnapshot is what the agent reads of the paper account.
type paperSnapshot struct {
	openIDs  []string // open BTCUSDT order ids, sorted
	position string   // BTCUSDT side, size, entry and leverage
	wallet   string   // USDT wallet balance
}

func readPaper(t *testing.T, cs *sdk.ClientSession) paperSnapshot {
	t.Helper()
	var orders struct {
		Orders []struct {
			OrderID string `json:"order_id"`
		} `json:"orders"`
	}
	structuredOf(t, cs, "get_open_orders", map[string]any{"category": "linear", "symbol": "BTCUSDT"}, &orders)
	var s paperSnapshot
	for _, o := range orders.Orders {
		s.openIDs = append(s.openIDs, o.OrderID)
	}
	slices.Sort(s.openIDs)
	var pos struct {
		Positions []struct {
			Side, Size, AvgPrice, Leverage string
		} `json:"positions"`
	}
	structuredOf(t, cs, "get_positions", map[string]any{"symbol": "BTCUSDT"}, &pos)
	for _, p := range pos.Positions {
		if p.Size == "0" {
			continue // a flat row: Bybit keeps it with its leverage
		}
		s.position += fmt.Sprintf("%s %s @ %s x%s;", p.Side, p.Size, p.AvgPrice, p.Leverage)
	}
	var bal struct {
		Coins []struct {
			Coin          string `json:"coin"`
			WalletBalance string `json:"wallet_balance"`
		} `json:"coins"`
	}
	structuredOf(t, cs, "get_balances", map[string]any{}, &bal)
	for _, c := range bal.Coins {
		if c.Coin == "USDT" {
			s.wallet = c.WalletBalance
		}
	}
	return s
}

// placeOrder places an order that must be accepted and returns its venue
// order id.
func placeOrder(t *testing.T, cs *sdk.ClientSession, args map[string]any) string {
	t.Helper()
	out, isErr := callTool(t, cs, "place_order", args)
	id, _ := out["order_id"].(string)
	if isErr || id == "" {
		t.Fatalf("place_order %v: %v", args, out)
	}
	return id
}

var marketBuy = map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.001"}

// withKey is args with an idempotency key: the same order again, not a
// repeat of the earlier call.
func withKey(args map[string]any, key string) map[string]any {
	out := map[string]any{"idempotency_key": key}
	for k, v := range args {
		out[k] = v
	}
	return out
}

// The paper account lasts across a SIGKILL of serve: the resting orders
// are listed with the same ids, the position (with its leverage) and the
// wallet are unchanged, a new order gets a new id, and a confirmation
// parked before the kill and approved after it executes.
func TestPaperAccountSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	paperCeiling(t, in, "none")
	cs, cmd := startServe(t, in, "GX_CONFIRM_CLI_ENABLED=true")
	if out, isErr := callTool(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": "5"}); isErr {
		t.Fatalf("set_leverage: %v", out)
	}
	seen := map[string]bool{}
	for _, price := range []string{"30000", "30001"} {
		seen[placeOrder(t, cs, map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": price})] = true
	}
	seen[placeOrder(t, cs, marketBuy)] = true
	before := readPaper(t, cs)
	if len(before.openIDs) != 2 || !strings.Contains(before.position, "Buy 0.001") || !strings.Contains(before.position, "x5") {
		t.Fatalf("before the kill: %+v", before)
	}
	// A confirmation parks before the kill.
	paperCeiling(t, in, "place_order")
	out, isErr := callTool(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30002"})
	confirmation, _ := out["confirmation_id"].(string)
	if isErr || confirmation == "" {
		t.Fatalf("place_order to confirm: %v", out)
	}
	killServe(t, cs, cmd)

	cs, _ = startServe(t, in, "GX_CONFIRM_CLI_ENABLED=true")
	defer cs.Close()
	after := readPaper(t, cs)
	if !slices.Equal(after.openIDs, before.openIDs) || after.position != before.position || after.wallet != before.wallet {
		t.Fatalf("the paper account changed over the kill:\nbefore %+v\nafter  %+v", before, after)
	}
	if r := run(t, in.env(), "", "confirm", "approve", confirmation, "--yes"); r.code != 0 {
		t.Fatalf("approve after the restart: %d %s %s", r.code, r.stdout, r.stderr)
	}
	st, _ := callTool(t, cs, "get_confirmation_status", map[string]any{"confirmation_id": confirmation})
	if st["status"] != "executed" {
		t.Fatalf("the confirmation approved after the restart: %v", st)
	}
	now := readPaper(t, cs)
	if len(now.openIDs) != 3 {
		t.Fatalf("open orders after the approval: %v", now.openIDs)
	}
	for _, id := range now.openIDs {
		if !slices.Contains(before.openIDs, id) && seen[id] {
			t.Fatalf("the approved order got an id handed out before the kill: %s", id)
		}
	}
	paperCeiling(t, in, "none")
	if id := placeOrder(t, cs, withKey(marketBuy, "after-restart")); seen[id] {
		t.Fatalf("a new order after the restart got an old id %s", id)
	}
}

// paperRestarts is how many times TestPaperIDsNeverRepeat restarts serve
// (fewer under -short).
func paperRestarts() int {
	if testing.Short() {
		return 5
	}
	return 20
}

// Over many restarts of serve (every other one a SIGKILL), and in another
// installation with the same seed, no venue id names two orders: every
// order id belongs to one client order id, every execution id to one
// order.
func TestPaperIDsNeverRepeat(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	paperCeiling(t, in, "none")
	var placed []string
	for i := range paperRestarts() {
		cs, cmd := startServe(t, in)
		placed = append(placed, placeOrder(t, cs, withKey(marketBuy, fmt.Sprint("restart-", i))))
		if i%2 == 1 {
			killServe(t, cs, cmd)
		} else if err := cs.Close(); err != nil {
			t.Fatalf("serve did not exit cleanly: %v", err)
		}
	}
	orders, execs := venueIDs(t, in)
	for id, clients := range orders {
		if len(clients) != 1 {
			t.Fatalf("order id %s names %d client orders: %v", id, len(clients), clients)
		}
	}
	for id, ids := range execs {
		if len(ids) != 1 {
			t.Fatalf("execution id %s names %d orders: %v", id, len(ids), ids)
		}
	}
	if len(orders) < len(placed) {
		t.Fatalf("%d orders placed, the journal names %d order ids", len(placed), len(orders))
	}
	other := newInstall(t)
	paperCeiling(t, other, "none")
	cs, _ := startServe(t, other)
	id := placeOrder(t, cs, marketBuy)
	cs.Close()
	if slices.Contains(placed, id) {
		t.Fatalf("another installation was handed order id %s again", id)
	}
}

// venueIDs walks every record of the journal: for each object that names
// an order id, the client order ids it is named with; for each execution
// id, the order ids.
func venueIDs(t *testing.T, in install) (orders, execs map[string]map[string]bool) {
	t.Helper()
	r := run(t, in.env(), "", "journal", "dump")
	if r.code != 0 {
		t.Fatalf("dump: %d %s", r.code, r.stderr)
	}
	orders, execs = map[string]map[string]bool{}, map[string]map[string]bool{}
	add := func(m map[string]map[string]bool, k, v string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][v] = true
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			oid, _ := x["order_id"].(string)
			if cid, _ := x["client_order_id"].(string); oid != "" && cid != "" {
				add(orders, oid, cid)
			}
			if eid, _ := x["exec_id"].(string); eid != "" && oid != "" {
				add(execs, eid, oid)
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			// An answer kept as JSON text (order_outcome's answer).
			if strings.HasPrefix(x, "{") {
				var inner any
				if json.Unmarshal([]byte(x), &inner) == nil {
					walk(inner)
				}
			}
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("dump line %q: %v", line, err)
		}
		walk(rec)
	}
	return orders, execs
}
