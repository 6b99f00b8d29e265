package wal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var testTypeNames = map[uint16]string{1: "tool_call", 2: "order_refused", 3: "order_attempt", 4: "order_outcome"}

func testTypeName(t uint16) string { return testTypeNames[t] } // 5 has no name: printed as "5"

func dumpLines(t *testing.T, dir string, o DumpOptions) []map[string]json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	if err := Dump(&buf, dir, o); err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s is not a string: %v", raw, err)
	}
	return s
}

func TestDumpJSONL(t *testing.T) {
	dir := t.TempDir()
	recs := writeJournal(t, dir, 30, 4)
	lines := dumpLines(t, dir, DumpOptions{TypeName: testTypeName})
	if len(lines) != len(recs) {
		t.Fatalf("%d lines for %d records", len(lines), len(recs))
	}
	for i, m := range lines {
		r := recs[i]
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		want := []string{"actor", "hash", "payload", "prev_hash", "seq", "time", "type", "user"}
		if r.Channel != "" {
			want = append(want, "channel")
			slices.Sort(want)
		}
		if !reflect.DeepEqual(keys, want) {
			t.Fatalf("seq %d keys %v, want %v", r.Seq, keys, want)
		}
		var seq uint64
		json.Unmarshal(m["seq"], &seq)
		ts, err := time.Parse(time.RFC3339Nano, str(t, m["time"]))
		if err != nil || !ts.Equal(r.Time) || !strings.HasSuffix(str(t, m["time"]), "Z") || len(str(t, m["time"])) != len("2006-01-02T15:04:05.000000000Z") {
			t.Fatalf("seq %d time %s (%v)", r.Seq, m["time"], err)
		}
		wantType := testTypeNames[r.Type]
		if wantType == "" {
			wantType = "5"
		}
		var compact bytes.Buffer
		json.Compact(&compact, r.Payload)
		if seq != r.Seq || str(t, m["user"]) != r.User || str(t, m["actor"]) != r.Actor ||
			str(t, m["type"]) != wantType || (r.Channel != "" && str(t, m["channel"]) != r.Channel) ||
			str(t, m["hash"]) != hexHash(r.Hash) || str(t, m["prev_hash"]) != hexHash(r.PrevHash) ||
			string(m["payload"]) != compact.String() {
			t.Fatalf("line %v does not match record %+v", m, r)
		}
		if !bytes.Contains(m["payload"], []byte("<&>")) {
			t.Fatalf("payload HTML-escaped: %s", m["payload"])
		}
	}
	if str(t, lines[0]["prev_hash"]) != GenesisHex {
		t.Fatal("record 1 does not chain from genesis")
	}
}

func TestDumpFilters(t *testing.T) {
	dir := t.TempDir()
	recs := writeJournal(t, dir, 40, 8)
	seqs := func(o DumpOptions) []uint64 {
		var out []uint64
		for _, m := range dumpLines(t, dir, o) {
			var s uint64
			json.Unmarshal(m["seq"], &s)
			out = append(out, s)
		}
		return out
	}
	want := func(keep func(r Record) bool) []uint64 {
		var out []uint64
		for _, r := range recs {
			if keep(r) {
				out = append(out, r.Seq)
			}
		}
		return out
	}
	since, until := recs[10].Time, recs[25].Time
	for _, tc := range []struct {
		name string
		o    DumpOptions
		keep func(r Record) bool
	}{
		{"all", DumpOptions{}, func(Record) bool { return true }},
		{"user", DumpOptions{User: "bob"}, func(r Record) bool { return r.User == "bob" }},
		{"types", DumpOptions{Types: []uint16{2, 4}}, func(r Record) bool { return r.Type == 2 || r.Type == 4 }},
		{"since inclusive", DumpOptions{Since: since}, func(r Record) bool { return r.Seq >= 11 }},
		{"until exclusive", DumpOptions{Until: until}, func(r Record) bool { return r.Seq < 26 }},
		{"window, user and type", DumpOptions{Since: since, Until: until, User: "carol", Types: []uint16{1, 2, 3}},
			func(r Record) bool { return r.Seq >= 11 && r.Seq < 26 && r.User == "carol" && r.Type <= 3 }},
		{"no match", DumpOptions{User: "mallory"}, func(Record) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, exp := seqs(tc.o), want(tc.keep)
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("got %v, want %v", got, exp)
			}
		})
	}
}

func TestDumpTable(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	long := `{"text":"` + strings.Repeat("é", 200) + `"}`
	recs, err := l.Append([]Entry{
		{Type: 1, User: "alice", Actor: "mcp:agent", Payload: []byte(`{ "a" : 1 }`)},
		{Type: 3, User: "bob\x1b[31m", Actor: "cli:user", Payload: []byte(long)},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	var buf bytes.Buffer
	if err := Dump(&buf, dir, DumpOptions{Format: FormatTable, TypeName: testTypeName}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "SEQ") {
		t.Fatalf("table:\n%s", buf.String())
	}
	// Columns line up: the hash column starts at the same offset.
	h0 := strings.Index(lines[1], hexHash(recs[0].Hash)[:12])
	h1 := strings.Index(lines[2], hexHash(recs[1].Hash)[:12])
	if h0 < 0 || h0 != h1 || strings.Index(lines[0], "HASH") != h0 {
		t.Fatalf("columns not aligned:\n%s", buf.String())
	}
	if !strings.Contains(lines[1], `{"a":1}`) || !strings.Contains(lines[1], "tool_call") {
		t.Fatalf("row 1: %s", lines[1])
	}
	if strings.ContainsRune(lines[2], 0x1b) || !strings.Contains(lines[2], "bob?[31m") {
		t.Fatalf("control characters not neutralised: %q", lines[2])
	}
	payload := lines[2][strings.Index(lines[2], `{"text"`):]
	if n := len([]rune(payload)); n != payloadCut+1 || !strings.HasSuffix(payload, "…") {
		t.Fatalf("payload cut to %d runes: %s", n, payload)
	}
}

// TestDumpGolden pins the dump output byte for byte (rewrite with -update).
func TestDumpGolden(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, 6, 3)
	for _, format := range []string{FormatJSONL, FormatTable} {
		var buf bytes.Buffer
		if err := Dump(&buf, dir, DumpOptions{Format: format, TypeName: testTypeName}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "dump."+format)
		if *update {
			os.WriteFile(path, buf.Bytes(), 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if buf.String() != string(want) {
			t.Fatalf("%s output changed:\n got:\n%s\nwant:\n%s", format, buf.String(), want)
		}
	}
}

func TestDumpErrors(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, 20, 20)
	if err := Dump(&bytes.Buffer{}, dir, DumpOptions{Format: "xml"}); !errors.Is(err, ErrBadFormat) {
		t.Fatalf("Dump xml = %v", err)
	}
	// Damage: the good records come out, then the DamageError.
	ents := allEntries(t, dir)
	flip(t, filepath.Join(dir, ents[9].seg), ents[9].end-40)
	var buf bytes.Buffer
	err := Dump(&buf, dir, DumpOptions{})
	var de *DamageError
	if !errors.As(err, &de) || de.Seq != 10 {
		t.Fatalf("Dump of a damaged journal = %v", err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 9 {
		t.Fatalf("%d lines before the damage, want 9", n)
	}
	if _, err := MarshalRecordJSON(Record{Payload: []byte("{nope")}, nil); err == nil {
		t.Fatal("MarshalRecordJSON accepted an invalid payload")
	}
	b, err := MarshalRecordJSON(Record{Seq: 1, Time: t0, Type: 42}, nil)
	if err != nil || !bytes.Contains(b, []byte(`"type":"42"`)) || !bytes.Contains(b, []byte(`"payload":{}`)) ||
		bytes.Contains(b, []byte("channel")) || bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("MarshalRecordJSON = %s, %v", b, err)
	}
}

func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{SegmentSize: smallSeg, Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 50; i += 10 {
		var es []Entry
		for j := i; j < i+10; j++ {
			es = append(es, testEntry(j))
		}
		if _, err := l.Append(es); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000001.broken"), []byte("x"), 0o600)

	// Taken while the Log is open; the Log is not disturbed.
	cp, cleanup, err := Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, want := dirBytes(t, cp), dirBytes(t, dir)
	delete(want, "00000000000000000001.broken")
	if !reflect.DeepEqual(got, want) {
		t.Fatal("snapshot differs from the segment files")
	}
	seq, h := l.Head()
	res, err := Verify(cp, Head{Seq: seq, Hash: h}.String())
	if err != nil || !res.OK() || res.Records != 50 {
		t.Fatalf("Verify(copy) = %+v, %v", res, err)
	}
	if _, err := l.Append([]Entry{testEntry(99)}); err != nil {
		t.Fatal(err)
	}
	cleanup()
	if _, err := os.Stat(cp); !os.IsNotExist(err) {
		t.Fatal("cleanup left the copy")
	}
	if _, _, err := Snapshot(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Snapshot of a missing dir succeeded")
	}
}

func TestSnapshotTail(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, 3, 3)
	data, _ := os.ReadFile(segPaths(t, dir)[0])
	partial := data[:len(data)-7]
	if got := snapshotTail(partial, int64(len(data))); len(got) != completeEnd(partial) || completeEnd(partial) >= len(partial) {
		t.Fatal("a write in flight was copied")
	}
	if got := snapshotTail(partial, int64(len(partial))); len(got) != len(partial) {
		t.Fatal("a real torn tail was hidden")
	}
	if got := snapshotTail(data, int64(len(data)+100)); len(got) != len(data) {
		t.Fatal("complete entries were dropped")
	}
}
