package actors

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// BenchmarkHeapPerThousandOrders is what each order keeps: the live heap
// (after a collection) of the whole process, server and the embedded
// paper venue, grown over keyed place_order and cancel_order pairs after
// a warm-up, in bytes per 1,000 orders (heapB/1000orders). Target: at
// most 2 MiB (D146).
//
// What an order keeps for its time is the order state of docs/tools.md
// "The action path": its two idempotency entries with their stored
// answers and its counter marks, 24 h; its client order id in the
// stream's recent orders (4,096 newest); its venue order in the paper
// venue's history (1,000 newest that filled nothing, D145). The warm-up
// fills the count bounds (4,200 orders), so what grows after it is what
// stays 24 h. Two bounded costs are taken out and reported apart:
//   - the journal's tail segment, which tidwall/wal keeps in memory up to
//     the segment size (4 MiB, D146): journal-tailB/1000orders is its
//     growth, whatever part of a segment the run filled;
//   - protoactor's process registry, 32,768 Go maps that each keep their
//     first table once a future's id lands in them (about 9 MiB at most,
//     reached over a few hundred thousand futures): the warm-up fills
//     them first, registryB is that fill.
//
// The logs are discarded (the test harness keeps them in memory; serve
// writes them to stderr).
func BenchmarkHeapPerThousandOrders(b *testing.B) {
	te := newTradeEnvWith(b, b.TempDir(), func(c *Config) { c.Logger = slog.New(slog.DiscardHandler) })
	te.tradeReady(b, messages.PolicySettings{MaxOrdersPerMinute: intp(100000), MaxUnconfirmedActionsPerHour: intp(100000),
		DailyNotionalCapUSDT: dec("1000000000")})
	n := 0
	round := func() {
		n++
		if n%9 == 0 {
			// The venue allows 10 creates a second per key: its clock
			// moves instead of the benchmark waiting.
			te.simPost(b, "/sim/clock", `{"advance_ms":1100}`)
		}
		a := limitArgs("0.001", decimal.NewFromInt(20000).Add(decimal.New(int64(n%10000), -1)).String())
		a.IdempotencyKey = fmt.Sprint("heap-", n)
		ans, e := te.place(b, a)
		if e != nil {
			b.Fatalf("place %d: %v", n, e)
		}
		c := cancelArgs(ans.OrderID)
		c.IdempotencyKey = fmt.Sprint("heap-cancel-", n)
		if _, e := te.cancel(b, c); e != nil {
			b.Fatalf("cancel %d: %v", n, e)
		}
	}
	registry := liveHeap()
	fillRegistry(te.sys)
	registry = liveHeap() - registry
	for range 4200 {
		round()
	}
	before, tail := liveHeap(), journalTail(b, te.dir)
	if p := os.Getenv("GX_HEAP_PROFILE"); p != "" {
		dumpHeapProfile(b, p+".before")
		defer dumpHeapProfile(b, p+".after")
	}
	orders := 0
	for b.Loop() {
		for range 1000 {
			round()
		}
		orders += 1000
	}
	b.StopTimer()
	tail = journalTail(b, te.dir) - tail
	grown := liveHeap() - before - tail
	per := func(v int64) float64 { return float64(v) / float64(orders) * 1000 }
	b.ReportMetric(per(grown), "heapB/1000orders")
	b.ReportMetric(per(tail), "journal-tailB/1000orders")
	b.ReportMetric(float64(registry), "registryB")
}

// fillRegistry gives every map of the process registry its table, as a
// long-running server's futures do: ids as NextId hands them out, added
// and removed.
func fillRegistry(sys *actor.ActorSystem) {
	reg := sys.ProcessRegistry
	for range 400_000 {
		pid, _ := reg.Add(nopProcess{}, reg.NextId())
		reg.Remove(pid)
	}
}

type nopProcess struct{}

func (nopProcess) SendUserMessage(*actor.PID, any)   {}
func (nopProcess) SendSystemMessage(*actor.PID, any) {}
func (nopProcess) Stop(*actor.PID)                   {}

// journalTail is the size of the journal's newest segment file under
// dir: what tidwall/wal holds in memory.
func journalTail(b *testing.B, dir string) int64 {
	var newest string
	var size int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || len(d.Name()) != 20 {
			return err
		}
		if info, err := d.Info(); err == nil && d.Name() > newest {
			newest, size = d.Name(), info.Size()
		}
		return nil
	})
	if err != nil || newest == "" {
		b.Fatalf("no journal segment under %s: %v", dir, err)
	}
	return size
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// dumpHeapProfile writes the heap profile to path (GX_HEAP_PROFILE=path
// names the pair the benchmark writes, for go tool pprof -base).
func dumpHeapProfile(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
