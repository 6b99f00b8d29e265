package wal

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Head names the last record of a journal: its seq and hash. Written down
// somewhere the journal's owner cannot reach, it lets a later Verify prove
// that no record up to it was changed, removed or cut (the --expect-head
// checkpoint).
type Head struct {
	Seq  uint64
	Hash [32]byte
}

// String returns "SEQ:HEX" with the hash in lowercase hex, the form
// `journal head` prints and ParseHead reads.
func (h Head) String() string { return strconv.FormatUint(h.Seq, 10) + ":" + hexHash(h.Hash) }

// ErrBadHead is returned by ParseHead and Verify for a malformed head.
var ErrBadHead = errors.New("wal: malformed head, want SEQ:HASH with a 64-digit hex hash")

// ParseHead parses "SEQ:HEX" (as Head.String prints it; hex in either case).
func ParseHead(s string) (Head, error) {
	seqText, hashText, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || len(hashText) != 2*hashLen {
		return Head{}, fmt.Errorf("%w: %q", ErrBadHead, s)
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return Head{}, fmt.Errorf("%w: %q", ErrBadHead, s)
	}
	var h Head
	h.Seq = seq
	if _, err := hex.Decode(h.Hash[:], []byte(hashText)); err != nil {
		return Head{}, fmt.Errorf("%w: %q", ErrBadHead, s)
	}
	return h, nil
}

// VerifyResult is what Verify found. The journal is intact when Problems
// is empty.
type VerifyResult struct {
	// Records is the number of records with an intact frame.
	Records uint64
	// Head is the last intact record read (Seq 0 and GenesisHash when
	// there is none).
	Head Head
	// Problems lists what is wrong, in file order, at most about 1000.
	Problems []Problem
}

// OK reports whether Verify found no problem.
func (r VerifyResult) OK() bool { return len(r.Problems) == 0 }

// Verify reads the whole journal in dir, read-only, and reports every
// problem instead of stopping at the first: CRC and framing errors, seq
// gaps and reorderings, hashes that do not match their record, prev_hash
// links that do not match the record before (the chain starts at
// GenesisHash), a torn tail and trailing garbage.
//
// expectHead, if not empty, is a checkpoint "SEQ:HASH" taken earlier (see
// Head). If the journal has no intact record SEQ (it was cut) or that
// record's hash differs (it was rewritten), Verify adds a problem whose
// Reason starts with "head mismatch: expected ". A malformed expectHead is
// an error (ErrBadHead), as is a directory that cannot be read.
//
// Verify never writes. Run it on a Snapshot when a server may be writing.
func Verify(dir string, expectHead string) (VerifyResult, error) {
	return VerifyWith(dir, VerifyOptions{ExpectHead: expectHead})
}

// VerifyOptions configures VerifyWith. The zero value is Verify's.
type VerifyOptions struct {
	// ExpectHead is Verify's expectHead.
	ExpectHead string
	// OwnerType, when not zero, is the record type with which a fenced
	// writer opens its epoch (a shard's owner record, docs/cluster.md):
	// a record carrying an epoch that no owner record before it opened
	// is reported (ReasonEpochUnowned). Epochs going down along the
	// chain are reported whatever it is (ReasonEpochDown).
	OwnerType uint16
}

// VerifyWith is Verify with options. Beyond what Verify checks on any
// journal, it reports a chain written by two fenced owners at once: a
// record whose epoch is lower than an earlier record's (ReasonEpochDown)
// and, with OwnerType, an epoch no owner record opened.
func VerifyWith(dir string, o VerifyOptions) (VerifyResult, error) {
	expectHead := o.ExpectHead
	w := newWalker(modeVerify, nil)
	w.ownerType = o.OwnerType
	if expectHead != "" {
		h, err := ParseHead(expectHead)
		if err != nil {
			return VerifyResult{}, err
		}
		w.expect = &h
		if h.Seq == 0 {
			// "0:GENESIS" is the head of an empty journal: nothing to find.
			w.expectSeen = h.Hash == genesis
		}
	}
	if err := w.walkDir(dir); err != nil {
		return VerifyResult{}, err
	}
	if w.expect != nil && !w.expectSeen {
		if err := w.problem(Problem{Seq: w.expect.Seq, Offset: -1, Reason: fmt.Sprintf(
			"%s: expected %s, journal has no intact record %d (last record read: seq %d)",
			ReasonHeadMismatch, w.expect, w.expect.Seq, w.lastSeq)}, nil); err != nil {
			return VerifyResult{}, err
		}
	}
	return VerifyResult{Records: w.records, Head: Head{Seq: w.lastSeq, Hash: w.prev}, Problems: w.problems}, nil
}

// Snapshot copies the segment files of the journal in dir into a new
// temporary directory and returns its path and a cleanup func that removes
// it. The read-only tools (dump, verify, head) work on such a copy, so a
// running server is never disturbed and never disturbs them: they need no
// lock and no master key.
//
// Only segment files (and any tidwall/wal truncation files) are copied,
// not *.broken copies. A server may be appending while Snapshot copies: the copy is a prefix of
// the journal. If the last segment's final entry is incomplete and the file
// has grown since it was read, that entry was a write in flight and is left
// out; an incomplete entry in a file that did not grow is copied as it is,
// so Verify still reports a real torn tail.
func Snapshot(dir string) (copyDir string, cleanup func(), err error) {
	segs, temps, err := listSegments(dir)
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "guarded-exchange-journal-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	for i, s := range segs {
		data, err := os.ReadFile(s.path)
		if err != nil {
			cleanup()
			return "", nil, err
		}
		if i == len(segs)-1 {
			if fi, err := os.Stat(s.path); err == nil {
				data = snapshotTail(data, fi.Size())
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, s.name), data, filePerm); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	// Stray truncation files are copied too, so Verify on the copy still
	// reports them.
	for _, name := range temps {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, name), data, filePerm)
		}
		if err != nil {
			cleanup()
			return "", nil, err
		}
	}
	return tmp, cleanup, nil
}

// snapshotTail returns the copy of the last segment given the bytes read
// and the file's size just after: an incomplete final entry in a file that
// has grown since was a write in flight and is left out.
func snapshotTail(data []byte, sizeNow int64) []byte {
	if sizeNow <= int64(len(data)) {
		return data
	}
	return data[:completeEnd(data)]
}

// completeEnd returns the end of the last complete tidwall/wal entry in
// data (uvarint length + bytes), without looking inside the entries.
func completeEnd(data []byte) int {
	pos := 0
	for pos < len(data) {
		n, k := binary.Uvarint(data[pos:])
		if k <= 0 || n > uint64(len(data)-pos-k) {
			break
		}
		pos += k + int(n)
	}
	return pos
}
