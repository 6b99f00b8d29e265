package wal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// t0 is the fixed start of test time; tests never read the clock.
var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)

// testClock returns a Now func that advances one millisecond per call.
func testClock() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return t0.Add(time.Duration(n) * time.Millisecond)
	}
}

// testEntry is entry i of a deterministic stream: three users, a few
// types, a channel on every fifth.
func testEntry(i int) Entry {
	e := Entry{
		Time:    t0.Add(time.Duration(i) * time.Second),
		Type:    uint16(1 + i%5),
		User:    []string{"alice", "bob", "carol"}[i%3],
		Actor:   []string{"mcp:agent", "cli:user", "system:venue"}[i%3],
		Payload: fmt.Appendf(nil, `{"i":%d,"note":"entry %d <&>","pad":"%s"}`, i, i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
	}
	if i%5 == 0 {
		e.Channel = "cli"
	}
	return e
}

// smallSeg makes segments of a few dozen records so tests cross segment
// boundaries.
const smallSeg = 4096

// writeJournal appends n test entries in batches of batch to a fresh
// journal in dir and closes it; it returns the records Append returned.
func writeJournal(t testing.TB, dir string, n, batch int) []Record {
	t.Helper()
	l, _, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	var all []Record
	for i := 0; i < n; i += batch {
		var es []Entry
		for j := i; j < min(i+batch, n); j++ {
			es = append(es, testEntry(j))
		}
		recs, err := l.Append(es)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return all
}

// rawEntry is one tidwall/wal entry of a segment file: where it starts,
// where it ends, and the frame inside.
type rawEntry struct {
	seg        string // base name
	start, end int
	frame      []byte
}

// readEntries splits a segment file into its uvarint-framed entries; it
// fails the test on a torn file.
func readEntries(t testing.TB, path string) []rawEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rawEntry
	for pos := 0; pos < len(data); {
		n, k := binary.Uvarint(data[pos:])
		if k <= 0 || n > uint64(len(data)-pos-k) {
			t.Fatalf("%s: torn at %d", path, pos)
		}
		end := pos + k + int(n)
		out = append(out, rawEntry{seg: filepath.Base(path), start: pos, end: end, frame: data[pos+k : end]})
		pos = end
	}
	return out
}

// writeEntries writes frames as a segment file in tidwall/wal's Binary
// framing.
func writeEntries(t testing.TB, path string, frames [][]byte) {
	t.Helper()
	var b []byte
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// segPaths lists the segment files of dir in order.
func segPaths(t testing.TB, dir string) []string {
	t.Helper()
	segs, _, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range segs {
		out = append(out, s.path)
	}
	return out
}

// allEntries lists every entry of every segment of dir.
func allEntries(t testing.TB, dir string) []rawEntry {
	var out []rawEntry
	for _, p := range segPaths(t, dir) {
		out = append(out, readEntries(t, p)...)
	}
	return out
}

// copyDir copies the regular files of src into a new temp dir.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// dirBytes reads every file of dir, to check that a refused Open changed
// nothing.
func dirBytes(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// reseal recomputes the hash and CRC of a frame after its fields were
// changed in place, as a forger would. If keepHash, only the CRC is redone.
func reseal(t testing.TB, frame []byte, keepHash bool) {
	t.Helper()
	f, err := parseFrameLenient(frame)
	if err != nil {
		t.Fatal(err)
	}
	n := len(f)
	if !keepHash {
		var h hasher
		sum := h.sum(frame[offPrev:offPrev+hashLen], frame[:n])
		copy(frame[n:], sum[:])
	}
	binary.BigEndian.PutUint32(frame[n+hashLen:], crc32c(frame[:n+hashLen]))
}

// parseFrameLenient returns the body (bytes before the hash) of a frame
// without checking the CRC.
func parseFrameLenient(frame []byte) ([]byte, error) {
	off := fixedLen
	for i := 0; i < 4; i++ {
		limit := MaxFieldLen
		if i == 3 {
			limit = MaxPayloadLen
		}
		var err error
		if _, off, err = readField(frame, off, limit); err != nil {
			return nil, err
		}
	}
	return frame[:off], nil
}

// buildRaw writes n records with payloads of payloadLen bytes straight into
// segment files, in tidwall/wal's layout and rotation rule, without fsync:
// the fast way to make the big journal the benchmarks open.
func buildRaw(t testing.TB, dir string, n, payloadLen, segSize int) Head {
	t.Helper()
	payload := make([]byte, payloadLen)
	payload[0], payload[payloadLen-1] = '"', '"'
	for i := 1; i < payloadLen-1; i++ {
		payload[i] = 'a' + byte(i%26)
	}
	var (
		h     hasher
		prev  = genesis
		frame []byte
		f     *os.File
		bw    *bufio.Writer
		size  int
	)
	closeSeg := func() {
		if f == nil {
			return
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	open := func(seq uint64) {
		closeSeg()
		var err error
		f, err = os.Create(filepath.Join(dir, fmt.Sprintf("%020d", seq)))
		if err != nil {
			t.Fatal(err)
		}
		bw = bufio.NewWriterSize(f, 1<<20)
		size = 0
	}
	open(1)
	var lenBuf [binary.MaxVarintLen64]byte
	for i := 1; i <= n; i++ {
		var sum [32]byte
		frame, sum = appendFrame(frame[:0], &h, uint64(i), 1, t0.UnixNano()+int64(i), &prev, 0, "local", "mcp:agent", "", payload)
		k := binary.PutUvarint(lenBuf[:], uint64(len(frame)))
		bw.Write(lenBuf[:k])
		bw.Write(frame)
		size += k + len(frame)
		prev = sum
		if size >= segSize {
			open(uint64(i + 1))
		}
	}
	closeSeg()
	return Head{Seq: uint64(n), Hash: prev}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
