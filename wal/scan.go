package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Problem reasons. Verify reports them in Problem.Reason and Open and Scan
// in DamageError.Reason. They are stable strings: scripts may match them.
const (
	// ReasonCRCMismatch: a frame's bytes do not match its CRC-32C.
	ReasonCRCMismatch = "crc mismatch"
	// ReasonCorrupt: a frame's structure is wrong (bad or non-canonical
	// length, a field over its limit, a frame that ends early) although
	// its tidwall/wal entry is complete.
	ReasonCorrupt = "corrupt record"
	// ReasonVersion: an intact frame of a version this build cannot read.
	ReasonVersion = "unknown record version"
	// ReasonHashMismatch: a frame's stored hash is not SHA-256 of its
	// prev_hash and contents (the record was altered and its CRC redone).
	ReasonHashMismatch = "hash mismatch"
	// ReasonChainBroken: a record's prev_hash is not the hash of the record
	// before it (a record was altered, inserted or replaced).
	ReasonChainBroken = "hash chain broken"
	// ReasonMissing: a sequence number is skipped. The problem's Seq is the
	// first missing one.
	ReasonMissing = "record missing"
	// ReasonOutOfOrder: a record's sequence number is lower than one already
	// seen (records were swapped or duplicated).
	ReasonOutOfOrder = "record out of order"
	// ReasonTornTail: the last segment ends with an incomplete entry (its
	// length prefix or its bytes run past the end of the file) whose bytes
	// are a prefix of the record that would follow the last good one: the
	// trace of a crash mid-write. Open cuts it off. A complete last entry
	// that fails to decode, or an incomplete one that contradicts the
	// chain, is damage, not a torn tail: Open refuses it.
	ReasonTornTail = "torn tail"
	// ReasonTrailingGarbage: the last segment ends with zero bytes up to
	// the end of the file after its last good record (a file system that
	// grew the file but never wrote it). Open cuts them off. Other stray
	// bytes are refused.
	ReasonTrailingGarbage = "trailing garbage"
	// ReasonSegmentTruncated: a segment that is not the last ends with an
	// incomplete entry. Open refuses.
	ReasonSegmentTruncated = "segment truncated"
	// ReasonSegmentName: a segment file's name (its first index) does not
	// match the sequence number of its first record.
	ReasonSegmentName = "segment name does not match its records"
	// ReasonTempFile: a tidwall/wal truncation file (*.START, *.END) is
	// present; this package never truncates, so something else touched the
	// journal.
	ReasonTempFile = "unexpected truncation file"
	// ReasonHeadMismatch prefixes the problem Verify reports when the
	// expected head is absent or differs: "head mismatch: expected SEQ:HASH, ...".
	ReasonHeadMismatch = "head mismatch"
	// ReasonEpochDown: a record's fencing epoch is lower than that of a
	// record before it: a writer of an older epoch appended after a newer
	// owner had (two owners wrote the chain at once), or a record with no
	// epoch follows fenced ones (docs/cluster.md).
	ReasonEpochDown = "epoch went down"
	// ReasonEpochUnowned: a record carries an epoch that no owner record
	// before it opened (VerifyOptions.OwnerType): a writer appended
	// without announcing its ownership.
	ReasonEpochUnowned = "epoch without owner record"
)

// maxProblems bounds what Verify lists; a wrecked journal would otherwise
// produce one problem per byte.
const maxProblems = 1000

// DamageError is returned by Open and Scan when the journal is damaged in a
// way this package will not repair: anything but the tail of the last
// segment. It names the segment file (base name) and the sequence number
// where the damage was found (for a missing record, the first missing seq;
// at a segment boundary, the earlier segment).
type DamageError struct {
	Segment string // segment file base name, e.g. "00000000000000000001"
	Seq     uint64 // sequence number at the damage
	Offset  int64  // byte offset of the damaged entry in Segment, -1 if none
	Reason  string // one of the Reason* constants
	Err     error  // the decoder error (ErrCorrupt, ErrTruncated, ErrVersion), if any
}

// Error names the segment and the sequence number.
func (e *DamageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wal: journal damaged: segment %s, seq %d", e.Segment, e.Seq)
	if e.Offset >= 0 {
		fmt.Fprintf(&b, ", offset %d", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(" (")
		b.WriteString(e.Err.Error())
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the decoder error, if any.
func (e *DamageError) Unwrap() error { return e.Err }

// Problem is one finding of Verify.
type Problem struct {
	Seq     uint64 // sequence number at the problem
	Segment string // segment file base name ("" for head mismatch)
	Offset  int64  // byte offset in Segment, -1 if none
	Reason  string // one of the Reason* constants, possibly with detail
}

// String formats a problem for a human.
func (p Problem) String() string {
	if p.Segment == "" {
		return fmt.Sprintf("seq %d: %s", p.Seq, p.Reason)
	}
	if p.Offset >= 0 {
		return fmt.Sprintf("segment %s, seq %d, offset %d: %s", p.Segment, p.Seq, p.Offset, p.Reason)
	}
	return fmt.Sprintf("segment %s, seq %d: %s", p.Segment, p.Seq, p.Reason)
}

// segFile is one tidwall/wal segment file: its name is its first index,
// zero-padded to 20 digits.
type segFile struct {
	name  string
	path  string
	index uint64
}

// listSegments returns the segment files of dir in index order and the
// names of any tidwall/wal truncation files. Other files (our *.broken
// copies, anything else) are ignored, as tidwall/wal ignores them.
func listSegments(dir string) (segs []segFile, temps []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || len(name) < 20 {
			continue
		}
		idx, perr := strconv.ParseUint(name[:20], 10, 64)
		if perr != nil || idx == 0 {
			continue
		}
		switch {
		case len(name) == 20:
			segs = append(segs, segFile{name: name, path: filepath.Join(dir, name), index: idx})
		case name[20:] == ".START" || name[20:] == ".END":
			temps = append(temps, name)
		}
	}
	slices.SortFunc(segs, func(a, b segFile) int {
		switch {
		case a.index < b.index:
			return -1
		case a.index > b.index:
			return 1
		}
		return 0
	})
	return segs, temps, nil
}

type walkMode int

const (
	// modeStrict (Scan): the first problem of any kind is a DamageError.
	modeStrict walkMode = iota
	// modeOpen: like modeStrict, except tail damage in the last segment is
	// recorded in walker.tail for Open to repair.
	modeOpen
	// modeVerify: collect every problem, resynchronize and go on.
	modeVerify
)

// tailDamage is damage at the end of the last segment with no valid frame
// after it: what Open may cut off.
type tailDamage struct {
	seg    segFile
	data   []byte // the whole segment as read
	off    int    // end of the last good entry
	reason string
}

// gap is a run of missing seqs Verify reported, so that a record turning
// up later re-labels it "out of order".
type gap struct {
	from, to uint64
	problem  int
}

// walker checks segment bytes: framing, CRC, seq continuity, the chain
// and each record's hash. One walker serves one pass; it is not safe for
// concurrent use.
type walker struct {
	// segments is how many segment files walkDir found.
	segments int
	mode     walkMode
	fn       func(Record) error

	next     uint64   // seq expected next (after reorders: max seen + 1)
	prev     [32]byte // hash of the last record read
	lastSeq  uint64   // seq of the last record read
	records  uint64   // records read with an intact frame
	resynced bool     // the next record follows a skipped damaged region
	prevSeg  string   // name of the previous segment

	h  hasher
	in interner

	problems   []Problem
	gaps       []gap
	expect     *Head
	expectSeen bool
	tail       *tailDamage

	// Fencing epochs (VersionEpoch frames): the greatest seen, and the
	// epoch of the last owner record (ownerType, 0: not checked).
	maxEpoch   uint64
	ownerType  uint16
	ownerEpoch uint64
}

func newWalker(mode walkMode, fn func(Record) error) *walker {
	return &walker{mode: mode, fn: fn, next: 1, prev: genesis}
}

// problem records p (modeVerify) or turns it into a DamageError.
func (w *walker) problem(p Problem, cause error) error {
	if w.mode != modeVerify {
		return &DamageError{Segment: p.Segment, Seq: p.Seq, Offset: p.Offset, Reason: p.Reason, Err: cause}
	}
	if len(w.problems) < maxProblems {
		w.problems = append(w.problems, p)
	} else if len(w.problems) == maxProblems {
		w.problems = append(w.problems, Problem{Seq: p.Seq, Segment: p.Segment, Offset: -1, Reason: "too many problems; listing stopped"})
	}
	return nil
}

// walkDir walks every segment of dir in order. It reads each file whole:
// segments are at most a few tens of MiB, and one read per file is the
// fastest way through them. It never goes through tidwall/wal's Read, which
// panics under concurrent readers (tidwall/wal#34) and would need the
// directory opened, which creates files.
func (w *walker) walkDir(dir string) error {
	segs, temps, err := listSegments(dir)
	if err != nil {
		return err
	}
	w.segments = len(segs)
	for _, t := range temps {
		if err := w.problem(Problem{Segment: t, Seq: w.next, Offset: -1, Reason: ReasonTempFile}, nil); err != nil {
			return err
		}
	}
	for i, s := range segs {
		data, err := os.ReadFile(s.path)
		if err != nil {
			return err
		}
		if err := w.walkSegment(s, data, i == len(segs)-1); err != nil {
			return err
		}
	}
	return nil
}

// walkSegment checks one segment's entries. Each tidwall/wal Binary entry
// is a uvarint length followed by that many bytes: our frame.
func (w *walker) walkSegment(s segFile, data []byte, last bool) error {
	defer func() { w.prevSeg = s.name }()
	first := true
	pos := 0
	for pos < len(data) {
		n, k := binary.Uvarint(data[pos:])
		complete := k > 0 && n <= uint64(len(data)-pos-k)
		var f frameView
		var perr error
		end := 0
		switch {
		case !complete:
			perr = errIncomplete
		case n > maxFrameLen:
			perr = errTooLong
			end = pos + k + int(n)
		default:
			end = pos + k + int(n)
			f, perr = parseFrame(data[pos+k : end : end])
		}
		if perr != nil {
			next, err := w.damaged(s, data, pos, end, perr, last)
			// Whatever comes next follows a region already reported.
			w.resynced = true
			if err != nil || next < 0 {
				return err
			}
			pos = next
			continue
		}
		if err := w.accept(s, &f, pos, first); err != nil {
			return err
		}
		first = false
		pos = end
	}
	if first && !w.resynced && s.index != w.next {
		// An empty segment still claims a first index.
		reason := ReasonSegmentName
		seq := w.next
		seg := s.name
		if s.index > w.next {
			reason = ReasonMissing
			if w.prevSeg != "" {
				seg = w.prevSeg
			}
		}
		return w.problem(Problem{Seq: seq, Segment: seg, Offset: -1, Reason: reason}, nil)
	}
	return nil
}

// errIncomplete marks a tidwall/wal entry whose length runs past the end
// of the file.
var errIncomplete = fmt.Errorf("%w: entry runs past the end of the segment", ErrTruncated)

// errLengthDamaged marks a last entry whose tidwall/wal length prefix is
// damaged: a whole frame with an intact CRC sits right after it.
var errLengthDamaged = fmt.Errorf("%w: damaged length prefix of a whole record", ErrCorrupt)

// damaged handles a bad entry at data[pos:] (end is its end, or 0 when it
// is incomplete). It returns where to continue in this segment, or -1 to
// stop reading it.
func (w *walker) damaged(s segFile, data []byte, pos, end int, perr error, last bool) (int, error) {
	q := w.resync(data, pos+1)
	if q < 0 && last && !errors.Is(perr, ErrVersion) {
		// Nothing valid follows in the last segment. It is cut only if
		// it is what a crash leaves (see tailVerdict).
		reason, cause := w.tailVerdict(data, pos, perr)
		if cause == nil {
			if w.mode == modeOpen {
				w.tail = &tailDamage{seg: s, data: data, off: pos, reason: reason}
				return -1, nil
			}
			return -1, w.problem(Problem{Seq: w.next, Segment: s.name, Offset: int64(pos), Reason: reason}, perr)
		}
		perr = cause
	}
	reason := ReasonCorrupt
	switch {
	case errors.Is(perr, errCRC):
		reason = ReasonCRCMismatch
	case errors.Is(perr, ErrVersion):
		reason = ReasonVersion
	case end == 0 && q < 0 && !last:
		reason = ReasonSegmentTruncated
	}
	if err := w.problem(Problem{Seq: w.next, Segment: s.name, Offset: int64(pos), Reason: reason}, perr); err != nil {
		return 0, err
	}
	return q, nil
}

// tailVerdict decides what the bytes data[pos:] after the last good record
// of the last segment are, when no intact frame follows them anywhere. It
// returns the reason to cut them with (ReasonTornTail or
// ReasonTrailingGarbage) and a nil error when they are what a crash
// leaves, and the error to refuse with otherwise.
//
// Every Append is one tidwall/wal WriteBatch: one write(2) of
// uvarint(len)|frame for each record of the batch, then one fsync. A crash
// before the fsync returned leaves, after the last record that made it
// whole, either
//
//   - a strict prefix of the next entry: its length prefix runs past the
//     end of the file, or the file ends before the bytes the prefix
//     announces; those bytes are exactly what the writer wrote, so they
//     name the next seq, chain from the last good record, and agree with
//     their own length, field lengths, hash and CRC as far as they go; or
//   - zero fill to the end of the file (a file system that grew the file
//     but never wrote the blocks).
//
// Only these two are cut. Everything else is refused: a complete entry
// (whatever is wrong with it: the writer never leaves a complete entry
// that fails to decode), an incomplete one that contradicts the chain or
// itself, bytes that are not all zero after zero bytes, and an intact
// frame 1 to 10 bytes after pos (a whole record whose length prefix was
// damaged). A refusal loses nothing; a wrong cut loses an acknowledged
// record.
func (w *walker) tailVerdict(data []byte, pos int, perr error) (string, error) {
	tail := data[pos:]
	if allZero(tail) {
		return ReasonTrailingGarbage, nil
	}
	for s := pos + 1; s <= pos+binary.MaxVarintLen64 && s < len(data); s++ {
		if intactFrameAt(data[s:]) {
			return "", errLengthDamaged
		}
	}
	n, k := binary.Uvarint(tail)
	if k > 0 && n <= uint64(len(tail)-k) {
		// A complete entry: damage, never a torn write.
		return "", perr
	}
	if !w.continuesChain(tail) {
		return "", errTornMismatch
	}
	return ReasonTornTail, nil
}

// errTornMismatch marks an incomplete last entry whose bytes are not a
// prefix of the record that would follow the last good one.
var errTornMismatch = fmt.Errorf("%w: incomplete last entry does not continue the chain", ErrCorrupt)

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// continuesChain reports whether b, an incomplete tidwall/wal entry, is a
// strict prefix of an entry the writer could have written next: a minimal
// length prefix within the frame limits, then a version-1 frame carrying
// seq w.next and prev_hash w.prev, minimal field lengths within their
// limits that add up to the announced length, and the hash and CRC those
// bytes give, each as far as the bytes go.
func (w *walker) continuesChain(b []byte) bool {
	n, k := binary.Uvarint(b)
	switch {
	case k < 0:
		return false
	case k == 0:
		// The length prefix itself is cut. Every byte so far carries the
		// continuation bit; at least one more byte must follow, so the
		// length is at least 1<<(7*len(b)).
		return len(b) < uvarintLen(maxFrameLen) && uint64(1)<<(7*len(b)) <= maxFrameLen
	case k != uvarintLen(n) || n < minFrameLen || n > maxFrameLen || n <= uint64(len(b)-k):
		return false
	}
	fr := b[k:]
	size := int(n)

	if len(fr) == 0 {
		return true
	}
	// The version: a fenced journal (an epoch seen) is written on with
	// VersionEpoch frames only.
	v := fr[offVersion]
	if v != VersionEpoch && (v != Version || w.maxEpoch != 0) {
		return false
	}
	// The fixed part: type and time can be anything.
	var want [fixedLen]byte
	want[offVersion] = v
	binary.BigEndian.PutUint64(want[offSeq:], w.next)
	copy(want[offPrev:], w.prev[:])
	for i := range min(len(fr), fixedLen) {
		if (i == offVersion || i >= offSeq) && fr[i] != want[i] {
			return false
		}
	}
	// The epoch, if any, can be anything.
	off := fieldsAt(v)
	if len(fr) <= off {
		return true
	}

	// The four fields, as far as they go.
	for i := 0; i < 4; i++ {
		limit := MaxFieldLen
		if i == 3 {
			limit = MaxPayloadLen
		}
		l, lk := binary.Uvarint(fr[off:])
		switch {
		case lk < 0:
			return false
		case lk == 0:
			// Cut inside the field's length: it must still be able to
			// fit the limit and the announced size.
			rest := fr[off:]
			return len(rest) < uvarintLen(uint64(limit)) && uint64(1)<<(7*len(rest)) <= uint64(limit) &&
				off+len(rest)+1+(1<<(7*len(rest)))+trailerLen <= size
		case lk != uvarintLen(l) || l > uint64(limit) || off+lk+int(l)+trailerLen > size:
			return false
		}
		off += lk + int(l)
		if i == 3 && off+trailerLen != size {
			// The fields must fill the announced length exactly.
			return false
		}
		if off >= len(fr) {
			// Cut inside the field, or right after it.
			return true
		}
	}
	// The hash and the CRC the writer computed, as far as they are there.
	sum := w.h.sum(fr[fixedLen-hashLen:fixedLen], fr[:off])
	got := fr[off:]
	if !bytes.Equal(got[:min(len(got), hashLen)], sum[:min(len(got), hashLen)]) {
		return false
	}
	if len(got) <= hashLen {
		return true
	}
	var crc [crcLen]byte
	binary.BigEndian.PutUint32(crc[:], crc32.Checksum(fr[:off+hashLen], castagnoli))
	return bytes.Equal(got[hashLen:], crc[:len(got)-hashLen])
}

// intactFrameAt reports whether b starts with a whole version-1 frame
// (its own field lengths say where it ends) whose CRC is intact,
// regardless of what follows it.
func intactFrameAt(b []byte) bool {
	if len(b) < minFrameLen || (b[offVersion] != Version && b[offVersion] != VersionEpoch) {
		return false
	}
	off := fieldsAt(b[offVersion])
	for i := 0; i < 4; i++ {
		limit := MaxFieldLen
		if i == 3 {
			limit = MaxPayloadLen
		}
		var err error
		if _, off, err = readField(b, off, limit); err != nil {
			return false
		}
	}
	n := off + trailerLen
	if n > len(b) {
		return false
	}
	return crc32.Checksum(b[:n-crcLen], castagnoli) == binary.BigEndian.Uint32(b[n-crcLen:n])
}

// resync looks for the next offset in data, from from on, where a whole
// version-1 frame with an intact CRC starts: evidence that records follow
// the damage, so it is not a torn tail. The cheap checks (length, version
// byte, a plausible seq) go first, so zero fill and random garbage cost
// little.
func (w *walker) resync(data []byte, from int) int {
	maxSeq := w.next + uint64(len(data))
	for q := from; q+1+minFrameLen <= len(data); q++ {
		n, k := binary.Uvarint(data[q:])
		if k <= 0 || n < minFrameLen || n > maxFrameLen || n > uint64(len(data)-q-k) {
			continue
		}
		b := data[q+k : q+k+int(n)]
		if b[offVersion] != Version && b[offVersion] != VersionEpoch {
			continue
		}
		if seq := binary.BigEndian.Uint64(b[offSeq:]); seq == 0 || seq > maxSeq {
			continue
		}
		if crc32.Checksum(b[:len(b)-crcLen], castagnoli) == binary.BigEndian.Uint32(b[len(b)-crcLen:]) {
			return q
		}
	}
	return -1
}

// accept checks an intact frame against the records before it, then hands
// it to fn.
func (w *walker) accept(s segFile, f *frameView, off int, first bool) error {
	w.records++
	resynced := w.resynced
	w.resynced = false
	p := func(seq uint64, seg, reason string) error {
		return w.problem(Problem{Seq: seq, Segment: seg, Offset: int64(off), Reason: reason}, nil)
	}
	if first && f.seq != s.index && !resynced {
		if err := p(f.seq, s.name, ReasonSegmentName); err != nil {
			return err
		}
	}
	switch {
	case f.seq == w.next:
		if !resynced && !bytes.Equal(f.prev, w.prev[:]) {
			if err := p(f.seq, s.name, ReasonChainBroken); err != nil {
				return err
			}
		}
	case f.seq > w.next:
		// After a skipped damaged region the gap was reported already.
		if !resynced {
			seg := s.name
			if first && w.prevSeg != "" {
				// At a segment boundary the earlier segment most likely
				// lost its end.
				seg = w.prevSeg
			}
			if w.mode == modeVerify && len(w.gaps) < maxProblems {
				w.gaps = append(w.gaps, gap{from: w.next, to: f.seq - 1, problem: len(w.problems)})
			}
			if err := p(w.next, seg, ReasonMissing); err != nil {
				return err
			}
		}
	default:
		if err := p(f.seq, s.name, ReasonOutOfOrder); err != nil {
			return err
		}
		for _, g := range w.gaps {
			if g.from <= f.seq && f.seq <= g.to && g.problem < len(w.problems) {
				w.problems[g.problem].Reason = ReasonOutOfOrder
			}
		}
	}
	if !f.checkHash(&w.h) {
		if err := w.problem(Problem{Seq: f.seq, Segment: s.name, Offset: int64(off), Reason: ReasonHashMismatch}, errHash); err != nil {
			return err
		}
	}
	if err := w.checkEpoch(s, f, off); err != nil {
		return err
	}
	if f.seq >= w.next {
		w.next = f.seq + 1
	}
	w.prev = [32]byte(f.hash)
	w.lastSeq = f.seq
	if w.expect != nil && f.seq == w.expect.Seq {
		w.expectSeen = true
		if w.prev != w.expect.Hash {
			if err := w.problem(Problem{Seq: f.seq, Segment: s.name, Offset: int64(off),
				Reason: fmt.Sprintf("%s: expected %s, journal has %s", ReasonHeadMismatch, w.expect, Head{Seq: f.seq, Hash: w.prev})}, nil); err != nil {
				return err
			}
		}
	}
	if w.fn != nil {
		if err := w.fn(f.record(&w.in)); err != nil {
			return err
		}
	}
	return nil
}

// checkEpoch checks a record's fencing epoch against the records before
// it (Verify only; Open and Scan only note the greatest epoch): epochs
// never go down along the chain, and with an owner type, every epoch is
// opened by its owner record before any other record carries it.
func (w *walker) checkEpoch(s segFile, f *frameView, off int) error {
	e := f.epoch
	defer func() { w.maxEpoch = max(w.maxEpoch, e) }()
	if w.mode != modeVerify {
		return nil
	}
	reason := ""
	switch {
	case e < w.maxEpoch:
		reason = ReasonEpochDown
	case w.ownerType == 0 || e == 0:
	case f.typ == w.ownerType:
		w.ownerEpoch = e
	case e != w.ownerEpoch:
		reason = ReasonEpochUnowned
	}
	if reason == "" {
		return nil
	}
	return w.problem(Problem{Seq: f.seq, Segment: s.name, Offset: int64(off), Reason: reason}, nil)
}

// Scan reads every record of the journal in dir, in order, read-only, and
// calls fn with each. It parses the segment files itself (it does not open
// them through tidwall/wal, so it never creates, repairs or locks
// anything), checking CRC, seq continuity and the hash chain. The first
// problem of any kind, a torn tail included, stops the scan with a
// *DamageError after fn has seen every record before it. An error from fn
// stops the scan and is returned as is.
//
// A Record's Payload points into a buffer Scan never reuses; fn may keep it.
// Run Scan on a Snapshot when a server may be writing to dir.
func Scan(dir string, fn func(Record) error) error {
	return newWalker(modeStrict, fn).walkDir(dir)
}
