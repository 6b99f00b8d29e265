package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// lastSegWalk is the fixture's last segment and a modeOpen walker primed
// with every segment before it, so a test can walk damaged copies of the
// last segment in memory as Open would.
type lastSegWalk struct {
	primed   walker
	seg      segFile
	pristine []byte
}

func newLastSegWalk(t *testing.T, f *fixture) *lastSegWalk {
	t.Helper()
	segs, _, err := listSegments(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	primed := newWalker(modeOpen, nil)
	for _, s := range segs[:len(segs)-1] {
		data, _ := os.ReadFile(s.path)
		if err := primed.walkSegment(s, data, false); err != nil {
			t.Fatal(err)
		}
	}
	last := segs[len(segs)-1]
	pristine, err := os.ReadFile(last.path)
	if err != nil {
		t.Fatal(err)
	}
	if e := f.entry(fixtureRecords); e.seg != last.name || e.end != len(pristine) {
		t.Fatal("the last record does not end the last segment")
	}
	return &lastSegWalk{primed: *primed, seg: last, pristine: pristine}
}

// walk walks data as the last segment; it returns the walk error and the
// tail Open would cut (nil if none).
func (l *lastSegWalk) walk(data []byte) (*tailDamage, error) {
	w := l.primed
	err := w.walkSegment(l.seg, data, true)
	return w.tail, err
}

// wantRefused fails unless the walk of data is a DamageError at seq in the
// last segment with nothing marked for a cut.
func (l *lastSegWalk) wantRefused(t *testing.T, data []byte, seq uint64, where string) {
	t.Helper()
	tail, err := l.walk(data)
	var de *DamageError
	if !errors.As(err, &de) || de.Seq != seq || de.Segment != l.seg.name || tail != nil {
		t.Fatalf("%s: walk = %v, tail %+v; want damage at seq %d", where, err, tail, seq)
	}
}

// wantCut fails unless the walk of data marks everything from off on for a
// cut, with reason.
func (l *lastSegWalk) wantCut(t *testing.T, data []byte, off int, reason, where string) {
	t.Helper()
	tail, err := l.walk(data)
	if err != nil || tail == nil || tail.off != off || tail.reason != reason {
		t.Fatalf("%s: walk = %v, tail %+v; want a %q cut at offset %d", where, err, tail, reason, off)
	}
}

// TestTailReproModes replays the damage of a review on real files: an
// acknowledged last record (or the last two) damaged so that the old rule
// took it for a torn write and cut it. Open must refuse each, naming the
// first damaged record, change nothing, and Verify must not call it a torn
// tail or trailing garbage.
func TestTailReproModes(t *testing.T) {
	n := uint64(fixtureRecords)
	for _, tc := range []struct {
		name    string
		damage  func(b []byte, last, prev rawEntry)
		seq     uint64
		lastGen uint64 // records OnRecord may see before the refusal
	}{
		{"seq and prev_hash each one bit flipped", func(b []byte, e, _ rawEntry) {
			f := e.end - len(e.frame)
			b[f+offSeq+7] ^= 0x01
			b[f+offPrev+5] ^= 0x80
		}, n, n - 1},
		{"seq and prev_hash zeroed in one burst", func(b []byte, e, _ rawEntry) {
			f := e.end - len(e.frame)
			clear(b[f+offSeq : f+fixedLen])
		}, n, n - 1},
		{"length prefix and header zeroed", func(b []byte, e, _ rawEntry) {
			clear(b[e.start : e.end-len(e.frame)+fixedLen])
		}, n, n - 1},
		{"two records: the first one's header, the second's seq and prev_hash zeroed", func(b []byte, e, p rawEntry) {
			clear(b[p.start : p.end-len(p.frame)+fixedLen])
			f := e.end - len(e.frame)
			clear(b[f+offSeq : f+fixedLen])
		}, n - 1, n - 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.segOf(n)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(b, f.entry(n), f.entry(n-1))
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			before := dirBytes(t, f.dir)
			var seen uint64
			l, rec, err := Open(f.dir, Options{SegmentSize: smallSeg, OnRecord: func(Record) error { seen++; return nil }})
			if err == nil {
				l.Close()
				t.Fatalf("Open cut acknowledged records: %+v", rec)
			}
			var de *DamageError
			if !errors.As(err, &de) || de.Seq != tc.seq || de.Segment != base(p) {
				t.Fatalf("Open = %v, want damage at seq %d in %s", err, tc.seq, base(p))
			}
			if seen != tc.lastGen {
				t.Fatalf("OnRecord saw %d records before the refusal, want %d", seen, tc.lastGen)
			}
			if !reflect.DeepEqual(dirBytes(t, f.dir), before) {
				t.Fatal("a refused Open changed the journal")
			}
			res, err := Verify(f.dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() || hasProblem(res.Problems, ReasonTornTail, 0) || hasProblem(res.Problems, ReasonTrailingGarbage, 0) {
				t.Fatalf("Verify = %v, want damage that is not a torn tail", res.Problems)
			}
			if !hasProblem(res.Problems, "", tc.seq) {
				t.Fatalf("Verify = %v, want a problem at seq %d", res.Problems, tc.seq)
			}
		})
	}
}

// TestZeroBurstsOverTheTail zeroes every run of bytes (every length at
// every offset) inside the last two records, which one batch wrote. Only a
// run that zeroes everything from the start of a record to the end of the
// file looks like zero fill and is cut (that record, and any after it, are
// gone without a trace; the checkpoint exposes it). Every other burst
// leaves a complete entry that fails to decode, or an intact frame after
// the damage, and is refused at the first record it touches.
func TestZeroBurstsOverTheTail(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	l := newLastSegWalk(t, f)
	prev, last := f.entry(n-1), f.entry(n)
	if prev.seg != last.seg || prev.end != last.start {
		t.Fatal("the last two records are not adjacent in the last segment")
	}
	data := make([]byte, len(l.pristine))
	refused, cut, same := 0, 0, 0
	for from := prev.start; from < last.end; from++ {
		for to := from + 1; to <= last.end; to++ {
			copy(data, l.pristine)
			clear(data[from:to])
			where := fmt.Sprintf("zeros over [%d,%d) of a segment of %d bytes (records at %d and %d)", from, to, len(data), prev.start, last.start)
			switch {
			case string(data) == string(l.pristine):
				// Only bytes that were zero already.
				same++
			case to == last.end && (from == prev.start || from == last.start):
				l.wantCut(t, data, from, ReasonTrailingGarbage, where)
				cut++
			case from < last.start:
				l.wantRefused(t, data, n-1, where)
				refused++
			default:
				l.wantRefused(t, data, n, where)
				refused++
			}
		}
	}
	if cut != 2 || refused < 50000 {
		t.Fatalf("%d refused, %d cut", refused, cut)
	}
	t.Logf("%d zero bursts refused, %d cut (all zero to the end), %d changed nothing", refused, cut, same)
}

// TestBothFieldsDamaged damages the last record's seq and its prev_hash at
// once, every byte of one with every byte of the other: the complete
// entry fails its CRC and is refused, although it names neither the
// expected seq nor the expected prev_hash.
func TestBothFieldsDamaged(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	l := newLastSegWalk(t, f)
	e := f.entry(n)
	fr := e.end - len(e.frame)
	data := make([]byte, len(l.pristine))
	cases := 0
	for i := offSeq; i < offSeq+8; i++ {
		for j := offPrev; j < offPrev+hashLen; j++ {
			for _, mask := range flipMasks {
				copy(data, l.pristine)
				data[fr+i] ^= mask
				data[fr+j] ^= mask
				l.wantRefused(t, data, n, fmt.Sprintf("frame bytes %d and %d ^ %#02x", i, j, mask))
				cases++
			}
		}
	}
	t.Logf("%d records with both seq and prev_hash damaged refused", cases)
}

// TestTornBatchAtEveryLength cuts the last batch (several records written
// by one Append) at every length: the records that made it whole are kept,
// the partial one is cut.
func TestTornBatchAtEveryLength(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	l := newLastSegWalk(t, f)
	first := n - 2
	for seq := first; seq <= n; seq++ {
		if f.entry(seq).seg != l.seg.name {
			t.Fatalf("seq %d is not in the last segment", seq)
		}
	}
	cases := 0
	for size := f.entry(first).start + 1; size < len(l.pristine); size++ {
		// The record cut and the last whole one.
		seq := first
		for f.entry(seq).end <= size {
			seq++
		}
		start := f.entry(seq).start
		if size == start {
			continue // a clean cut at a boundary: nothing to repair
		}
		w := l.primed
		err := w.walkSegment(l.seg, l.pristine[:size], true)
		if err != nil || w.tail == nil || w.tail.off != start || w.tail.reason != ReasonTornTail || w.lastSeq != seq-1 {
			t.Fatalf("batch cut to %d bytes (record %d at %d): walk = %v, tail %+v, last seq %d", size, seq, start, err, w.tail, w.lastSeq)
		}
		cases++
	}
	t.Logf("%d torn batches repaired", cases)
}

// TestTornAndDamaged: a torn last entry whose bytes were also damaged is
// two faults, and refused. The entry is cut one byte short of its end, so
// the hash and three CRC bytes are there: every byte before them is
// covered by the hash, and each is damaged in every way.
func TestTornAndDamaged(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	l := newLastSegWalk(t, f)
	e := f.entry(n)
	size := e.end - 1
	torn := l.pristine[:size]
	l.wantCut(t, torn, e.start, ReasonTornTail, "undamaged")
	data := make([]byte, size)
	cases := 0
	for off := e.start; off < size; off++ {
		for mask := 1; mask < 256; mask++ {
			copy(data, torn)
			data[off] ^= byte(mask)
			l.wantRefused(t, data, n, fmt.Sprintf("torn entry, byte %d ^ %#02x", off-e.start, mask))
			cases++
		}
	}
	// Cut inside the header, a wrong version, seq or prev_hash byte is
	// enough to refuse.
	fr := e.end - len(e.frame)
	for _, off := range []int{offVersion, offSeq + 7, offPrev, offPrev + 31} {
		cut := fr + off + 1
		copy(data, l.pristine[:cut])
		data[fr+off] ^= 0x01
		l.wantRefused(t, data[:cut], n, fmt.Sprintf("entry cut after frame byte %d, which is damaged", off))
	}
	t.Logf("%d damaged torn entries refused", cases)
}

// TestTornTailOnDisk: a torn batch repairs through Open on real files, and
// a torn entry that does not continue the chain (a stale record written
// again at the end) is refused.
func TestTornTailOnDisk(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	p := f.segOf(n)
	stale := f.entry(n - 3)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Record n-3's entry again, cut short, after the last record.
	appendBytes(t, p, raw[stale.start:stale.end-5])
	before := dirBytes(t, f.dir)
	l, rec, err := Open(f.dir, Options{SegmentSize: smallSeg})
	var de *DamageError
	if err == nil {
		l.Close()
		t.Fatalf("Open cut a stale entry: %+v", rec)
	}
	if !errors.As(err, &de) || de.Seq != n+1 || de.Reason != ReasonCorrupt {
		t.Fatalf("Open = %v, want a corrupt record at seq %d", err, n+1)
	}
	if !reflect.DeepEqual(dirBytes(t, f.dir), before) {
		t.Fatal("a refused Open changed the journal")
	}

	// The genuine torn write repairs: the last two records, cut mid-way
	// through the second.
	truncate(t, p, f.entry(n).start+40)
	l, rec, err = Open(f.dir, Options{SegmentSize: smallSeg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !rec.TornTail || rec.Reason != ReasonTornTail || rec.LastGoodSeq != n-1 || rec.DroppedBytes != 40 {
		t.Fatalf("recovery %+v", rec)
	}
	if fi, err := os.Stat(filepath.Join(f.dir, rec.Segment)); err != nil || fi.Size() != int64(f.entry(n).start) {
		t.Fatalf("segment after repair: %v", err)
	}
}
