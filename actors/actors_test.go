package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// newSimMarket serves the public endpoints from a real simulator (seed 7)
// on loopback.
func newSimMarket(t testing.TB) rig.Market {
	t.Helper()
	return rig.NewMarket(t, rig.StartSim(t, rig.SimOptions{Seed: 7, PublicRateLimit: true}).URL, nil)
}

type testSystem struct {
	*System
	log *wal.Log
	dir string
	buf *syncBuffer
	// sim is the venue's simulator (nil: none).
	sim *rig.Sim
	// opts start the system again on the same journal, simulator and
	// master key (restart).
	opts stack
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startTest starts a system over a fresh journal, serving public reads
// from market (nil: none), with a venue call bounded to 5 s.
func startTest(t testing.TB, market MarketSource) *testSystem {
	t.Helper()
	return startStack(t, stack{NoVenue: true, Configure: func(c *Config) { c.Market, c.RequestTimeout = market, 5*time.Second }})
}

func (ts *testSystem) stop() {
	if ts.System != nil {
		ts.System.Stop()
		ts.System = nil
	}
	if ts.log != nil {
		_ = ts.log.Close()
		ts.log = nil
	}
}

// records stops the system and reads back what is on disk.
func (ts *testSystem) records(t *testing.T) []wal.Record {
	t.Helper()
	ts.stop()
	return rig.Records(t, ts.dir)
}

func TestJournalGroupCommitConcurrentWriters(t *testing.T) {
	ts := startTest(t, nil)
	const writers, each = 32, 20
	ctx := context.Background()
	var wg sync.WaitGroup
	seqs := make(chan uint64, writers*each)
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rec, err := ts.journalJSON(ctx, messages.RecordToolCall, fmt.Sprintf("u%d", w), messages.ActorAgent, map[string]int{"i": i})
				if err != nil {
					errs <- err
					return
				}
				seqs <- rec.Seq
			}
		}()
	}
	wg.Wait()
	close(seqs)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	for s := range seqs {
		if got[s] {
			t.Fatalf("seq %d acknowledged twice", s)
		}
		got[s] = true
	}
	if len(got) != writers*each {
		t.Fatalf("acknowledged %d records, want %d", len(got), writers*each)
	}
	recs := ts.records(t)
	if len(recs) != writers*each {
		t.Fatalf("on disk %d records, want %d", len(recs), writers*each)
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) || !got[r.Seq] {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		if i > 0 && r.PrevHash != recs[i-1].Hash {
			t.Fatalf("record %d does not chain to the one before", r.Seq)
		}
	}
}

func TestJournalAsyncIsDurableAfterStop(t *testing.T) {
	ts := startTest(t, nil)
	for i := range 50 {
		ts.journalAsync(wal.Entry{Type: uint16(messages.RecordToolCall), User: "local", Actor: messages.ActorAgent, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	recs := ts.records(t) // Stop drains the queue before stopping
	if len(recs) != 50 {
		t.Fatalf("got %d records after a graceful stop, want 50", len(recs))
	}
	var last struct{ I int }
	if err := json.Unmarshal(recs[49].Payload, &last); err != nil || last.I != 49 {
		t.Fatalf("last payload %s, order not kept", recs[49].Payload)
	}
}

func TestMarketReadsThroughSimulator(t *testing.T) {
	ts := startTest(t, newSimMarket(t))
	ctx := context.Background()
	tk, err := ts.Ticker(ctx, &messages.GetTickerRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Symbol != "BTCUSDT" || !tk.LastPrice.IsPositive() || !tk.Bid1Price.LessThan(tk.Ask1Price) || !tk.HasDerivatives {
		t.Fatalf("implausible ticker %+v", tk)
	}
	book, err := ts.Orderbook(ctx, &messages.GetOrderbookRequest{Category: messages.CategorySpot, Symbol: "ETHUSDT", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Bids) == 0 || len(book.Asks) == 0 || !book.Bids[0].Price.LessThan(book.Asks[0].Price) {
		t.Fatalf("implausible book %+v", book)
	}
	ks, err := ts.Klines(ctx, &messages.GetKlinesRequest{Category: messages.CategoryLinear, Symbol: "SOLUSDT", Interval: "60", Limit: 5})
	if err != nil || len(ks) != 5 {
		t.Fatalf("klines: %v (%d)", err, len(ks))
	}
	in, err := ts.Instrument(ctx, &messages.GetInstrumentRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	if err != nil || !in.TickSize.IsPositive() || !in.QtyStep.IsPositive() {
		t.Fatalf("instrument: %v %+v", err, in)
	}
	_, err = ts.Ticker(ctx, &messages.GetTickerRequest{Category: messages.CategoryLinear, Symbol: "NOPEUSDT"})
	if c := messages.CodeOf(err); c != messages.CodeNotFound && c != messages.CodeExchangeRejected {
		t.Fatalf("unknown symbol: code %q (%v)", c, err)
	}
}

// A panic inside Receive is answered with internal_error and the actor is
// restarted; the next request is served.
func TestPanicInReceiveAnswersAndRestarts(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "pat"}, messages.ActorCLIAdmin)
	_, err := ts.askUser(context.Background(), "pat", &crashRequest{})
	if messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("crashing request got %v, want internal_error", err)
	}
	if _, err := ts.Handle(context.Background(), &messages.ShowPolicyRequest{User: "pat"}, messages.ActorCLIUser); err != nil {
		t.Fatalf("request after the restart: %v", err)
	}
	if !bytes.Contains([]byte(ts.buf.String()), []byte(`"actor panic"`)) {
		t.Error("the panic was not logged through the project's logger")
	}
}

// panickyMarket is a market source whose ticker panics.
type panickyMarket struct{ rig.Market }

func (panickyMarket) Ticker(context.Context, messages.Category, string) (*messages.Ticker, error) {
	panic("market: ticker panicked")
}

// A public read that panics in the market source is answered with
// internal_error and logged through the project's logger, as a call off a
// venue actor's mailbox is; the process and the other reads go on.
func TestPanicInAMarketReadAnswersInternalError(t *testing.T) {
	ts := startTest(t, panickyMarket{newSimMarket(t)})
	ctx := context.Background()
	if _, err := ts.Ticker(ctx, &messages.GetTickerRequest{Category: messages.CategorySpot, Symbol: "BTCUSDT"}); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("a panicking read got %v, want internal_error", err)
	}
	if !bytes.Contains([]byte(ts.buf.String()), []byte(`"venue request panic"`)) {
		t.Error("the panic was not logged through the project's logger")
	}
	if _, err := ts.Instrument(ctx, &messages.GetInstrumentRequest{Category: messages.CategorySpot, Symbol: "BTCUSDT"}); err != nil {
		t.Fatalf("a read after the panic: %v", err)
	}
}

// The journal is stopped, not restarted, after a failed write: every later
// append fails closed with internal_error. (The writer has no actor to
// panic: a panic in its write is a failed write, TestWriterPanicInWriteFailsClosed
// in actors/journal; here the log fails under it.)
func TestJournalPanicFailsClosed(t *testing.T) {
	ts := startTest(t, nil)
	if _, err := ts.journalJSON(context.Background(), messages.RecordToolCall, "u", messages.ActorAgent, map[string]int{}); err != nil {
		t.Fatal(err)
	}
	// The log is closed under the writer (it is idle: the record above
	// was answered): its next write fails.
	_ = ts.log.Close()
	_, err := ts.journalJSON(context.Background(), messages.RecordToolCall, "u", messages.ActorAgent, map[string]int{})
	if messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("failing write got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := ts.journalJSON(ctx, messages.RecordToolCall, "u", messages.ActorAgent, map[string]int{}); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("append after journal failure: %v, want internal_error", err)
	}
	// A read-only tool's record is not awaited, but it is refused too:
	// nothing is served unjournaled.
	if _, err := ts.ToolCalled(ctx, &messages.ToolCalled{User: "u", Tool: "get_ticker"}, false); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("async tool_call after journal failure: %v", err)
	}
}

func TestProtoactorLogsGoToOurLogger(t *testing.T) {
	ts := startTest(t, nil)
	ts.sys.Logger().Warn("probe from protoactor's logger")
	ts.sys.Logger().Info("info is filtered")
	out := ts.buf.String()
	if !strings.Contains(out, `"component":"protoactor"`) || !strings.Contains(out, "probe from protoactor") {
		t.Fatalf("protoactor does not log through the configured logger: %q", out)
	}
	if strings.Contains(out, "info is filtered") {
		t.Fatal("protoactor's info lines are not filtered")
	}
}

func BenchmarkJournalGroupCommit(b *testing.B) {
	for _, writers := range []int{1, 8, 64, 512} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			ts := startTest(b, nil)
			payload := bytes.Repeat([]byte("x"), 254)
			payload[0], payload[253] = '"', '"'
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			per := (b.N + writers - 1) / writers
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if _, err := ts.journalEntry(ctx, wal.Entry{Type: 1, User: "u", Actor: "mcp:agent", Payload: payload}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*writers)/time.Since(start).Seconds(), "records/s")
		})
	}
}

func sortDurations(s []time.Duration) { slices.Sort(s) }

// An entry the WAL refuses (here: a payload that is not JSON) is refused
// alone; the records batched with it, and later ones, are written.
func TestInvalidEntryIsRefusedAlone(t *testing.T) {
	ts := startTest(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := []byte(fmt.Sprintf(`{"i":%d}`, i))
			if i == 7 {
				payload = []byte(`not json`)
			}
			_, errs[i] = ts.journalEntry(ctx, wal.Entry{Type: uint16(messages.RecordToolCall), User: "u", Actor: messages.ActorAgent, Payload: payload})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 7) != (err != nil) {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if _, err := ts.journalEntry(ctx, wal.Entry{Type: uint16(messages.RecordToolCall), User: "u", Actor: messages.ActorAgent, Payload: []byte(`{}`)}); err != nil {
		t.Fatalf("a later append: %v", err)
	}
	if n := len(ts.records(t)); n != 20 {
		t.Fatalf("%d records on disk, want 20", n)
	}
}

// journalJSON writes any record, as the journal's owner (or an attacker
// with write access to the files) could; System.JournalJSON refuses all
// but the server's own types.
func (ts *testSystem) journalJSON(ctx context.Context, typ messages.RecordType, user, actorName string, v any) (wal.Record, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return wal.Record{}, err
	}
	return ts.journalEntry(ctx, wal.Entry{Type: uint16(typ), User: user, Actor: actorName, Payload: payload})
}
