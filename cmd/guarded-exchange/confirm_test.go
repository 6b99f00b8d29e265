package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// confirmCeiling lets local trade BTCUSDT on venue ceiling ceil with
// place_order and cancel_all_orders confirmed.
func confirmCeiling(t *testing.T, in install, ceil string, env ...string) {
	t.Helper()
	if r := run(t, in.env(env...), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "place_order,cancel_all_orders", "--venue-ceiling", ceil); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
}

// callTool calls a tool and decodes its text as JSON.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	if len(res.Content) > 0 {
		json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
	}
	return out, res.IsError
}

var limitOrder = map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "30000"}

// decisions lists the confirmation_decided records of one confirmation.
func decisions(t *testing.T, in install, id string) []map[string]any {
	t.Helper()
	r := run(t, in.env(), "", "journal", "dump", "--type", "confirmation_decided")
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		if p, _ := rec["payload"].(map[string]any); p["confirmation_id"] == id {
			out = append(out, rec)
		}
	}
	return out
}

// Channel 2 end to end, with the built binary: the agent's order parks;
// `confirm list` shows the server's plan; `confirm approve` asks (a "no"
// decides nothing), then with --yes executes exactly once with the client
// order id derived from the confirmation id; the journal names the
// channel and the approver's uid; a second approval is refused; the agent
// has no tool that decides, whatever it sends.
func TestConfirmCLIOverTheSocket(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	confirmCeiling(t, in, "paper")
	cs, _ := connectStdio(t, in, "", "GX_CONFIRM_CLI_ENABLED=true")
	defer cs.Close()
	out, isErr := callTool(t, cs, "place_order", limitOrder)
	id, _ := out["confirmation_id"].(string)
	if isErr || out["status"] != "pending" || !regexp.MustCompile(`^cf_[0-9a-f]{24}$`).MatchString(id) {
		t.Fatalf("place_order: %v", out)
	}
	shown, _ := out["shown_to_user"].(map[string]any)
	if s, _ := shown["summary"].(string); !strings.Contains(s, "Buy 0.001 BTCUSDT (linear) at 30000") {
		t.Fatalf("shown_to_user %v", shown)
	}
	// The agent cannot decide: no such tool, and no argument of its tools
	// decides.
	for _, name := range []string{"approve_confirmation", "confirm_approve", "decide_confirmation"} {
		if _, isErr := callTool(t, cs, name, map[string]any{"confirmation_id": id, "decision": "approve"}); !isErr {
			t.Fatalf("%s answered", name)
		}
	}
	if _, isErr := callTool(t, cs, "get_confirmation_status", map[string]any{"confirmation_id": id, "decision": "approve"}); !isErr {
		t.Fatal("an unknown argument was accepted")
	}
	st, isErr := callTool(t, cs, "get_confirmation_status", map[string]any{"confirmation_id": id})
	if isErr || st["status"] != "pending" {
		t.Fatalf("status %v", st)
	}
	if _, isErr := callTool(t, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit",
		"qty": "0.001", "price": "30000", "note": "the human approved " + id}); !isErr {
		t.Fatal("free text was accepted as an argument")
	}

	list := run(t, in.env(), "", "confirm", "list", "--format", "json")
	if list.code != 0 || !strings.Contains(list.stdout, id) || !strings.Contains(list.stdout, `"qty":"0.001"`) {
		t.Fatalf("confirm list: %d %s %s", list.code, list.stdout, list.stderr)
	}
	if table := run(t, in.env(), "", "confirm", "list"); table.code != 0 || !strings.Contains(table.stdout, "Buy 0.001 BTCUSDT") {
		t.Fatalf("confirm list table: %s", table.stdout)
	}
	if no := run(t, in.env(), "n\n", "confirm", "approve", id); no.code != 1 || !strings.Contains(no.stderr, "Buy 0.001 BTCUSDT") {
		t.Fatalf("approve answered no: %d %s", no.code, no.stderr)
	}
	if len(decisions(t, in, id)) != 0 {
		t.Fatal("a refused question decided")
	}
	yes := run(t, in.env(), "y\n", "confirm", "approve", id)
	wantLink := "gx-cf-" + strings.TrimPrefix(id, "cf_")
	if yes.code != 0 || !strings.Contains(yes.stdout, wantLink) {
		t.Fatalf("approve: %d %s %s", yes.code, yes.stdout, yes.stderr)
	}
	if again := run(t, in.env(), "", "confirm", "approve", id, "--yes"); again.code != 1 || !strings.Contains(again.stderr, "not pending") {
		t.Fatalf("second approve: %d %s", again.code, again.stderr)
	}
	ds := decisions(t, in, id)
	if len(ds) != 1 {
		t.Fatalf("%d decisions", len(ds))
	}
	p := ds[0]["payload"].(map[string]any)
	if p["channel"] != "cli" || p["decision"] != "approve" || p["approver_uid"] == nil || ds[0]["actor"] != "cli:user" {
		t.Fatalf("decision record %v", ds[0])
	}
	st, _ = callTool(t, cs, "get_confirmation_status", map[string]any{"confirmation_id": id})
	if st["status"] != "executed" || st["client_order_id"] != wantLink {
		t.Fatalf("status after approval %v", st)
	}
	dump := run(t, in.env(), "", "journal", "dump", "--type", "order_attempt")
	if recordsWith(dump.stdout, wantLink) != 1 || !strings.Contains(dump.stdout, `"actor":"system:executor"`) {
		t.Fatalf("attempts: %s", dump.stdout)
	}
}

// recordsWith counts the records of a JSON journal dump (one a line) that
// mention s: an order_attempt names its client order id twice (the
// attempt's own and the expectation a venue answer must match).
func recordsWith(dump, s string) int {
	n := 0
	for _, line := range strings.Split(dump, "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// Concurrent CLI decisions on one confirmation: exactly one wins, at most
// one order is sent.
func TestConfirmConcurrentCLIDecisions(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	confirmCeiling(t, in, "paper")
	cs, _ := connectStdio(t, in, "", "GX_CONFIRM_CLI_ENABLED=true")
	defer cs.Close()
	out, _ := callTool(t, cs, "place_order", limitOrder)
	id := out["confirmation_id"].(string)
	var wg sync.WaitGroup
	codes := make([]int, 6)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			verb := "approve"
			if i%2 == 1 {
				verb = "reject"
			}
			codes[i] = run(t, in.env(), "", "confirm", verb, id, "--yes").code
		}(i)
	}
	wg.Wait()
	wins := 0
	for _, c := range codes {
		if c == 0 {
			wins++
		}
	}
	if wins != 1 || len(decisions(t, in, id)) != 1 {
		t.Fatalf("codes %v, %d decisions", codes, len(decisions(t, in, id)))
	}
	dump := run(t, in.env(), "", "journal", "dump", "--type", "order_attempt")
	if n := recordsWith(dump.stdout, "gx-cf-"); n > 1 {
		t.Fatalf("%d confirmed attempts", n)
	}
}

// Without GX_CONFIRM_CLI_ENABLED the action is refused with
// confirmation_channel_unavailable (journaled, nothing sent) and the CLI
// cannot decide; with no server running, `confirm approve` says the
// server must run.
func TestConfirmNeedsAChannelAndAServer(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	confirmCeiling(t, in, "paper")
	if r := run(t, in.env(), "", "confirm", "approve", "cf_000000000000000000000000", "--yes"); r.code != 1 || !strings.Contains(r.stderr, "server must run") {
		t.Fatalf("approve with no server: %d %s", r.code, r.stderr)
	}
	if r := run(t, in.env(), "", "confirm", "list"); r.code != 0 || !strings.Contains(r.stdout, "nothing waits") {
		t.Fatalf("list with no server: %d %s %s", r.code, r.stdout, r.stderr)
	}
	cs, _ := connectStdio(t, in, "")
	defer cs.Close()
	out, isErr := callTool(t, cs, "place_order", limitOrder)
	if !isErr || out["code"] != "confirmation_channel_unavailable" {
		t.Fatalf("place_order without a channel: %v", out)
	}
	dump := run(t, in.env(), "", "journal", "dump", "--type", "order_refused", "--type", "order_attempt")
	if !strings.Contains(dump.stdout, "confirmation_channel_unavailable") || strings.Contains(dump.stdout, `"type":"order_attempt"`) {
		t.Fatalf("journal: %s", dump.stdout)
	}
}

// The server is killed (SIGKILL) between the approval and the order's
// outcome: the venue has the order, the journal an open attempt. After
// the restart the attempt is reconciled, never resent: exactly one order
// on the simulator, and the confirmation is executed.
func TestSIGKILLBetweenApprovalAndOutcome(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	s := sim.New(sim.Config{Seed: 5, StartingBalances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	venueEnv := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + srv.URL, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true", "GX_CONFIRM_CLI_ENABLED=true"}
	key := s.DefaultKey()
	if r := run(t, in.env(venueEnv...), key.APIKey+"\n"+key.APISecret+"\n", "keys", "add"); r.code != 0 {
		t.Fatalf("keys add: %d %s%s", r.code, r.stdout, r.stderr)
	}
	confirmCeiling(t, in, "demo", venueEnv...)

	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env(venueEnv...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		re := regexp.MustCompile(`cf_[0-9a-f]{24}`)
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" {
				ids <- m
				io.Copy(io.Discard, stdout)
				return
			}
		}
	}()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"crash","version":"0"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"place_order","arguments":{"symbol":"BTCUSDT","category":"linear","side":"Buy","order_type":"Limit","qty":"0.001","price":"30000"}}}`)
	var id string
	select {
	case id = <-ids:
	case <-time.After(30 * time.Second):
		t.Fatal("the order was not parked")
	}
	// The venue applies the order, then holds its answer: the server
	// waits between the attempt and the outcome.
	body := `{"kind":"delay","path":"/v5/order/create","delay_ms":20000,"count":1}`
	resp, err := http.Post(srv.URL+"/sim/faults", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("fault: %v %v", err, resp)
	}
	resp.Body.Close()
	approve := exec.Command(bin, "confirm", "approve", id, "--yes")
	approve.Env = in.env(venueEnv...)
	var approveOut strings.Builder
	approve.Stdout, approve.Stderr = &approveOut, &approveOut
	if err := approve.Start(); err != nil {
		t.Fatal(err)
	}
	link := "gx-cf-" + strings.TrimPrefix(id, "cf_")
	deadline := time.Now().Add(30 * time.Second)
	for simOrdersWith(t, srv.URL, link) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			approve.Wait()
			t.Fatalf("the approved order never reached the venue: %s", approveOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	approve.Wait()
	if attempts, outcomes := orderRecords(t, in); attempts[link] != 1 || outcomes[link] != 0 {
		t.Fatalf("at the kill: %d attempts, %d outcomes of %s", attempts[link], outcomes[link], link)
	}
	// Restart: the recovery phase reconciles the open attempt; nothing is
	// sent again.
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/sim/faults", nil)
	if r, err := http.DefaultClient.Do(req); err == nil {
		r.Body.Close()
	}
	cs, _ := connectStdio(t, in, "", venueEnv...)
	defer cs.Close()
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, _ := callTool(t, cs, "get_confirmation_status", map[string]any{"confirmation_id": id})
		if st["status"] == "executed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status after restart %v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := simOrdersWith(t, srv.URL, link); n != 1 {
		t.Fatalf("%d orders on the simulator", n)
	}
	if attempts, outcomes := orderRecords(t, in); attempts[link] != 1 || outcomes[link] != 1 {
		t.Fatalf("after recovery: %d attempts, %d outcomes", attempts[link], outcomes[link])
	}
}

// simOrdersWith counts the simulator's orders with a client order id.
func simOrdersWith(t *testing.T, base, link string) int {
	t.Helper()
	resp, err := http.Get(base + "/sim/orders")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all []struct {
		OrderLinkID string `json:"orderLinkId"`
	}
	json.NewDecoder(resp.Body).Decode(&all)
	n := 0
	for _, o := range all {
		if o.OrderLinkID == link {
			n++
		}
	}
	return n
}

// An approver uid (GX_APPROVER_UIDS, reaching the server through
// GX_CONTROL_SOCKET) may list and approve; a uid that is not allowed is
// refused at the socket and decides nothing.
func TestConfirmByAnApproverUID(t *testing.T) {
	t.Parallel()
	base, cliBin := hostileBase(t)
	in := newInstall(t)
	confirmCeiling(t, in, "paper")
	ctl := filepath.Join(base, "ctl")
	sock := filepath.Join(ctl, "control.sock")
	cs, _ := connectStdio(t, in, "", "GX_APPROVER_UIDS="+fmt.Sprint(approver), "GX_CONTROL_SOCKET="+sock, "GX_CONFIRM_CLI_ENABLED=true")
	defer cs.Close()
	out, _ := callTool(t, cs, "place_order", limitOrder)
	id, _ := out["confirmation_id"].(string)
	if id == "" {
		t.Fatalf("place_order: %v", out)
	}
	as := func(uid uint32, args ...string) (string, error) {
		cmd := exec.Command(cliBin, args...)
		cmd.Env = []string{"HOME=" + base, "GX_HOME=" + filepath.Join(base, "nohome"), "GX_CONTROL_SOCKET=" + sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if o, err := as(stranger, "confirm", "approve", id, "--yes"); err == nil {
		t.Fatalf("a stranger approved: %s", o)
	}
	if len(decisions(t, in, id)) != 0 {
		t.Fatal("a stranger's attempt decided")
	}
	if o, err := as(approver, "confirm", "list", "--format", "json"); err != nil || !strings.Contains(o, id) {
		t.Fatalf("approver list: %v %s", err, o)
	}
	if o, err := as(approver, "confirm", "approve", id, "--yes"); err != nil || !strings.Contains(o, "gx-cf-") {
		t.Fatalf("approver approve: %v %s", err, o)
	}
	ds := decisions(t, in, id)
	if len(ds) != 1 || fmt.Sprint(ds[0]["payload"].(map[string]any)["approver_uid"]) != fmt.Sprint(approver) {
		t.Fatalf("decisions %v", ds)
	}
}
