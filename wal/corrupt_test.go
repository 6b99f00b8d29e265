package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fixture is a closed journal of n records over several segments, with
// the records Append returned and the raw entries on disk.
type fixture struct {
	dir  string
	recs []Record
	ents []rawEntry // in seq order; ents[i] holds seq i+1
	segs []string   // segment paths
}

const fixtureRecords = 70

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	recs := writeJournal(t, dir, fixtureRecords, 7)
	f := &fixture{dir: dir, recs: recs, ents: allEntries(t, dir), segs: segPaths(t, dir)}
	if len(f.segs) < 3 {
		t.Fatalf("fixture has %d segments, want >= 3", len(f.segs))
	}
	if len(f.ents) != fixtureRecords {
		t.Fatalf("fixture has %d entries", len(f.ents))
	}
	if n := len(readEntries(t, f.segs[len(f.segs)-1])); n < 4 {
		t.Fatalf("last segment has %d entries, want >= 4", n)
	}
	return f
}

// entry returns the raw entry of seq.
func (f *fixture) entry(seq uint64) rawEntry { return f.ents[seq-1] }

// segOf returns the path of the segment holding seq.
func (f *fixture) segOf(seq uint64) string { return filepath.Join(f.dir, f.entry(seq).seg) }

// lastSeg returns the last segment's path and its entries.
func (f *fixture) lastSeg(t *testing.T) (string, []rawEntry) {
	p := f.segs[len(f.segs)-1]
	return p, readEntries(t, p)
}

// rewrite replaces the entries of the segment at path with frames.
func (f *fixture) rewrite(t *testing.T, path string, edit func(frames [][]byte) [][]byte) {
	t.Helper()
	var frames [][]byte
	for _, e := range readEntries(t, path) {
		frames = append(frames, append([]byte(nil), e.frame...))
	}
	writeEntries(t, path, edit(frames))
}

// flip xors one byte of a file.
func flip(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x5a
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.Truncate(path, int64(size)); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func base(p string) string { return filepath.Base(p) }

// idxOf returns the index in frames of the record with seq.
func idxOf(t *testing.T, frames [][]byte, seq uint64) int {
	for i, fr := range frames {
		if binary.BigEndian.Uint64(fr[offSeq:]) == seq {
			return i
		}
	}
	t.Fatalf("seq %d not in segment", seq)
	return -1
}

// refusal is what a refused Open must report.
type refusal struct {
	seg    func(f *fixture) string // segment base name
	seq    uint64
	reason string // "" accepts any reason
}

// repair is what a repairing Open must report.
type repair struct {
	lastGood uint64
	reason   string // ReasonTornTail or ReasonTrailingGarbage; "" accepts either
	dropped  int64  // -1 skips the check
}

func TestCorruption(t *testing.T) {
	lastSegName := func(f *fixture) string { return base(f.segs[len(f.segs)-1]) }
	segName := func(i int) func(f *fixture) string { return func(f *fixture) string { return base(f.segs[i]) } }
	n := uint64(fixtureRecords)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, f *fixture)
		refuse *refusal
		repair *repair
		// verify lists reasons Verify must report, each at the given seq.
		verify map[string]uint64
		// notVerify lists reasons Verify must not report.
		notVerify []string
	}{
		{
			name:   "flip a byte in an older segment",
			damage: func(t *testing.T, f *fixture) { flip(t, f.segOf(5), f.entry(5).end-40) },
			refuse: &refusal{segName(0), 5, ReasonCRCMismatch},
			verify: map[string]uint64{ReasonCRCMismatch: 5},
		},
		{
			name: "delete a record",
			damage: func(t *testing.T, f *fixture) {
				f.rewrite(t, f.segOf(5), func(fr [][]byte) [][]byte { i := idxOf(t, fr, 5); return slices.Delete(fr, i, i+1) })
			},
			refuse: &refusal{segName(0), 5, ReasonMissing},
			verify: map[string]uint64{ReasonMissing: 5},
		},
		{
			name: "swap two records",
			damage: func(t *testing.T, f *fixture) {
				f.rewrite(t, f.segOf(5), func(fr [][]byte) [][]byte {
					i := idxOf(t, fr, 5)
					fr[i], fr[i+1] = fr[i+1], fr[i]
					return fr
				})
			},
			refuse:    &refusal{segName(0), 5, ""},
			verify:    map[string]uint64{ReasonOutOfOrder: 5},
			notVerify: []string{ReasonMissing},
		},
		{
			name: "insert a copy of a record",
			damage: func(t *testing.T, f *fixture) {
				f.rewrite(t, f.segOf(7), func(fr [][]byte) [][]byte { i := idxOf(t, fr, 7); return slices.Insert(fr, i+1, fr[i]) })
			},
			refuse: &refusal{segName(0), 7, ReasonOutOfOrder},
			verify: map[string]uint64{ReasonOutOfOrder: 7},
		},
		{
			name: "alter a record and redo its crc",
			damage: func(t *testing.T, f *fixture) {
				f.rewrite(t, f.segOf(7), func(fr [][]byte) [][]byte {
					fr[idxOf(t, fr, 7)][fixedLen+3] ^= 1 // a byte of the user
					reseal(t, fr[idxOf(t, fr, 7)], true)
					return fr
				})
			},
			refuse: &refusal{segName(0), 7, ReasonHashMismatch},
			verify: map[string]uint64{ReasonHashMismatch: 7},
		},
		{
			name: "rewrite a record with its hash and crc redone",
			damage: func(t *testing.T, f *fixture) {
				f.rewrite(t, f.segOf(7), func(fr [][]byte) [][]byte {
					i := idxOf(t, fr, 7)
					fr[i][len(fr[i])-trailerLen-3] ^= 1 // a byte of the payload
					reseal(t, fr[i], false)
					return fr
				})
			},
			refuse: &refusal{segName(0), 8, ReasonChainBroken},
			verify: map[string]uint64{ReasonChainBroken: 8},
		},
		{
			name: "cut the tail mid-record",
			damage: func(t *testing.T, f *fixture) {
				truncate(t, f.segOf(n), f.entry(n).start+10)
			},
			repair: &repair{lastGood: n - 1, reason: ReasonTornTail, dropped: 10},
			verify: map[string]uint64{ReasonTornTail: n},
		},
		{
			name: "cut the tail inside the length prefix",
			damage: func(t *testing.T, f *fixture) {
				truncate(t, f.segOf(n), f.entry(n).start+1)
			},
			repair: &repair{lastGood: n - 1, reason: ReasonTornTail, dropped: 1},
			verify: map[string]uint64{ReasonTornTail: n},
		},
		{
			// A complete last record with a bad CRC is damage, not a torn
			// write (docs/journal-format.md): cutting it would lose an acknowledged record.
			name: "flip a byte in the last record",
			damage: func(t *testing.T, f *fixture) {
				flip(t, f.segOf(n), f.entry(n).end-50)
			},
			refuse:    &refusal{lastSegName, n, ReasonCRCMismatch},
			verify:    map[string]uint64{ReasonCRCMismatch: n},
			notVerify: []string{ReasonTornTail, ReasonTrailingGarbage},
		},
		{
			name: "length prefix of the last record made longer than the file",
			damage: func(t *testing.T, f *fixture) {
				p := f.segOf(n)
				b, _ := os.ReadFile(p)
				b[f.entry(n).start+1] |= 0x80 // the length now runs on into the frame
				os.WriteFile(p, b, 0o600)
			},
			refuse: &refusal{lastSegName, n, ReasonCorrupt},
			verify: map[string]uint64{ReasonCorrupt: n},
		},
		{
			name: "length prefix of the last record made shorter",
			damage: func(t *testing.T, f *fixture) {
				p := f.segOf(n)
				b, _ := os.ReadFile(p)
				b[f.entry(n).start] ^= 0x01
				os.WriteFile(p, b, 0o600)
			},
			refuse: &refusal{lastSegName, n, ""},
		},
		{
			name: "flip a byte in the last record, zero fill after it",
			damage: func(t *testing.T, f *fixture) {
				flip(t, f.segOf(n), f.entry(n).start+30)
				appendBytes(t, f.segOf(n), make([]byte, 100))
			},
			refuse: &refusal{lastSegName, n, ReasonCRCMismatch},
			verify: map[string]uint64{ReasonCRCMismatch: n},
		},
		{
			name: "zero fill after the last record",
			damage: func(t *testing.T, f *fixture) {
				appendBytes(t, f.segOf(n), make([]byte, 8))
			},
			repair: &repair{lastGood: n, reason: ReasonTrailingGarbage, dropped: 8},
			verify: map[string]uint64{ReasonTrailingGarbage: n + 1},
		},
		{
			name: "zero fill over the last record",
			damage: func(t *testing.T, f *fixture) {
				p := f.segOf(n)
				b, _ := os.ReadFile(p)
				clear(b[f.entry(n).start:])
				os.WriteFile(p, b, 0o600)
			},
			repair: &repair{lastGood: n - 1, reason: ReasonTrailingGarbage, dropped: -1},
			verify: map[string]uint64{ReasonTrailingGarbage: n},
		},
		{
			name: "random garbage after the last record",
			damage: func(t *testing.T, f *fixture) {
				g := make([]byte, 300)
				r := rand.New(rand.NewPCG(1, 2))
				for i := range g {
					g[i] = byte(r.Uint32())
				}
				appendBytes(t, f.segOf(n), g)
			},
			// Stray bytes are not what a crash of this writer leaves
			// (it writes only whole frames and the file system adds
			// only zeros): refused, never cut.
			refuse: &refusal{lastSegName, n + 1, ""},
			verify: map[string]uint64{ReasonCorrupt: n + 1},
		},
		{
			name: "truncate an older segment mid-record",
			damage: func(t *testing.T, f *fixture) {
				// The last record of the first segment, cut.
				ents := readEntries(t, f.segs[0])
				truncate(t, f.segs[0], ents[len(ents)-1].start+20)
			},
			refuse: &refusal{segName(0), 0 /* set below */, ReasonSegmentTruncated},
		},
		{
			name: "truncate an older segment at a record boundary",
			damage: func(t *testing.T, f *fixture) {
				ents := readEntries(t, f.segs[1])
				truncate(t, f.segs[1], ents[len(ents)-1].start)
			},
			refuse: &refusal{segName(1), 0 /* set below */, ReasonMissing},
		},
		{
			name:   "delete an older segment",
			damage: func(t *testing.T, f *fixture) { os.Remove(f.segs[1]) },
			refuse: &refusal{segName(0), 0 /* set below */, ReasonMissing},
		},
		{
			name: "bad record in the middle of the last segment",
			damage: func(t *testing.T, f *fixture) {
				_, ents := f.lastSeg(t)
				seq := binary.BigEndian.Uint64(ents[1].frame[offSeq:])
				flip(t, f.segOf(seq), f.entry(seq).end-40)
			},
			refuse: &refusal{lastSegName, 0 /* set below */, ReasonCRCMismatch},
		},
		{
			name: "length prefix of the next-to-last record made longer",
			damage: func(t *testing.T, f *fixture) {
				p := f.segOf(n - 1)
				b, _ := os.ReadFile(p)
				e := f.entry(n - 1)
				b[e.start] |= 0x7f // a first varint byte with the continuation bit kept
				os.WriteFile(p, b, 0o600)
			},
			refuse: &refusal{lastSegName, n - 1, ""},
		},
		{
			name: "record of a newer version at the end",
			damage: func(t *testing.T, f *fixture) {
				p, _ := f.lastSeg(t)
				f.rewrite(t, p, func(fr [][]byte) [][]byte {
					last := fr[len(fr)-1]
					last[0] = VersionEpoch + 1
					binary.BigEndian.PutUint32(last[len(last)-4:], crc32c(last[:len(last)-4]))
					return fr
				})
			},
			refuse: &refusal{lastSegName, n, ReasonVersion},
			verify: map[string]uint64{ReasonVersion: n},
		},
		{
			name: "truncation file left by someone",
			damage: func(t *testing.T, f *fixture) {
				os.WriteFile(f.segs[0]+".START", nil, 0o600)
			},
			refuse: &refusal{func(f *fixture) string { return base(f.segs[0]) + ".START" }, 1, ReasonTempFile},
		},
		{
			name: "empty last segment with a wrong name",
			damage: func(t *testing.T, f *fixture) {
				os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("%020d", n+5)), nil, 0o600)
			},
			refuse: &refusal{func(f *fixture) string { return base(f.segs[len(f.segs)-1]) }, n + 1, ReasonMissing},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// Sequence numbers that depend on where segments break.
			if tc.refuse != nil && tc.refuse.seq == 0 {
				switch tc.name {
				case "truncate an older segment mid-record":
					ents := readEntries(t, f.segs[0])
					tc.refuse.seq = binary.BigEndian.Uint64(ents[len(ents)-1].frame[offSeq:])
				case "truncate an older segment at a record boundary":
					ents := readEntries(t, f.segs[1])
					tc.refuse.seq = binary.BigEndian.Uint64(ents[len(ents)-1].frame[offSeq:])
				case "delete an older segment":
					tc.refuse.seq = binary.BigEndian.Uint64(readEntries(t, f.segs[1])[0].frame[offSeq:])
				case "bad record in the middle of the last segment":
					_, ents := f.lastSeg(t)
					tc.refuse.seq = binary.BigEndian.Uint64(ents[1].frame[offSeq:])
				}
			}
			tc.damage(t, f)

			// Verify reports it, read-only.
			before := dirBytes(t, f.dir)
			res, err := Verify(f.dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() {
				t.Fatal("Verify found nothing")
			}
			for reason, seq := range tc.verify {
				if !hasProblem(res.Problems, reason, seq) {
					t.Errorf("Verify: no %q at seq %d in %v", reason, seq, res.Problems)
				}
			}
			for _, reason := range tc.notVerify {
				if hasProblem(res.Problems, reason, 0) {
					t.Errorf("Verify: unexpected %q in %v", reason, res.Problems)
				}
			}
			if !reflect.DeepEqual(dirBytes(t, f.dir), before) {
				t.Fatal("Verify changed the journal")
			}

			// Scan stops with a DamageError after the good records.
			var scanned uint64
			err = Scan(f.dir, func(Record) error { scanned++; return nil })
			var de *DamageError
			if !errors.As(err, &de) {
				t.Fatalf("Scan = %v, want a DamageError", err)
			}

			var seen []Record
			l, rec, err := Open(f.dir, Options{SegmentSize: smallSeg, OnRecord: func(r Record) error {
				seen = append(seen, r)
				return nil
			}})
			switch {
			case tc.refuse != nil:
				if err == nil {
					l.Close()
					t.Fatalf("Open accepted the damage: %+v", rec)
				}
				var de *DamageError
				if !errors.As(err, &de) {
					t.Fatalf("Open = %v, want a DamageError", err)
				}
				wantSeg := tc.refuse.seg(f)
				if de.Segment != wantSeg || de.Seq != tc.refuse.seq || (tc.refuse.reason != "" && de.Reason != tc.refuse.reason) {
					t.Fatalf("Open = %+v, want segment %s seq %d reason %q", de, wantSeg, tc.refuse.seq, tc.refuse.reason)
				}
				msg := err.Error()
				if !strings.Contains(msg, wantSeg) || !strings.Contains(msg, fmt.Sprintf("seq %d", tc.refuse.seq)) {
					t.Fatalf("message %q does not name segment and seq", msg)
				}
				if !reflect.DeepEqual(dirBytes(t, f.dir), before) {
					t.Fatal("a refused Open changed the journal")
				}
			case tc.repair != nil:
				if err != nil {
					t.Fatalf("Open refused a repairable tail: %v", err)
				}
				defer l.Close()
				want := tc.repair
				if !rec.TornTail || rec.LastGoodSeq != want.lastGood ||
					(want.reason != "" && rec.Reason != want.reason) ||
					(want.dropped >= 0 && rec.DroppedBytes != want.dropped) {
					t.Fatalf("recovery = %+v, want %+v", rec, want)
				}
				if rec.Segment != base(f.segs[len(f.segs)-1]) {
					t.Fatalf("repaired segment %s, want the last one", rec.Segment)
				}
				// The copy holds the damaged bytes; the segment lost only
				// DroppedBytes.
				broken, err := os.ReadFile(rec.BrokenCopy)
				if err != nil || string(broken) != before[rec.Segment] {
					t.Fatalf("broken copy %s: %v", rec.BrokenCopy, err)
				}
				fi, _ := os.Stat(filepath.Join(f.dir, rec.Segment))
				if fi.Size() != int64(len(broken))-rec.DroppedBytes {
					t.Fatal("segment not cut at the last good record")
				}
				// Exactly the good records, no phantoms; the chain goes on.
				if !reflect.DeepEqual(seen, f.recs[:want.lastGood]) {
					t.Fatalf("OnRecord saw %d records, want the first %d", len(seen), want.lastGood)
				}
				recs, err := l.Append([]Entry{testEntry(1000)})
				if err != nil {
					t.Fatal(err)
				}
				if recs[0].Seq != want.lastGood+1 || recs[0].PrevHash != f.recs[want.lastGood-1].Hash {
					t.Fatal("append after repair does not continue the chain")
				}
				l.Close()
				if res, _ := Verify(f.dir, ""); !res.OK() {
					t.Fatalf("repaired journal does not verify: %v", res.Problems)
				}
			}
		})
	}
}

func hasProblem(ps []Problem, reason string, seq uint64) bool {
	for _, p := range ps {
		if strings.HasPrefix(p.Reason, reason) && (seq == 0 || p.Seq == seq) {
			return true
		}
	}
	return false
}

// TestCutTailAgainstExpectedHead: a cut tail repairs cleanly, but a head
// written down before the cut exposes it.
func TestCutTailAgainstExpectedHead(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	oldHead := Head{Seq: n, Hash: f.recs[n-1].Hash}.String()
	if res, err := Verify(f.dir, oldHead); err != nil || !res.OK() {
		t.Fatalf("intact journal against its head: %v %v", res.Problems, err)
	}
	truncate(t, f.segOf(n), f.entry(n).start+10)
	l, rec, err := Open(f.dir, Options{SegmentSize: smallSeg})
	if err != nil || !rec.TornTail {
		t.Fatalf("Open = %+v, %v", rec, err)
	}
	l.Close()
	res, err := Verify(f.dir, "")
	if err != nil || !res.OK() {
		t.Fatalf("repaired journal: %v %v", res.Problems, err)
	}
	res, err = Verify(f.dir, oldHead)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.HasPrefix(res.Problems[0].Reason, "head mismatch: expected "+oldHead) {
		t.Fatalf("Verify with the old head = %v", res.Problems)
	}

	// An older head still matches; a wrong hash at an existing seq does not.
	if res, _ := Verify(f.dir, Head{Seq: 10, Hash: f.recs[9].Hash}.String()); !res.OK() {
		t.Fatalf("older head: %v", res.Problems)
	}
	wrong := Head{Seq: 10, Hash: f.recs[10].Hash}.String()
	if res, _ := Verify(f.dir, wrong); len(res.Problems) != 1 || res.Problems[0].Seq != 10 ||
		!strings.HasPrefix(res.Problems[0].Reason, ReasonHeadMismatch) {
		t.Fatalf("wrong hash: %v", res.Problems)
	}
	for _, bad := range []string{"x", "10", "10:abc", "ten:" + GenesisHex, "10:" + strings.Repeat("g", 64)} {
		if _, err := Verify(f.dir, bad); !errors.Is(err, ErrBadHead) {
			t.Errorf("Verify(%q) = %v, want ErrBadHead", bad, err)
		}
	}
}

// TestFlipEverywhere flips one byte at offsets spread over every record and
// every field: Verify must always report it, and Open must always refuse,
// the last record of the last segment included.
func TestFlipEverywhere(t *testing.T) {
	f := newFixture(t)
	lastPath, lastEnts := f.lastSeg(t)
	lastEntry := lastEnts[len(lastEnts)-1]
	pristine := dirBytes(t, f.dir)
	type spot struct {
		path string
		off  int
	}
	var spots []spot
	for _, p := range f.segs {
		size := len(pristine[base(p)])
		for off := 0; off < size; off += 23 { // 23 is prime: hits every field over time
			spots = append(spots, spot{p, off})
		}
		spots = append(spots, spot{p, size - 1})
	}
	if len(spots) < 500 {
		t.Fatalf("only %d spots", len(spots))
	}
	work := t.TempDir()
	inLastCount := 0
	for _, s := range spots {
		restore(t, work, pristine)
		flip(t, filepath.Join(work, base(s.path)), s.off)
		inLast := s.path == lastPath && s.off >= lastEntry.start
		if inLast {
			inLastCount++
		}
		where := fmt.Sprintf("flip at %s+%d (last record: %v)", base(s.path), s.off, inLast)

		res, err := Verify(work, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.OK() {
			t.Fatalf("%s: Verify found nothing", where)
		}
		l, rec, err := Open(work, Options{SegmentSize: smallSeg})
		if err == nil {
			l.Close()
			t.Fatalf("%s: Open accepted it: %+v", where, rec)
		}
		var de *DamageError
		if !errors.As(err, &de) {
			t.Fatalf("%s: Open = %v, want a DamageError", where, err)
		}
	}
	if inLastCount == 0 {
		t.Fatal("no spot fell in the last record")
	}
	t.Logf("%d flips refused, %d of them in the last record", len(spots), inLastCount)
}

// restore makes dir hold exactly the files of pristine.
func restore(t *testing.T, dir string, pristine map[string]string) {
	t.Helper()
	for _, e := range mustReadDir(t, dir) {
		if _, ok := pristine[e]; !ok {
			os.Remove(filepath.Join(dir, e)) // broken copies from the last round
		}
	}
	for name, b := range pristine {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// flipMasks are the ways TestDamagedLastRecord damages each byte: the low
// bit, the high bit (the uvarint continuation bit), a mixed pattern and
// every bit.
var flipMasks = []byte{0x01, 0x80, 0x5a, 0xff}

// TestDamagedLastRecord damages every byte of the complete last record,
// its tidwall/wal length prefix included, in each of several ways: Open
// must refuse every time, naming the last segment and the record's seq,
// and change nothing; Verify must not call it a torn tail.
func TestDamagedLastRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records int
	}{
		{"many segments", fixtureRecords},
		{"only record", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJournal(t, dir, tc.records, 7)
			segs := segPaths(t, dir)
			lastPath := segs[len(segs)-1]
			ents := readEntries(t, lastPath)
			last := ents[len(ents)-1]
			seq := uint64(tc.records)
			if got := binary.BigEndian.Uint64(last.frame[offSeq:]); got != seq {
				t.Fatalf("last entry holds seq %d", got)
			}
			pristine := dirBytes(t, dir)
			work := t.TempDir()
			cases := 0
			for off := last.start; off < last.end; off++ {
				for _, mask := range flipMasks {
					restore(t, work, pristine)
					p := filepath.Join(work, base(lastPath))
					b, _ := os.ReadFile(p)
					b[off] ^= mask
					os.WriteFile(p, b, 0o600)
					where := fmt.Sprintf("byte %d of %d of the last entry ^ %#02x", off-last.start, last.end-last.start, mask)
					cases++

					before := dirBytes(t, work)
					l, rec, err := Open(work, Options{SegmentSize: smallSeg})
					if err == nil {
						l.Close()
						t.Fatalf("%s: Open accepted it: %+v", where, rec)
					}
					var de *DamageError
					if !errors.As(err, &de) {
						t.Fatalf("%s: Open = %v, want a DamageError", where, err)
					}
					if de.Segment != base(lastPath) || de.Seq != seq {
						t.Fatalf("%s: Open = %v, want segment %s seq %d", where, err, base(lastPath), seq)
					}
					if !strings.Contains(err.Error(), "segment "+base(lastPath)) || !strings.Contains(err.Error(), fmt.Sprintf("seq %d", seq)) {
						t.Fatalf("%s: message %q does not name segment and seq", where, err)
					}
					if !reflect.DeepEqual(dirBytes(t, work), before) {
						t.Fatalf("%s: a refused Open changed the journal", where)
					}
					res, err := Verify(work, "")
					if err != nil {
						t.Fatal(err)
					}
					if res.OK() || hasProblem(res.Problems, ReasonTornTail, 0) || hasProblem(res.Problems, ReasonTrailingGarbage, 0) {
						t.Fatalf("%s: Verify = %v, want damage that is not a torn tail", where, res.Problems)
					}
					if err := Scan(work, func(Record) error { return nil }); !errors.As(err, &de) || de.Seq != seq {
						t.Fatalf("%s: Scan = %v", where, err)
					}
				}
			}
			t.Logf("%d damaged last records refused", cases)
		})
	}
}

// TestTornLastRecordAtEveryLength cuts the last record at every length, its
// length prefix included: each is a crash mid-write, which Open repairs by
// dropping exactly the partial entry and the chain goes on.
func TestTornLastRecordAtEveryLength(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	lastPath, _ := f.lastSeg(t)
	e := f.entry(n)
	pristine := dirBytes(t, f.dir)
	work := t.TempDir()
	for keep := 1; keep < e.end-e.start; keep++ {
		restore(t, work, pristine)
		p := filepath.Join(work, base(lastPath))
		truncate(t, p, e.start+keep)
		where := fmt.Sprintf("last entry cut to %d of %d bytes", keep, e.end-e.start)

		res, err := Verify(work, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Problems) != 1 || res.Problems[0].Reason != ReasonTornTail || res.Problems[0].Seq != n {
			t.Fatalf("%s: Verify = %v, want one torn tail at seq %d", where, res.Problems, n)
		}
		var seen uint64
		l, rec, err := Open(work, Options{SegmentSize: smallSeg, OnRecord: func(Record) error { seen++; return nil }})
		if err != nil {
			t.Fatalf("%s: Open = %v", where, err)
		}
		if !rec.TornTail || rec.Reason != ReasonTornTail || rec.LastGoodSeq != n-1 || rec.DroppedBytes != int64(keep) ||
			rec.Segment != base(lastPath) || seen != n-1 {
			l.Close()
			t.Fatalf("%s: recovery %+v, %d records seen", where, rec, seen)
		}
		recs, err := l.Append([]Entry{testEntry(1000)})
		l.Close()
		if err != nil || recs[0].Seq != n || recs[0].PrevHash != f.recs[n-2].Hash {
			t.Fatalf("%s: append after repair = %v, %v", where, recs, err)
		}
	}

	// A cut exactly at the entry boundary leaves a shorter, intact journal:
	// nothing to repair (only an expected head can tell; see
	// TestCutTailAgainstExpectedHead).
	restore(t, work, pristine)
	truncate(t, filepath.Join(work, base(lastPath)), e.start)
	l, rec, err := Open(work, Options{SegmentSize: smallSeg})
	if err != nil || rec.TornTail || rec.LastGoodSeq != n-1 {
		t.Fatalf("cut at the boundary: %+v, %v", rec, err)
	}
	l.Close()
}

// TestStrictWalkStopsAtHeadMismatch: in strict mode the first problem of
// any kind ends the walk with a DamageError, an expected head that does not
// match included; the walker once dropped that error.
func TestStrictWalkStopsAtHeadMismatch(t *testing.T) {
	f := newFixture(t)
	for _, mode := range []walkMode{modeStrict, modeOpen} {
		var seen uint64
		w := newWalker(mode, func(Record) error { seen++; return nil })
		w.expect = &Head{Seq: 10, Hash: f.recs[10].Hash} // seq 10 with the hash of seq 11
		err := w.walkDir(f.dir)
		var de *DamageError
		if !errors.As(err, &de) || de.Seq != 10 || !strings.HasPrefix(de.Reason, ReasonHeadMismatch) {
			t.Fatalf("mode %d: walk = %v, want a head mismatch at seq 10", mode, err)
		}
		if seen != 9 {
			t.Fatalf("mode %d: %d records handed on, want the 9 before the mismatch", mode, seen)
		}
		// The matching head passes.
		w = newWalker(mode, nil)
		w.expect = &Head{Seq: 10, Hash: f.recs[9].Hash}
		if err := w.walkDir(f.dir); err != nil || !w.expectSeen {
			t.Fatalf("mode %d: matching head: %v", mode, err)
		}
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestEmptyLastSegmentIsFine: a crash right after rotation leaves an empty
// segment named after the next seq; that is not damage.
func TestEmptyLastSegmentIsFine(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
	os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("%020d", n+1)), nil, 0o600)
	if res, _ := Verify(f.dir, ""); !res.OK() {
		t.Fatalf("Verify: %v", res.Problems)
	}
	l, rec, err := Open(f.dir, Options{SegmentSize: smallSeg})
	if err != nil || rec.TornTail || rec.LastGoodSeq != n {
		t.Fatalf("Open = %+v, %v", rec, err)
	}
	defer l.Close()
	recs, err := l.Append([]Entry{testEntry(0)})
	if err != nil || recs[0].Seq != n+1 {
		t.Fatalf("Append = %v, %v", recs, err)
	}
}

// TestRepairTwiceKeepsBothCopies: a second repair of the same segment does
// not overwrite the first .broken copy.
func TestRepairTwiceKeepsBothCopies(t *testing.T) {
	f := newFixture(t)
	p := f.segOf(uint64(fixtureRecords))
	var copies []string
	for i := 0; i < 2; i++ {
		appendBytes(t, p, make([]byte, 8))
		l, rec, err := Open(f.dir, Options{SegmentSize: smallSeg})
		if err != nil || !rec.TornTail {
			t.Fatalf("Open = %+v, %v", rec, err)
		}
		l.Close()
		copies = append(copies, rec.BrokenCopy)
	}
	if copies[0] == copies[1] || copies[0] != p+".broken" || copies[1] != p+".broken.2" {
		t.Fatalf("copies %v", copies)
	}
}

// TestOnlyRecordTorn: a journal whose single record is torn repairs to an
// empty journal, and the next record chains from genesis again.
func TestOnlyRecordTorn(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, 1, 1)
	p := segPaths(t, dir)[0]
	fi, _ := os.Stat(p)
	truncate(t, p, int(fi.Size())-3)
	l, rec, err := Open(dir, Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !rec.TornTail || rec.LastGoodSeq != 0 || rec.DroppedBytes != fi.Size()-3 {
		t.Fatalf("recovery %+v", rec)
	}
	if s, h := l.Head(); s != 0 || h != genesis {
		t.Fatal("head of the emptied journal is not 0:genesis")
	}
	recs, err := l.Append([]Entry{testEntry(0)})
	if err != nil || recs[0].Seq != 1 || recs[0].PrevHash != genesis {
		t.Fatalf("Append = %+v, %v", recs, err)
	}
}

func TestVerifyEmptyAndMissing(t *testing.T) {
	dir := t.TempDir()
	res, err := Verify(dir, "0:"+GenesisHex)
	if err != nil || !res.OK() || res.Records != 0 || res.Head != (Head{Hash: genesis}) {
		t.Fatalf("empty dir: %+v %v", res, err)
	}
	if res.Head.String() != "0:"+GenesisHex {
		t.Fatalf("Head.String() = %s", res.Head)
	}
	if res, _ := Verify(dir, "1:"+GenesisHex); res.OK() {
		t.Fatal("an expected record missing from an empty journal went unreported")
	}
	if _, err := Verify(filepath.Join(dir, "missing"), ""); err == nil {
		t.Fatal("Verify of a missing dir succeeded")
	}
	if err := Scan(filepath.Join(dir, "missing"), func(Record) error { return nil }); err == nil {
		t.Fatal("Scan of a missing dir succeeded")
	}
}

func TestSnapshotKeepsTruncationFiles(t *testing.T) {
	f := newFixture(t)
	os.WriteFile(f.segs[0]+".END", []byte("x"), 0o600)
	cp, cleanup, err := Snapshot(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	res, err := Verify(cp, "")
	if err != nil || !hasProblem(res.Problems, ReasonTempFile, 0) {
		t.Fatalf("Verify(copy) = %v, %v", res.Problems, err)
	}
}

// TestDamagedLastRecordEveryMask is TestDamagedLastRecord for every
// possible damage of each byte (all 255 xor masks), in memory: the walker
// Open uses, primed with the segments before the last, must refuse each
// damaged last segment as damage at the last record, never mark it for a
// cut.
func TestDamagedLastRecordEveryMask(t *testing.T) {
	f := newFixture(t)
	n := uint64(fixtureRecords)
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
	lastSeg := segs[len(segs)-1]
	pristine, _ := os.ReadFile(lastSeg.path)
	e := f.entry(n)
	if e.seg != lastSeg.name || e.end != len(pristine) {
		t.Fatalf("seq %d is not the end of the last segment", n)
	}
	// The pristine segment walks clean from the primed state.
	w := *primed
	if err := w.walkSegment(lastSeg, pristine, true); err != nil || w.tail != nil || w.lastSeq != n {
		t.Fatalf("pristine last segment: %v, tail %+v, last seq %d", err, w.tail, w.lastSeq)
	}
	data := make([]byte, len(pristine))
	cases := 0
	for off := e.start; off < e.end; off++ {
		for mask := 1; mask < 256; mask++ {
			copy(data, pristine)
			data[off] ^= byte(mask)
			w := *primed
			err := w.walkSegment(lastSeg, data, true)
			var de *DamageError
			if !errors.As(err, &de) || de.Seq != n || de.Segment != lastSeg.name || w.tail != nil {
				t.Fatalf("byte %d of the last entry ^ %#02x: walk = %v, tail %+v; want damage at seq %d", off-e.start, mask, err, w.tail, n)
			}
			cases++
		}
	}
	t.Logf("%d damaged last records refused", cases)
}
