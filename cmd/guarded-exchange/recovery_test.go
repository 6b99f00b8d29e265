package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lastJournalEntry returns the last segment of the home's journal and the
// offsets of its last tidwall/wal entry (uvarint length + frame).
func lastJournalEntry(t *testing.T, home string) (seg string, start, end int) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(home, "journal", "0*"))
	if len(segs) == 0 {
		t.Fatal("no journal segment")
	}
	seg = segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for pos := 0; pos < len(data); {
		n, k := binary.Uvarint(data[pos:])
		if k <= 0 || n > uint64(len(data)-pos-k) {
			t.Fatalf("%s is torn at %d before the test damaged it", seg, pos)
		}
		start, end = pos, pos+k+int(n)
		pos = end
	}
	return seg, start, end
}

// A flipped byte in a complete last record (here the posture_changed that
// follows kill_switch_on) is damage, not a torn write: serve must refuse
// to start, naming segment and seq, rather than cut the record and come up
// in another state.
func TestServeRefusesDamagedLastRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   func(start, end int) int // the byte to flip
	}{
		{"payload byte", func(start, end int) int { return end - 60 }},
		{"crc byte", func(start, end int) int { return end - 1 }},
		{"length prefix", func(start, end int) int { return start }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstall(t)
			if r := run(t, in.env(), "", "kill-switch", "on"); r.code != 0 {
				t.Fatalf("kill-switch on: %d %q", r.code, r.stderr)
			}
			dump := run(t, in.env(), "", "journal", "dump", "--format", "jsonl")
			lines := strings.Split(strings.TrimSpace(dump.stdout), "\n")
			var last struct {
				Seq  uint64 `json:"seq"`
				Type string `json:"type"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "posture_changed" {
				t.Fatalf("last record %q (%v), want posture_changed", lines[len(lines)-1], err)
			}

			seg, start, end := lastJournalEntry(t, in.home)
			data, _ := os.ReadFile(seg)
			data[tc.at(start, end)] ^= 0x5a
			if err := os.WriteFile(seg, data, 0o600); err != nil {
				t.Fatal(err)
			}

			r := run(t, in.env(), "", "serve")
			segName := filepath.Base(seg)
			wantSeq := fmt.Sprintf("seq %d", last.Seq)
			if r.code != 2 || !strings.Contains(r.stderr, "cannot start: journal") ||
				!strings.Contains(r.stderr, "segment "+segName) || !strings.Contains(r.stderr, wantSeq) {
				t.Fatalf("serve on a damaged last record: exit %d, stderr %q; want exit 2 naming segment %s and %s", r.code, r.stderr, segName, wantSeq)
			}
			if strings.Contains(r.stdout, "jsonrpc") {
				t.Fatalf("serve answered MCP on a damaged journal: %q", r.stdout)
			}
			// Nothing was cut or copied aside: the record is still there
			// for the operator to inspect.
			after, _ := os.ReadFile(seg)
			if string(after) != string(data) {
				t.Fatal("serve changed the damaged segment")
			}
			if broken, _ := filepath.Glob(seg + ".broken*"); len(broken) != 0 {
				t.Fatalf("serve treated the damage as a torn tail: %v", broken)
			}
			// The CLI refuses too, so nothing reports the kill switch off.
			if r := run(t, in.env(), "", "policy", "show"); r.code != 2 || !strings.Contains(r.stderr, wantSeq) {
				t.Fatalf("policy show on a damaged journal: exit %d %q %q", r.code, r.stdout, r.stderr)
			}
			v := run(t, in.env(), "", "journal", "verify")
			if v.code != 1 || !strings.Contains(v.stderr, wantSeq) || strings.Contains(v.stderr, "torn tail") {
				t.Fatalf("journal verify: exit %d %q", v.code, v.stderr)
			}
		})
	}
}
