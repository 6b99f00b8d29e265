package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The server is killed (SIGKILL) while place_order calls are in flight.
// After the restart the journal verifies, and the recovery phase gives
// every order_attempt without an outcome its order_outcome before new
// writes: no attempt stays open and none gets two outcomes.
func TestSIGKILLDuringOrdersLeavesNothingOpen(t *testing.T) {
	in := newInstall(t)
	if r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "paper", "--max-orders-per-minute", "1000", "--max-unconfirmed-per-hour", "1000"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	answered := make(chan struct{}, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"client_order_id"`) {
				answered <- struct{}{}
			}
		}
	}()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"crash","version":"0"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"place_order","arguments":{"symbol":"BTCUSDT","category":"linear","side":"Buy","order_type":"Limit","qty":"0.001","price":"%d"}}}`+"\n", 10+i, 30000+i)
	}
	// Kill it once a few orders were answered: later ones are in flight
	// (attempts journaled, the venue not yet answered, or answered and not
	// yet journaled).
	for i := 0; i < 3; i++ {
		select {
		case <-answered:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("no order was answered")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	if r := run(t, in.env(), "", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify after SIGKILL: %d %s", r.code, r.stderr)
	}
	before, closed := orderRecords(t, in)
	openAtKill := 0
	for id := range before {
		if closed[id] == 0 {
			openAtKill++
		}
	}
	if openAtKill == 0 {
		t.Fatalf("the kill left no attempt open (%d attempts): the test did not interrupt anything", len(before))
	}
	t.Logf("%d attempts, %d open at the kill", len(before), openAtKill)
	// Restart: the recovery phase reconciles the open attempts (the paper
	// venue keeps its accounts, so an order it accepted is found, one it
	// never got is not) before anything else.
	cs, _ := connectStdio(t, in, "")
	deadline := time.Now().Add(30 * time.Second)
	var attempts, outcomes map[string]int
	for {
		attempts, outcomes = orderRecords(t, in)
		open := 0
		for id := range attempts {
			if outcomes[id] == 0 {
				open++
			}
		}
		if open == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cs.Close()
	attempts, outcomes = orderRecords(t, in)
	if len(attempts) < 3 {
		t.Fatalf("only %d attempts journaled", len(attempts))
	}
	for id, n := range attempts {
		if n != 1 || outcomes[id] != 1 {
			t.Fatalf("attempt %s: %d attempts, %d outcomes", id, n, outcomes[id])
		}
	}
	for id := range outcomes {
		if attempts[id] == 0 {
			t.Fatalf("outcome %s without an attempt", id)
		}
	}
	if r := run(t, in.env(), "", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify after recovery: %d %s", r.code, r.stderr)
	}
}

// orderRecords counts order_attempt and order_outcome records by client
// order id.
func orderRecords(t *testing.T, in install) (attempts, outcomes map[string]int) {
	t.Helper()
	attempts, outcomes = map[string]int{}, map[string]int{}
	r := run(t, in.env(), "", "journal", "dump", "--type", "order_attempt", "--type", "order_outcome")
	if r.code != 0 {
		t.Fatalf("dump: %d %s", r.code, r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				ClientOrderID string `json:"client_order_id"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("dump line %q: %v", line, err)
		}
		if rec.Type == "order_attempt" {
			attempts[rec.Payload.ClientOrderID]++
		} else {
			outcomes[rec.Payload.ClientOrderID]++
		}
	}
	return attempts, outcomes
}
