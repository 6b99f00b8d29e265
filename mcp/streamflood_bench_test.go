package mcp

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkKillSwitchDuringAStreamFlood measures activate_kill_switch
// (MCP in-memory transport → guard → user actor → journal, one fsync)
// while a hostile proxy floods the user's private stream with 20,000
// forged order pushes a second ("flood") and with the stream quiet
// ("quiet"); each iteration turns the switch on (timed) and a human turns
// it off again (not timed). Target: the flood's p50 and p99 within 1 ms
// plus one fsync of the quiet call's.
func BenchmarkKillSwitchDuringAStreamFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		name := "quiet"
		if flood {
			name = "flood_20k_per_s"
		}
		b.Run(name, func(b *testing.B) {
			e, proxy, cs := floodedEnv(b, messages.PolicySettings{})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			if flood {
				// The frames are made beforehand: the proxy runs in this
				// process, and making them would take CPU from the server.
				frames := forgedOrders(20000)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						proxy.Flood(ctx, 20000, time.Second, func(j int) []byte { return frames[j%len(frames)] })
					}
				}()
				deadline := time.Now().Add(20 * time.Second)
				for proxy.Injected() < 20000 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			var ds []time.Duration
			for b.Loop() {
				ds = append(ds, killSwitchRound(b, e, cs, "alice"))
			}
			b.ReportMetric(float64(percentile(ds, 0.50).Nanoseconds()), "p50_ns")
			b.ReportMetric(float64(percentile(ds, 0.99).Nanoseconds()), "p99_ns")
		})
	}
}

// killSwitchRound turns user's kill switch on through cs and answers how
// long the call took; a human then turns it off again, with the
// benchmark's timer stopped.
func killSwitchRound(b *testing.B, e *env, cs *sdk.ClientSession, user string) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "activate_kill_switch", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		b.Fatalf("%v %+v", err, res)
	}
	took := time.Since(start)
	b.StopTimer()
	defer b.StartTimer()
	if _, err := e.sys.Handle(ctx, &messages.SetKillSwitchRequest{User: user, On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		b.Fatal(err)
	}
	return took
}

// BenchmarkStreamFloodGrowth measures what 100,000 forged order pushes
// (20,000 a second through the hostile proxy) cost: the live heap's
// growth after the flood, the peak heap's growth during it, the journal's
// growth in bytes and its venue_update records, each per 100,000 pushes.
// What the live heap keeps is the bounded structures (the stream cache's
// open orders, the stream's recent orders), the same after twice as many
// pushes; the journal's growth is paced by time (one venue_update every
// 200 ms at most), not by the pushes.
func BenchmarkStreamFloodGrowth(b *testing.B) {
	var heap, peakHeap, bytes, records, pushes float64
	for b.Loop() {
		b.StopTimer()
		e, proxy, _ := floodedEnv(b, messages.PolicySettings{})
		frames := forgedOrders(20000) // a second's worth: each drain sees new ids
		before := dirBytes(b, e.dir)
		base := liveHeap()
		peak := heapPeak()
		b.StartTimer()
		n := proxy.Flood(context.Background(), 20000, 5*time.Second, func(i int) []byte { return frames[i%len(frames)] })
		b.StopTimer()
		top := peak()
		time.Sleep(500 * time.Millisecond) // the last drain's record
		after := liveHeap()
		grown := dirBytes(b, e.dir) - before
		updates := 0
		for _, r := range e.records(b) {
			if messages.RecordType(r.Type) == messages.RecordVenueUpdate {
				updates++
			}
		}
		runtime.KeepAlive(frames)
		heap += float64(int64(after) - int64(base))
		peakHeap += float64(int64(top) - int64(base))
		bytes += float64(grown)
		records += float64(updates)
		pushes += float64(n)
		b.StartTimer()
	}
	per := 100000 / pushes
	b.ReportMetric(heap*per, "heap_bytes/100k_pushes")
	b.ReportMetric(peakHeap*per, "peak_heap_bytes/100k_pushes")
	b.ReportMetric(bytes*per, "bytes/100k_pushes")
	b.ReportMetric(records*per, "records/100k_pushes")
}

// forgedOrders makes n frames of a flood (forgedOrder).
func forgedOrders(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = forgedOrder(i)
	}
	return out
}

// dirBytes is the size of the files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
