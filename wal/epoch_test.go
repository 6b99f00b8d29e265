package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ownerType stands for the shard_owner record type (messages, which wal
// does not import).
const ownerType = 70

// fenced writes one owner's turn into dir: an owner record then n other
// records, all with epoch. A Log opened with a lower epoch than the
// chain's is refused, so an interleaving (a stale owner writing after a
// newer one) is made by changing the open Log's epoch behind Open's
// back, as a paused process holding the journal open would write.
func fenced(t *testing.T, l *Log, epoch uint64, owner bool, n int) {
	t.Helper()
	l.epoch = epoch
	var es []Entry
	if owner {
		es = append(es, Entry{Type: ownerType, Actor: "system:server", Payload: []byte(`{"shard":3}`)})
	}
	for i := range n {
		es = append(es, testEntry(i))
	}
	recs, err := l.Append(es)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Epoch != epoch {
			t.Fatalf("appended record %d has epoch %d, want %d", r.Seq, r.Epoch, epoch)
		}
	}
}

func openEpoch(t *testing.T, dir string, epoch uint64) *Log {
	t.Helper()
	l, _, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock(), Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func verifyOwners(t *testing.T, dir string) VerifyResult {
	t.Helper()
	res, err := VerifyWith(dir, VerifyOptions{OwnerType: ownerType})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A clean handover: owner 5 writes, closes; owner 9 opens, replays the
// chain with each record's epoch, and writes on. It verifies, and every
// record reads back with its writer's epoch.
func TestEpochHandoverVerifies(t *testing.T) {
	dir := t.TempDir()
	a := openEpoch(t, dir, 5)
	fenced(t, a, 5, true, 3)
	a.Close()
	var epochs []uint64
	b, _, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock(), Epoch: 9, OnRecord: func(r Record) error {
		epochs = append(epochs, r.Epoch)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{5, 5, 5, 5}; !equalU64(epochs, want) {
		t.Fatalf("replayed epochs %v, want %v", epochs, want)
	}
	fenced(t, b, 9, true, 2)
	b.Close()
	res := verifyOwners(t, dir)
	if !res.OK() || res.Records != 7 {
		t.Fatalf("clean handover: %d records, problems %v", res.Records, res.Problems)
	}
	epochs = nil
	if err := Scan(dir, func(r Record) error { epochs = append(epochs, r.Epoch); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{5, 5, 5, 5, 9, 9, 9}; !equalU64(epochs, want) {
		t.Fatalf("scanned epochs %v, want %v", epochs, want)
	}
	var out bytes.Buffer
	if err := Dump(&out, dir, DumpOptions{Format: "jsonl"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte(`"epoch":9}`)) {
		t.Fatalf("dump does not show the epoch:\n%s", out.String())
	}
}

// A stale owner cannot open a chain a newer owner has written to.
func TestStaleEpochRefusedAtOpen(t *testing.T) {
	dir := t.TempDir()
	b := openEpoch(t, dir, 9)
	fenced(t, b, 9, true, 1)
	b.Close()
	before := dirBytes(t, dir)
	if _, _, err := Open(dir, Options{Epoch: 5}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("open with an older epoch: %v, want ErrStaleEpoch", err)
	}
	if after := dirBytes(t, dir); !equalDirs(before, after) {
		t.Fatal("a refused open changed the journal")
	}
	if l, _, err := Open(dir, Options{Epoch: 9}); err != nil {
		t.Fatalf("the same owner reopening: %v", err)
	} else {
		l.Close()
	}
}

// Two owners writing at once: each interleaving is reported at the seq of
// its first bad record, and the chain itself is intact (only the epochs
// show it).
func TestTwoOwnersAtOnceReported(t *testing.T) {
	cases := []struct {
		name   string
		write  func(t *testing.T, l *Log)
		seq    uint64
		reason string
	}{
		{"older owner's record after a newer owner record", func(t *testing.T, l *Log) {
			fenced(t, l, 5, true, 2) // 1..3
			fenced(t, l, 9, true, 1) // 4..5
			fenced(t, l, 5, false, 1)
		}, 6, ReasonEpochDown},
		{"owner epoch goes down", func(t *testing.T, l *Log) {
			fenced(t, l, 9, true, 1) // 1..2
			fenced(t, l, 5, true, 1)
		}, 3, ReasonEpochDown},
		{"record without epoch after fenced ones", func(t *testing.T, l *Log) {
			fenced(t, l, 5, true, 1) // 1..2
			l.epoch = 0
			if _, err := l.Append([]Entry{testEntry(0)}); err != nil {
				t.Fatal(err)
			}
		}, 3, ReasonEpochDown},
		{"a new epoch with no owner record", func(t *testing.T, l *Log) {
			fenced(t, l, 5, true, 2)  // 1..3
			fenced(t, l, 7, false, 1) // 4
		}, 4, ReasonEpochUnowned},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openEpoch(t, dir, 1)
			c.write(t, l)
			l.Close()
			res := verifyOwners(t, dir)
			if len(res.Problems) == 0 {
				t.Fatal("an interleaving of two owners verified clean")
			}
			p := res.Problems[0]
			if p.Seq != c.seq || p.Reason != c.reason {
				t.Fatalf("first problem: seq %d %q, want seq %d %q (all: %v)", p.Seq, p.Reason, c.seq, c.reason, res.Problems)
			}
			for _, p := range res.Problems {
				if p.Reason != ReasonEpochDown && p.Reason != ReasonEpochUnowned {
					t.Fatalf("the chain itself should be intact: %v", res.Problems)
				}
			}
			// Plain Verify (no owner type) still sees epochs going down.
			plain, err := Verify(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if c.reason == ReasonEpochDown && (len(plain.Problems) == 0 || plain.Problems[0].Seq != c.seq) {
				t.Fatalf("Verify without an owner type: %v", plain.Problems)
			}
		})
	}
}

// A local journal (no epoch) is written in version 1 frames exactly as
// before, has no owner record, and verifies with the owner check on.
func TestLocalJournalUnchanged(t *testing.T) {
	dir := t.TempDir()
	recs := writeJournal(t, dir, 20, 4)
	for _, r := range recs {
		if r.Epoch != 0 {
			t.Fatalf("local record %d has epoch %d", r.Seq, r.Epoch)
		}
	}
	for _, e := range allEntries(t, dir) {
		if e.frame[0] != Version {
			t.Fatalf("local journal wrote version %d", e.frame[0])
		}
	}
	if res := verifyOwners(t, dir); !res.OK() || res.Records != 20 {
		t.Fatalf("local journal: %d records, %v", res.Records, res.Problems)
	}
}

// A torn last record of a fenced journal is cut at open like a local
// one, wherever it was cut: in the fixed part, in the epoch, in a field.
func TestEpochTornTailIsCut(t *testing.T) {
	for _, into := range []int{30, 55, 62, 75} {
		dir := t.TempDir()
		l := openEpoch(t, dir, 5)
		fenced(t, l, 5, true, 3)
		l.Close()
		segs := segPaths(t, dir)
		last := segs[len(segs)-1]
		data, err := os.ReadFile(last)
		if err != nil {
			t.Fatal(err)
		}
		entries := readEntries(t, last)
		e := entries[len(entries)-1]
		frameStart := e.end - len(e.frame)
		if err := os.WriteFile(last, data[:frameStart+into], 0o600); err != nil {
			t.Fatal(err)
		}
		l2, rec, err := Open(dir, Options{Epoch: 5})
		if err != nil {
			t.Fatalf("cut %d bytes into the frame: %v", into, err)
		}
		l2.Close()
		if !rec.TornTail || rec.LastGoodSeq != 3 {
			t.Fatalf("cut %d bytes into the frame: recovery %+v, want a torn tail cut after seq 3", into, rec)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(last)+".broken")); err != nil {
			t.Fatal(err)
		}
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalDirs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
