package wal

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestGenesis(t *testing.T) {
	sum := sha256.Sum256([]byte("guarded-exchange journal genesis v1"))
	if got := hex.EncodeToString(sum[:]); got != GenesisHex {
		t.Fatalf("GenesisHex = %s, SHA-256 of the genesis text is %s", GenesisHex, got)
	}
	if GenesisHash() != sum {
		t.Fatal("GenesisHash differs from GenesisHex")
	}
}

// goldenRecord is the record pinned byte for byte in testdata.
func goldenRecord() Record {
	return Record{
		Seq:      7,
		Time:     t0,
		Type:     3,
		User:     "alice",
		Actor:    "mcp:agent",
		Channel:  "cli",
		Payload:  []byte(`{"symbol":"BTCUSDT","qty":"0.01"}`),
		PrevHash: genesis,
	}
}

// TestFrameGolden pins the version 1 layout: any change to the bytes on
// disk fails here. Rewrite with -update only for a deliberate new version.
func TestFrameGolden(t *testing.T) {
	frame, sum := encodeRecord(goldenRecord())
	got := hex.Dump(frame)
	path := filepath.Join("testdata", "frame_v1.hexdump")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Fatalf("frame bytes changed:\n got:\n%s\nwant:\n%s", got, want)
	}

	// The layout by hand, field by field.
	r := goldenRecord()
	if frame[0] != Version ||
		binary.BigEndian.Uint16(frame[1:]) != r.Type ||
		int64(binary.BigEndian.Uint64(frame[3:])) != r.Time.UnixNano() ||
		binary.BigEndian.Uint64(frame[11:]) != r.Seq ||
		!bytes.Equal(frame[19:51], genesis[:]) {
		t.Fatal("fixed part not where doc.go says")
	}
	n := len(frame) - trailerLen
	if want := sha256.Sum256(append(append([]byte{}, genesis[:]...), frame[:n]...)); want != sum || !bytes.Equal(frame[n:n+32], want[:]) {
		t.Fatal("hash is not SHA-256(prev_hash || bytes before the hash)")
	}
	if binary.BigEndian.Uint32(frame[n+32:]) != crc32c(frame[:n+32]) {
		t.Fatal("crc is not CRC-32C of everything before it")
	}
	if len(frame) != frameLen(r.Epoch, r.User, r.Actor, r.Channel, r.Payload) {
		t.Fatal("frameLen disagrees with appendFrame")
	}

	dec, err := decodeRecord(frame)
	if err != nil {
		t.Fatal(err)
	}
	r.Hash = sum
	if !reflect.DeepEqual(dec, r) {
		t.Fatalf("decode(encode(r)) = %+v, want %+v", dec, r)
	}
}

func TestDecodeErrors(t *testing.T) {
	good, _ := encodeRecord(goldenRecord())
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	// forge rebuilds a frame from raw parts with a correct hash and CRC, so
	// only the structural defect is left.
	forge := func(body []byte) []byte {
		var h hasher
		sum := h.sum(body[offPrev:offPrev+hashLen], body)
		b := append(append([]byte(nil), body...), sum[:]...)
		return binary.BigEndian.AppendUint32(b, crc32c(b))
	}
	body := good[:len(good)-trailerLen]
	fixed := body[:fixedLen]
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrTruncated},
		{"fixed part only", append([]byte(nil), fixed[:20]...), ErrTruncated},
		{"cut before trailer", good[:len(good)-10], ErrTruncated},
		{"cut in a field", good[:fixedLen+3], ErrTruncated},
		{"version 0", mod(func(b []byte) []byte { b[0] = 0; return b }), ErrCorrupt},
		{"flipped version", mod(func(b []byte) []byte { b[0] = 7; return b }), ErrCorrupt},
		{"newer version with intact crc", func() []byte {
			b := []byte{VersionEpoch + 1, 'x', 'y'}
			return binary.BigEndian.AppendUint32(b, crc32c(b))
		}(), ErrVersion},
		{"flipped payload byte", mod(func(b []byte) []byte { b[len(b)-45] ^= 0x20; return b }), ErrCorrupt},
		{"flipped crc", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorrupt},
		{"flipped hash, crc redone", mod(func(b []byte) []byte {
			b[len(b)-5] ^= 1
			binary.BigEndian.PutUint32(b[len(b)-4:], crc32c(b[:len(b)-4]))
			return b
		}), ErrCorrupt},
		{"non-canonical length", forge(append(append(append([]byte(nil), fixed...), 0x80, 0x00), body[fixedLen+1:]...)), ErrCorrupt},
		{"absurd length", forge(append(append(append([]byte(nil), fixed...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), body[fixedLen+1:]...)), ErrCorrupt},
		{"varint overflow", forge(append(append(append([]byte(nil), fixed...), bytes.Repeat([]byte{0xff}, 11)...), body[fixedLen+1:]...)), ErrCorrupt},
		{"field over limit", forge(append(binary.AppendUvarint(append([]byte(nil), fixed...), MaxFieldLen+1), bytes.Repeat([]byte{'u'}, MaxFieldLen+1)...)), ErrCorrupt},
		{"extra byte before trailer", forge(append(append([]byte(nil), body...), 0)), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRecord(tc.frame)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrTruncated, ErrCorrupt, ErrVersion} {
				if other != tc.want && errors.Is(err, other) {
					t.Fatalf("err %v also matches %v", err, other)
				}
			}
			if !strings.HasPrefix(err.Error(), "wal: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestDecodeAbsurdLengthDoesNotAllocate(t *testing.T) {
	good, _ := encodeRecord(goldenRecord())
	b := append(append([]byte(nil), good[:fixedLen]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)
	allocs := testing.AllocsPerRun(100, func() { parseFrame(b) })
	if allocs != 0 {
		t.Fatalf("parseFrame allocated %v times on an absurd length", allocs)
	}
}

// FuzzDecodeRecord: the decoder never panics, and whatever it accepts
// encodes back to the same bytes (one encoding per record).
func FuzzDecodeRecord(f *testing.F) {
	good, _ := encodeRecord(goldenRecord())
	f.Add(good)
	dir := f.TempDir()
	writeJournal(f, dir, 12, 4)
	for _, e := range allEntries(f, dir) {
		f.Add(append([]byte(nil), e.frame...))
	}
	empty, _ := encodeRecord(Record{Seq: 1, PrevHash: genesis})
	f.Add(empty)
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add(good[:len(good)-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v is none of the sentinels", err)
			}
			return
		}
		again, sum := encodeRecord(r)
		if !bytes.Equal(again, b) {
			t.Fatalf("round trip changed the frame:\n in: %x\nout: %x", b, again)
		}
		if sum != r.Hash {
			t.Fatal("re-encoded hash differs")
		}
	})
}
