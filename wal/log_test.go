package wal

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	twal "github.com/tidwall/wal"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l, rec, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	if rec.TornTail || rec.LastGoodSeq != 0 {
		t.Fatalf("fresh journal recovery = %+v", rec)
	}
	if seq, h := l.Head(); seq != 0 || h != genesis {
		t.Fatalf("empty head = %d:%x, want 0:genesis", seq, h)
	}

	var want []Record
	i := 0
	for _, n := range []int{1, 3, 8, 1, 64, 20, 2} { // crosses several segments
		var es []Entry
		for j := 0; j < n; j++ {
			es = append(es, testEntry(i))
			i++
		}
		recs, err := l.Append(es)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n {
			t.Fatalf("Append(%d) returned %d records", n, len(recs))
		}
		want = append(want, recs...)
	}
	if len(segPaths(t, dir)) < 3 {
		t.Fatalf("want several segments, got %d", len(segPaths(t, dir)))
	}
	// Seqs are contiguous from 1 and hashes chain from genesis.
	prev := genesis
	for k, r := range want {
		if r.Seq != uint64(k+1) {
			t.Fatalf("record %d has seq %d", k, r.Seq)
		}
		if r.PrevHash != prev {
			t.Fatalf("seq %d: prev_hash does not link", r.Seq)
		}
		frame, sum := encodeRecord(r)
		if sum != r.Hash {
			t.Fatalf("seq %d: hash is not the hash of its frame", r.Seq)
		}
		_ = frame
		e := testEntry(k)
		if r.User != e.User || r.Actor != e.Actor || r.Channel != e.Channel || r.Type != e.Type ||
			string(r.Payload) != string(e.Payload) || !r.Time.Equal(e.Time) || r.Time.Location().String() != "UTC" {
			t.Fatalf("seq %d: record %+v does not match entry %+v", r.Seq, r, e)
		}
		prev = r.Hash
	}
	headSeq, headHash := l.Head()
	if headSeq != uint64(len(want)) || headHash != want[len(want)-1].Hash {
		t.Fatal("Head is not the last record")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := l.Append([]Entry{testEntry(0)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}

	// Every acknowledged record comes back, identical, in order.
	var got []Record
	l2, rec, err := Open(dir, Options{SegmentSize: smallSeg, OnRecord: func(r Record) error {
		got = append(got, r)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("OnRecord saw %d records, different from the %d appended", len(got), len(want))
	}
	if rec.TornTail || rec.LastGoodSeq != headSeq {
		t.Fatalf("recovery = %+v", rec)
	}
	if s, h := l2.Head(); s != headSeq || h != headHash {
		t.Fatal("Head after reopen differs")
	}
	// Appending continues the chain.
	more, err := l2.Append([]Entry{testEntry(i)})
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Seq != headSeq+1 || more[0].PrevHash != headHash {
		t.Fatal("append after reopen does not continue the chain")
	}
	l2.Close()

	// Scan and Verify agree.
	var scanned []Record
	if err := Scan(dir, func(r Record) error { scanned = append(scanned, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(scanned, append(want, more...)) {
		t.Fatal("Scan differs from what was appended")
	}
	res, err := Verify(dir, Head{Seq: headSeq, Hash: headHash}.String())
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Records != headSeq+1 || res.Head != (Head{Seq: more[0].Seq, Hash: more[0].Hash}) {
		t.Fatalf("Verify = %+v", res)
	}
}

// TestAckedRecordsSurviveWithoutClose: what Append returned is on disk
// before any Close. The files are copied while the Log is still open (no
// Close, no final fsync), as a crash would leave them.
func TestAckedRecordsSurviveWithoutClose(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var acked []Record
	for i := 0; i < 50; i += 5 {
		var es []Entry
		for j := i; j < i+5; j++ {
			es = append(es, testEntry(j))
		}
		recs, err := l.Append(es)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, recs...)

		crashed := copyDir(t, dir)
		var got []Record
		l2, rec, err := Open(crashed, Options{SegmentSize: smallSeg, OnRecord: func(r Record) error {
			got = append(got, r)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if rec.TornTail {
			t.Fatalf("clean copy reported a torn tail: %+v", rec)
		}
		if !reflect.DeepEqual(got, acked) {
			t.Fatalf("after %d acked records, reopen saw %d", len(acked), len(got))
		}
		l2.Close()
	}
}

func TestOnRecordErrorStopsOpen(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, 10, 10)
	boom := errors.New("boom")
	n := 0
	_, _, err := Open(dir, Options{OnRecord: func(r Record) error {
		n++
		if r.Seq == 4 {
			return boom
		}
		return nil
	}})
	if !errors.Is(err, boom) || n != 4 {
		t.Fatalf("Open = %v after %d records, want boom after 4", err, n)
	}
}

func TestDefaultsAndEmptyPayload(t *testing.T) {
	dir := t.TempDir() + "/new/journal" // Open creates missing directories
	l, _, err := Open(dir, Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.segSize != DefaultSegmentSize {
		t.Fatalf("segment size %d", l.segSize)
	}
	recs, err := l.Append([]Entry{{Type: 9, User: "u", Actor: "cli:user"}, {Type: 9, User: "u", Actor: "cli:user"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(recs[0].Payload) != "{}" {
		t.Fatalf("empty payload stored as %q", recs[0].Payload)
	}
	// A zero Time takes Options.Now, once per batch.
	if !recs[0].Time.Equal(t0.Add(1e6)) || !recs[1].Time.Equal(recs[0].Time) {
		t.Fatalf("times %v %v", recs[0].Time, recs[1].Time)
	}
	if recs, err := l.Append(nil); recs != nil || err != nil {
		t.Fatal("empty Append did something")
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != dirPerm {
		t.Fatalf("dir mode %v, %v", fi.Mode(), err)
	}
}

func TestInvalidEntryIsNotSticky(t *testing.T) {
	l, _, err := Open(t.TempDir(), Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		name string
		e    Entry
	}{
		{"payload not JSON", Entry{Payload: []byte(`{"a":`)}},
		{"user too long", Entry{User: strings.Repeat("u", MaxFieldLen+1)}},
		{"actor not UTF-8", Entry{Actor: "\xff"}},
		{"payload too long", Entry{Payload: []byte(`"` + strings.Repeat("p", MaxPayloadLen) + `"`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Append([]Entry{testEntry(0), tc.e})
			if !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("err = %v, want ErrInvalidEntry", err)
			}
			if seq, _ := l.Head(); seq != 0 {
				t.Fatal("a refused batch was partly written")
			}
		})
	}
	if _, err := l.Append([]Entry{testEntry(0)}); err != nil {
		t.Fatalf("valid Append after invalid ones: %v", err)
	}
}

// TestStickyError: after a failed write, every Append fails with the same
// error, even once the cause is gone, and nothing is retried.
func TestStickyError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(l *Log) (heal func())
	}{
		{"write batch fails", func(l *Log) func() {
			l.hookWriteBatch = func(*twal.Batch) error { return errors.New("injected: no space left on device") }
			return func() { l.hookWriteBatch = nil }
		}},
		{"underlying file closed", func(l *Log) func() {
			// A real failure: tidwall/wal refuses to write.
			l.w.Close()
			return func() {}
		}},
		{"directory fsync fails after rotation", func(l *Log) func() {
			l.hookSyncDir = func(string) error { return errors.New("injected: EIO") }
			l.tailBytes = l.segSize + 1 // the next batch rotates
			return func() { l.hookSyncDir = nil }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock()})
			if err != nil {
				t.Fatal(err)
			}
			good, err := l.Append([]Entry{testEntry(0), testEntry(1)})
			if err != nil {
				t.Fatal(err)
			}
			heal := tc.inject(l)
			_, err1 := l.Append([]Entry{testEntry(2)})
			if !errors.Is(err1, ErrFailed) {
				t.Fatalf("Append after failure = %v, want ErrFailed", err1)
			}
			if l.Err() != err1 {
				t.Fatal("Err() is not the sticky error")
			}
			heal()
			calls := 0
			l.hookWriteBatch = func(b *twal.Batch) error { calls++; return l.w.WriteBatch(b) }
			_, err2 := l.Append([]Entry{testEntry(3)})
			if err2 != err1 || calls != 0 {
				t.Fatalf("second Append = %v (write called %d times), want the same error %v and no write", err2, calls, err1)
			}
			if seq, h := l.Head(); seq != 2 || h != good[1].Hash {
				t.Fatal("Head moved after a failed Append")
			}
			l.Close()
			// What was acknowledged is there; the journal opens.
			var seqs []uint64
			if _, _, err := Open(dir, Options{OnRecord: func(r Record) error { seqs = append(seqs, r.Seq); return nil }}); err != nil {
				t.Fatal(err)
			}
			if len(seqs) < 2 || seqs[0] != 1 || seqs[1] != 2 {
				t.Fatalf("after reopen: %v", seqs)
			}
		})
	}
}

// TestRotationSyncsDir checks the mirror of tidwall/wal's rotation rule:
// every Append that created a segment file fsynced the directory.
func TestRotationSyncsDir(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{SegmentSize: 1500, Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	syncs := 0
	l.hookSyncDir = func(d string) error { syncs++; return syncDir(d) }
	i := 0
	rotations := 0
	for _, n := range []int{1, 1, 2, 5, 1, 9, 3, 1, 1, 1, 17, 1, 4, 30, 1} {
		before := len(segPaths(t, dir))
		syncs = 0
		var es []Entry
		for j := 0; j < n; j++ {
			es = append(es, testEntry(i))
			i++
		}
		if _, err := l.Append(es); err != nil {
			t.Fatal(err)
		}
		created := len(segPaths(t, dir)) > before
		if created {
			rotations++
			if syncs == 0 {
				t.Fatalf("batch of %d created a segment without a directory fsync", n)
			}
		} else if syncs != 0 {
			t.Fatalf("batch of %d fsynced the directory without rotating", n)
		}
	}
	if rotations < 3 {
		t.Fatalf("only %d rotations; test too weak", rotations)
	}
}

// TestRotationAtExactBoundary: tidwall/wal cycles when the tail reaches
// SegmentSize exactly (>=), and when a batch starts over it (>). Both must
// fsync the directory.
func TestRotationAtExactBoundary(t *testing.T) {
	entrySize := func(e Entry) int {
		n := frameLen(0, e.User, e.Actor, e.Channel, e.Payload)
		return uvarintLen(uint64(n)) + n
	}
	for _, k := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("after %d entries", k), func(t *testing.T) {
			size := 0
			var es []Entry
			for i := 0; i < k; i++ {
				es = append(es, testEntry(i))
				size += entrySize(testEntry(i))
			}
			dir := t.TempDir()
			l, _, err := Open(dir, Options{SegmentSize: size})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			syncs := 0
			l.hookSyncDir = func(d string) error { syncs++; return syncDir(d) }
			if _, err := l.Append(es); err != nil {
				t.Fatal(err)
			}
			if n := len(segPaths(t, dir)); n != 2 || syncs != 1 {
				t.Fatalf("%d segments, %d directory fsyncs; want 2 and 1", n, syncs)
			}
		})
	}
	// Reopened over a segment larger than the new SegmentSize: the first
	// batch rotates before writing.
	dir := t.TempDir()
	writeJournal(t, dir, 3, 3) // one segment of ~700 bytes
	l, _, err := Open(dir, Options{SegmentSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	syncs := 0
	l.hookSyncDir = func(d string) error { syncs++; return syncDir(d) }
	for i := 0; i < 4; i++ {
		before := len(segPaths(t, dir))
		syncs = 0
		if _, err := l.Append([]Entry{{Type: 1, User: "u", Actor: "a"}}); err != nil {
			t.Fatal(err)
		}
		created := len(segPaths(t, dir)) > before
		if created != (syncs > 0) || (i == 0 && !created) {
			t.Fatalf("append %d: segment created %v, directory fsyncs %d", i, created, syncs)
		}
	}
}
