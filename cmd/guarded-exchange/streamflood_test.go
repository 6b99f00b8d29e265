package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// serveChild finds the serve process this test started on home (a child
// of this process running the built binary with GX_HOME=home: other
// tests run theirs at the same time).
func serveChild(t *testing.T, home string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc here")
	}
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == me {
			cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
			if strings.Contains(string(cmdline), "serve") && slices.Contains(strings.Split(string(environ), "\x00"), "GX_HOME="+home) {
				return pid
			}
		}
	}
	t.Fatal("the serve process was not found")
	return 0
}

// peakRSS is a process's resident memory high-water mark (VmHWM), in bytes.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// serve on bybit-demo, its private stream through a hostile proxy that
// floods it with 20,000 forged order pushes a second: activate_kill_switch
// answers over stdio and the switch is on (kill_switch_on journaled),
// reads answer, the process's memory stays bounded and the journal holds a
// bounded number of venue_update records.
func TestServeKeepsTheKillSwitchDuringAStreamFlood(t *testing.T) {
	srv, err := sim.Start(sim.Config{Seed: 13, NoPublicRateLimit: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ann := srv.Announcement()
	resp, err := http.Post(ann.REST+"/sim/accounts/"+ann.APIKey+"/balances", "application/json", strings.NewReader(`{"USDT":"100000"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	proxy, err := hostile.New(ann.WSPrivate)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()

	in := newInstall(t)
	demo := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + ann.REST, "GX_BYBIT_WS_PRIVATE_URL=" + proxy.URL(), "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true"}
	if r := run(t, in.env(demo...), ann.APIKey+"\n"+ann.APISecret+"\n", "keys", "add"); r.code != 0 {
		t.Fatalf("keys add on bybit-demo: %d %s%s", r.code, r.stdout, r.stderr)
	}
	cs, _ := connectStdio(t, in, "", demo...)
	defer cs.Close()
	pid := serveChild(t, in.home)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := proxy.WaitSubscribed(ctx, 1); err != nil {
		t.Fatalf("serve's private stream never subscribed through the proxy: %v", err)
	}
	before := peakRSS(t, pid)

	const perSecond, floodFor = 20000, 4 * time.Second
	pushed := make(chan int, 1)
	go func() {
		pushed <- proxy.Flood(ctx, perSecond, floodFor, func(i int) []byte {
			return hostile.Push("order", hostile.Order(map[string]any{
				"orderId": fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), "orderLinkId": fmt.Sprintf("ext-%d", i)}))
		})
	}()
	for proxy.Injected() < perSecond && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	for _, call := range []sdk.CallToolParams{
		{Name: "activate_kill_switch", Arguments: map[string]any{}},
		{Name: "get_posture", Arguments: map[string]any{}},
		{Name: "get_open_orders", Arguments: map[string]any{"category": "linear"}},
	} {
		name := call.Name
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := cs.CallTool(cctx, &call)
		ccancel()
		if err != nil || res.IsError {
			t.Fatalf("%s during the flood: %v %+v", name, err, res)
		}
	}
	n := <-pushed
	peak := peakRSS(t, pid)
	t.Logf("%d pushes; serve's peak RSS %d MB before the flood, %d MB after", n, before>>20, peak>>20)
	if peak-before > 128<<20 {
		t.Fatalf("serve's memory grew by %d MB under %d pushes", (peak-before)>>20, n)
	}
	time.Sleep(500 * time.Millisecond) // the last venue_update
	cs.Close()

	dump := run(t, in.env(demo...), "", "journal", "dump", "--type", "kill_switch_on")
	if dump.code != 0 || !strings.Contains(dump.stdout, `"mcp:agent"`) {
		t.Fatalf("no kill_switch_on by the agent in the journal: %d %s %s", dump.code, dump.stdout, dump.stderr)
	}
	dump = run(t, in.env(demo...), "", "journal", "dump", "--type", "venue_update")
	records := strings.Count(dump.stdout, "\n")
	t.Logf("journal: %d venue_update records, %d bytes, for %d pushes", records, len(dump.stdout), n)
	if records > n/100+10 || len(dump.stdout) > 64*n+256<<10 {
		t.Fatalf("the journal grew with the pushes: %d venue_update records, %d bytes for %d pushes", records, len(dump.stdout), n)
	}
}
