package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveCPUBinEnv names another build of the binary for
// BenchmarkServeCPUPerOrder (a baseline to compare with, run alternately
// with the one the test built); empty: the test's own build.
const serveCPUBinEnv = "GX_BENCH_SERVE_BIN"

// BenchmarkServeCPUPerOrder measures the CPU the built binary's `serve`
// spends per accepted paper order (the embedded simulator included): one
// stdio session of the local user places resting limit buys, ten at once
// (the paper venue's limit is ten creates per key per second), then waits
// a second from the last answer. One op is five such bursts (50 orders). The
// process's CPU (user and system, every thread, from /proc) is read
// around each burst; the cancel of the burst's orders that follows is not
// counted. It reports cpu-ms/order (the bursts' CPU, the ~100 ms settle
// after each included, over the orders), idle-cpu-ms/s (what serve spends
// per second with nothing to do, measured before the loop),
// wall-ms/order (a burst's wall time over its orders) and peak-rss-MiB
// (serve's peak resident memory, VmHWM).
//
// GX_BENCH_SERVE_BIN=path runs that binary instead (the same install
// layout), so that an old and a new build can be measured alternately on
// one machine.
func BenchmarkServeCPUPerOrder(b *testing.B) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		b.Skip("needs /proc")
	}
	exe := bin
	if p := os.Getenv(serveCPUBinEnv); p != "" {
		exe = p
	}
	in := newInstall(b)
	if r := run(b, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "paper", "--max-orders-per-minute", "100000", "--max-unconfirmed-per-hour", "100000",
		"--daily-notional-cap", "1000000000", "--max-order-notional", "1000000000", "--confirm-above-notional", "0"); r.code != 0 {
		b.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	cmd := exec.Command(exe, "serve")
	cmd.Env = in.env("GX_LOG_LEVEL=warn")
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cpu"}, nil).Connect(ctx,
		&sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	pid := cmd.Process.Pid

	const burst, bursts = 10, 5
	seq := 0
	place := func() {
		var wg sync.WaitGroup
		errs := make(chan error, burst)
		for range burst {
			seq++
			key := fmt.Sprintf("cpu-%d", seq)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- placeResting(ctx, cs, key)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	cancelAll := func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "cancel_all_orders", Arguments: map[string]any{"category": "linear", "symbol": "BTCUSDT"}})
		if err != nil || res.IsError {
			b.Fatalf("cancel_all_orders: %v %+v", err, res)
		}
	}
	// Warm-up: the caches, the streams, the first decisions.
	for range 2 {
		place()
		cancelAll()
		time.Sleep(1050 * time.Millisecond)
	}
	idle0, t0 := taskCPU(b, pid), time.Now()
	time.Sleep(2 * time.Second)
	idle := float64(taskCPU(b, pid)-idle0) / time.Since(t0).Seconds()

	var cpu, wall time.Duration
	orders := 0
	b.ResetTimer()
	for range b.N {
		for range bursts {
			start, c0 := time.Now(), taskCPU(b, pid)
			place()
			placed := time.Now() // every create of the burst arrived before its answer
			wall += placed.Sub(start)
			time.Sleep(100 * time.Millisecond) // what the orders set going (pushes, journal) settles
			cpu += taskCPU(b, pid) - c0
			orders += burst
			cancelAll()
			if rest := time.Second + 50*time.Millisecond - time.Since(placed); rest > 0 {
				time.Sleep(rest)
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(cpu)/float64(orders), "cpu-ms/order")
	b.ReportMetric(ms(wall)/float64(orders), "wall-ms/order")
	b.ReportMetric(idle/1e6, "idle-cpu-ms/s")
	b.ReportMetric(float64(peakRSS(b, pid))/(1<<20), "peak-rss-MiB")
}

// placeResting places one resting limit buy far below the paper market and
// fails unless it was accepted and rests.
func placeResting(ctx context.Context, cs *sdk.ClientSession, key string) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{
		"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit",
		"qty": "0.001", "price": "30000", "idempotency_key": key,
	}})
	if err != nil {
		return err
	}
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	var out struct {
		Status      string `json:"status"`
		OrderStatus string `json:"order_status"`
	}
	if res.IsError || json.Unmarshal([]byte(text), &out) != nil || out.Status != "accepted" || out.OrderStatus != "New" {
		return fmt.Errorf("place_order: not a new resting order: %s", text)
	}
	return nil
}

// taskCPU is the CPU time (user and system) every thread of process pid
// has had so far, summed from /proc/pid/task/*/schedstat (nanoseconds;
// /proc/pid/stat counts in ticks of 10 ms, too coarse for a burst). Go
// keeps its threads, so none leaves the sum.
func taskCPU(b *testing.B, pid int) time.Duration {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(dirs) == 0 {
		b.Fatalf("no threads of %d: %v", pid, err)
	}
	var sum time.Duration
	for _, p := range dirs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			b.Fatalf("%s: %q", p, raw)
		}
		sum += time.Duration(ns)
	}
	return sum
}
