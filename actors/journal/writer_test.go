package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// openWriter starts a Writer on a real journal in a fresh directory.
func openWriter(t *testing.T, o Options) (*Writer, *wal.Log, string) {
	t.Helper()
	dir := t.TempDir()
	l, _, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := New(l, o)
	t.Cleanup(func() {
		w.Close()
		_ = l.Close()
	})
	return w, l, dir
}

func entry(user string, i int) wal.Entry {
	return wal.Entry{Time: time.Now().UTC(), Type: uint16(messages.RecordToolCall), User: user, Actor: messages.ActorAgent,
		Payload: fmt.Appendf(nil, `{"i":%d}`, i)}
}

// appendWait appends one record and waits for its answer.
func appendWait(t *testing.T, w *Writer, e wal.Entry, d Durability) Result {
	t.Helper()
	ch := make(chan Result, 1)
	w.Append(e, d, func(r Result) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no answer from the writer")
		return Result{}
	}
}

// closeAndRead closes the writer and its log, and reads back what the
// journal holds.
func closeAndRead(t *testing.T, w *Writer, l *wal.Log, dir string) []wal.Record {
	t.Helper()
	w.Close()
	_ = l.Close()
	return onDisk(t, dir)
}

// onDisk reads back what the journal holds.
func onDisk(t *testing.T, dir string) []wal.Record {
	t.Helper()
	return rig.Records(t, dir)
}

// gate makes the writer's first write wait until it is opened, so that
// what is appended meanwhile queues up; every write goes to the real log.
type gate struct {
	once    sync.Once
	started chan struct{}
	open    chan struct{}
}

func hold(w *Writer, l *wal.Log) *gate {
	g := &gate{started: make(chan struct{}), open: make(chan struct{})}
	w.hookWrite = func(e []wal.Entry) ([]wal.Record, error) {
		g.once.Do(func() {
			close(g.started)
			<-g.open
		})
		return l.Append(e)
	}
	return g
}

// Records from many writers are all answered once, each with its own seq,
// and lie on disk in the order of their seqs, chained.
func TestWriterOrdersAndChainsConcurrentAppends(t *testing.T) {
	w, l, dir := openWriter(t, Options{})
	const writers, each = 16, 25
	var mu sync.Mutex
	got := map[uint64]wal.Entry{}
	var wg sync.WaitGroup
	for u := range writers {
		wg.Go(func() {
			for i := range each {
				e := entry(fmt.Sprintf("u%d", u), i)
				r := appendWait(t, w, e, Sync)
				if r.Err != nil {
					t.Error(r.Err)
					return
				}
				mu.Lock()
				if _, dup := got[r.Record.Seq]; dup {
					t.Errorf("seq %d answered twice", r.Record.Seq)
				}
				got[r.Record.Seq] = e
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	recs := closeAndRead(t, w, l, dir)
	if len(recs) != writers*each || len(got) != writers*each {
		t.Fatalf("%d records on disk, %d answered, want %d", len(recs), len(got), writers*each)
	}
	last := map[string]int{}
	for i, r := range recs {
		e, ok := got[r.Seq]
		if r.Seq != uint64(i+1) || !ok || e.User != r.User || string(e.Payload) != string(r.Payload) {
			t.Fatalf("record %d (seq %d) is not the one answered with its seq", i, r.Seq)
		}
		if i > 0 && r.PrevHash != recs[i-1].Hash {
			t.Fatalf("record %d does not chain to the one before", r.Seq)
		}
		var p struct{ I int }
		fmt.Sscanf(string(r.Payload), `{"i":%d}`, &p.I)
		if n, seen := last[r.User]; seen && p.I != n+1 {
			t.Fatalf("%s's records out of order: %d after %d", r.User, p.I, n)
		}
		last[r.User] = p.I
	}
}

// Records appended while a sync runs go out together in the next one:
// fewer syncs than records, counted, not timed.
func TestWriterGroupCommitsWhatQueuedDuringASync(t *testing.T) {
	w, l, dir := openWriter(t, Options{})
	g := hold(w, l)
	first := make(chan Result, 1)
	w.Append(entry("u", 0), Sync, func(r Result) { first <- r })
	<-g.started // the first sync is under way, and held
	const n = 50
	answers := make(chan Result, n)
	for i := 1; i <= n; i++ {
		w.Append(entry("u", i), Sync, func(r Result) { answers <- r })
	}
	close(g.open)
	if r := <-first; r.Err != nil {
		t.Fatal(r.Err)
	}
	for range n {
		if r := <-answers; r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if f := w.Flushes(); f != 2 {
		t.Fatalf("%d records took %d syncs, want 2 (the first, then all that queued during it)", n+1, f)
	}
	if got := len(closeAndRead(t, w, l, dir)); got != n+1 {
		t.Fatalf("%d records on disk, want %d", got, n+1)
	}
}

// A NoSync record starts no sync: it rides the next Sync record's, and is
// answered with it, before it in the journal.
func TestWriterNoSyncRidesTheNextSync(t *testing.T) {
	w, _, _ := openWriter(t, Options{})
	lazy := make(chan Result, 1)
	w.Append(entry("u", 1), NoSync, func(r Result) { lazy <- r })
	// A Sync record of another caller after it: one sync for both.
	r := appendWait(t, w, entry("v", 2), Sync)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	l := <-lazy
	if l.Err != nil {
		t.Fatal(l.Err)
	}
	if l.Record.Seq != 1 || r.Record.Seq != 2 {
		t.Fatalf("seqs %d, %d: the NoSync record did not go before the Sync one", l.Record.Seq, r.Record.Seq)
	}
	if f := w.Flushes(); f != 1 {
		t.Fatalf("%d syncs, want 1", f)
	}
	// A lone NoSync record waits for a Flush. (Give a wrong writer time to
	// start a sync of its own; a right one passes however long this is.)
	lazy2 := make(chan Result, 1)
	w.Append(entry("u", 3), NoSync, func(r Result) { lazy2 <- r })
	time.Sleep(100 * time.Millisecond)
	if len(lazy2) != 0 {
		t.Fatal("a lone NoSync record was answered before any sync")
	}
	if f := w.Flushes(); f != 1 {
		t.Fatalf("a NoSync record started a sync (%d)", f)
	}
	w.Flush()
	if r := <-lazy2; r.Err != nil || r.Record.Seq != 3 {
		t.Fatalf("after Flush: %+v", r)
	}
	if f := w.Flushes(); f != 2 {
		t.Fatalf("%d syncs, want 2", f)
	}
}

// A Flush that finds nothing queued (its record is in the batch being
// written) forces nothing: the next NoSync record still waits for the Sync
// record after it, and the two go out in one sync.
func TestWriterFlushWithNothingQueuedForcesNothing(t *testing.T) {
	w, _, _ := openWriter(t, Options{})
	w.Flush()
	lazy := make(chan Result, 1)
	w.Append(entry("u", 1), NoSync, func(r Result) { lazy <- r })
	// Give a wrong writer time to flush the NoSync record alone; a right
	// one passes however long this is.
	time.Sleep(50 * time.Millisecond)
	if r := appendWait(t, w, entry("u", 2), Sync); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := <-lazy; r.Err != nil {
		t.Fatal(r.Err)
	}
	if f := w.Flushes(); f != 1 {
		t.Fatalf("a NoSync record and the Sync one after it took %d syncs, want 1", f)
	}
}

// A failed write answers its batch and everything queued with
// internal_error, closes Down, and every later Append is refused: the
// error is sticky.
func TestWriterFailedWriteIsStickyAndDown(t *testing.T) {
	w, l, dir := openWriter(t, Options{})
	if r := appendWait(t, w, entry("u", 1), Sync); r.Err != nil {
		t.Fatal(r.Err)
	}
	down := w.Down()
	w.hookWrite = func([]wal.Entry) ([]wal.Record, error) { return nil, errors.New("disk on fire") }
	if r := appendWait(t, w, entry("u", 2), Sync); r.Err == nil || r.Err.Code != messages.CodeInternalError {
		t.Fatalf("failed write answered %+v", r)
	}
	select {
	case <-down:
	case <-time.After(10 * time.Second):
		t.Fatal("Down not closed after a failed write")
	}
	if !w.IsDown() {
		t.Fatal("IsDown is false")
	}
	w.hookWrite = nil // the disk is fine again: still refused
	for _, d := range []Durability{Sync, NoSync} {
		if r := appendWait(t, w, entry("u", 3), d); r.Err == nil || r.Err.Code != messages.CodeInternalError {
			t.Fatalf("append after a failure answered %+v", r)
		}
	}
	if n := len(closeAndRead(t, w, l, dir)); n != 1 {
		t.Fatalf("%d records on disk, want 1", n)
	}
}

// A panic in the log is a failed write: the journal is stopped, not
// written again.
func TestWriterPanicInWriteFailsClosed(t *testing.T) {
	w, _, _ := openWriter(t, Options{})
	w.hookWrite = func([]wal.Entry) ([]wal.Record, error) { panic("boom") }
	if r := appendWait(t, w, entry("u", 1), Sync); r.Err == nil || r.Err.Code != messages.CodeInternalError {
		t.Fatalf("panicking write answered %+v", r)
	}
	w.hookWrite = nil
	if r := appendWait(t, w, entry("u", 2), Sync); r.Err == nil {
		t.Fatal("append after a panic was written")
	}
	if !w.IsDown() {
		t.Fatal("the journal is not down after a panic")
	}
}

// An entry the WAL refuses is refused alone: the records batched with it,
// and later ones, are written.
func TestWriterInvalidEntryIsRefusedAlone(t *testing.T) {
	w, l, dir := openWriter(t, Options{})
	g := hold(w, l)
	w.Append(entry("u", 0), Sync, nil)
	<-g.started
	answers := make([]chan Result, 10)
	for i := range answers {
		e := entry("u", i+1)
		if i == 4 {
			e.Payload = []byte(`not json`)
		}
		answers[i] = make(chan Result, 1)
		w.Append(e, Sync, func(r Result) { answers[i] <- r })
	}
	close(g.open)
	for i, ch := range answers {
		if r := <-ch; (i == 4) != (r.Err != nil) {
			t.Fatalf("entry %d: %+v", i, r)
		}
	}
	if r := appendWait(t, w, entry("u", 99), Sync); r.Err != nil {
		t.Fatalf("a later append: %v", r.Err)
	}
	if n := len(closeAndRead(t, w, l, dir)); n != 11 {
		t.Fatalf("%d records on disk, want 11", n)
	}
}

// Drain makes the NoSync records durable; Close writes what is queued and
// refuses every later Append.
func TestWriterDrainAndClose(t *testing.T) {
	w, l, dir := openWriter(t, Options{})
	answered := make(chan Result, 20)
	for i := range 20 {
		w.Append(entry("u", i), NoSync, func(r Result) { answered <- r })
	}
	if !w.Drain(20 * time.Second) {
		t.Fatal("drain did not finish")
	}
	if len(answered) != 20 {
		t.Fatalf("%d of 20 NoSync records answered after a drain", len(answered))
	}
	w.Append(entry("u", 20), NoSync, nil)
	w.Close()
	if r := appendWait(t, w, entry("u", 21), Sync); r.Err == nil {
		t.Fatal("append after Close accepted")
	}
	_ = l.Close()
	if n := len(onDisk(t, dir)); n != 21 {
		t.Fatalf("%d records on disk, want 21", n)
	}
}

// A durable batch is in the index before its writers are answered.
func TestWriterFillsTheIndexBeforeAnswering(t *testing.T) {
	x := NewIndex()
	w, _, _ := openWriter(t, Options{Index: x})
	e := entry("ann", 1)
	e.Type = uint16(messages.RecordKillSwitchOn)
	r := appendWait(t, w, e, Sync)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if p := x.Page("ann", 0, 10); len(p.Entries) != 1 || p.Entries[0].Seq != r.Record.Seq {
		t.Fatalf("index after the answer: %+v", p)
	}
}

// A flush that has run longer than Timeout marks the journal down, and
// every waiter wakes.
func TestHungFlushMarksTheJournalDown(t *testing.T) {
	var h health
	h.init()
	stop := make(chan struct{})
	defer close(stop)
	waiters := []<-chan struct{}{h.Down(), h.Down(), h.Down()}
	h.flushStart.Store(time.Now().Add(-Timeout - time.Second).UnixNano())
	go h.watch(stop, time.Now, slog.New(slog.DiscardHandler))
	for _, w := range waiters {
		select {
		case <-w:
		case <-time.After(5 * time.Second):
			t.Fatal("a hung flush did not mark the journal down")
		}
	}
	if !h.IsDown() {
		t.Fatal("IsDown is false")
	}
	// A flush in time does not.
	var ok health
	ok.init()
	ok.flushStart.Store(time.Now().UnixNano())
	go ok.watch(stop, time.Now, slog.New(slog.DiscardHandler))
	time.Sleep(1500 * time.Millisecond)
	if ok.IsDown() {
		t.Fatal("a flush in time marked the journal down")
	}
}

// A Drain waits for the NoSync records appended while it waits, and makes
// them durable too, without a Sync record.
func TestWriterDrainTakesNoSyncRecordsAppendedMeanwhile(t *testing.T) {
	w, l, dir := openWriter(t, Options{})
	g := hold(w, l)
	w.Append(entry("u", 1), NoSync, nil)
	drained := make(chan bool, 1)
	go func() { drained <- w.Drain(5 * time.Second) }()
	<-g.started // the drain forced the first record out; its write is held
	w.Append(entry("u", 2), NoSync, nil)
	close(g.open)
	if !<-drained {
		t.Fatal("the drain did not finish: the record appended meanwhile was left waiting for a sync")
	}
	if n := len(closeAndRead(t, w, l, dir)); n != 2 {
		t.Fatalf("%d records on disk, want 2", n)
	}
}
