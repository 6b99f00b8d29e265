package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// restingBuy is a BTCUSDT buy far below the market: it rests.
var restingBuy = map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30000"}

// paperStatusJSON runs `paper status --format json`.
func paperStatusJSON(t *testing.T, in install) (v struct {
	User     string `json:"user"`
	Balances []struct {
		Coin          string `json:"coin"`
		WalletBalance string `json:"wallet_balance"`
	} `json:"balances"`
	OpenOrders []struct {
		OrderID string `json:"order_id"`
	} `json:"open_orders"`
	Positions []struct {
		Size string `json:"size"`
	} `json:"positions"`
}) {
	t.Helper()
	r := run(t, in.env(), "", "paper", "status", "--format", "json")
	if r.code != 0 {
		t.Fatalf("paper status: %d %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("paper status: %q: %v", r.stdout, err)
	}
	return v
}

// paperResets counts the paper_reset records.
func paperResets(t *testing.T, in install) int {
	t.Helper()
	r := run(t, in.env(), "", "journal", "dump", "--type", "paper_reset")
	if r.code != 0 {
		t.Fatalf("dump: %d %s", r.code, r.stderr)
	}
	return strings.Count(r.stdout, `"type":"paper_reset"`)
}

// fresh reports whether the status shows the opening account: 10000 USDT,
// nothing open.
func freshPaper(t *testing.T, in install) bool {
	t.Helper()
	v := paperStatusJSON(t, in)
	return len(v.OpenOrders) == 0 && len(v.Positions) == 0 && len(v.Balances) == 1 && v.Balances[0].Coin == "USDT" && v.Balances[0].WalletBalance == "10000"
}

// With no server running, paper status and paper reset work on the home:
// a reset without --yes on a stdin that is not a terminal is refused and
// changes nothing; with --yes it is journaled and the next serve finds the
// account started over.
func TestPaperResetWithoutServer(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	paperCeiling(t, in, "none")
	cs, _ := startServe(t, in)
	placeOrder(t, cs, restingBuy)
	placeOrder(t, cs, marketBuy)
	if err := cs.Close(); err != nil {
		t.Fatalf("serve did not exit cleanly: %v", err)
	}
	v := paperStatusJSON(t, in)
	if v.User != "local" || len(v.OpenOrders) != 1 || len(v.Positions) != 1 {
		t.Fatalf("paper status: %+v", v)
	}
	table := run(t, in.env(), "", "paper", "status")
	if table.code != 0 || !strings.Contains(table.stdout, "open orders: 1") || !strings.Contains(table.stdout, "positions: 1") {
		t.Fatalf("paper status table: %d %q", table.code, table.stdout)
	}

	r := run(t, in.env(), "y\n", "paper", "reset")
	if r.code != 1 || !strings.Contains(r.stderr, "stdin is not a terminal") || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("reset without --yes on a pipe: %d %q", r.code, r.stderr)
	}
	if paperResets(t, in) != 0 || freshPaper(t, in) {
		t.Fatal("a refused reset changed something")
	}

	r = run(t, in.env(), "", "paper", "reset", "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "reset to 10000 USDT") || !strings.Contains(r.stdout, "open orders: 1") {
		t.Fatalf("paper reset --yes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if paperResets(t, in) != 1 || !freshPaper(t, in) {
		t.Fatal("the reset is not journaled or did not start the account over")
	}
	cs, _ = startServe(t, in)
	defer cs.Close()
	after := readPaper(t, cs)
	if len(after.openIDs) != 0 || after.position != "" || after.wallet != "10000" {
		t.Fatalf("serve after the reset: %+v", after)
	}
}

// With serve running, paper reset goes through the control socket: the
// server journals it, the agent's reads show the account started over,
// and the server is still the one holding the home.
func TestPaperResetWithRunningServer(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	paperCeiling(t, in, "none")
	cs, _ := startServe(t, in)
	defer cs.Close()
	placeOrder(t, cs, restingBuy)
	placeOrder(t, cs, marketBuy)
	r := run(t, in.env(), "", "paper", "reset", "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "positions: 1") {
		t.Fatalf("paper reset --yes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if paperResets(t, in) != 1 || !freshPaper(t, in) {
		t.Fatal("the reset is not journaled or did not start the account over")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := readPaper(t, cs)
		if len(s.openIDs) == 0 && s.position == "" && s.wallet == "10000" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent still reads the old account: %+v", s)
		}
		time.Sleep(250 * time.Millisecond) // three tool calls a round: under the calls-per-second limit
	}
}
