package wal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	twal "github.com/tidwall/wal"
)

// DefaultSegmentSize is the segment size used when Options.SegmentSize is
// 0. tidwall/wal keeps the whole tail segment in memory (and Open reads
// it in full), so it bounds what the journal holds in RAM: 4 MiB, about
// 1,200 orders' records (D146).
const DefaultSegmentSize = 4 << 20

// File modes: the journal holds no secrets, but it is a user's trading
// history, so it is private to the server's OS user.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

var (
	// ErrFailed wraps the first write or fsync error of a Log. After it, the
	// Log refuses every Append with the same error: memory may be ahead of
	// disk (tidwall/wal advances its index before the fsync succeeds), and
	// retrying an fsync can report success for data the kernel dropped.
	// Close the Log and Open the directory again.
	ErrFailed = errors.New("wal: journal write failed; journal is read-only until reopened")
	// ErrClosed is returned by Append after Close, and by a second Close.
	ErrClosed = errors.New("wal: log closed")
	// ErrInvalidEntry is returned by Append, before anything is written,
	// when an Entry breaks a limit (field length, UTF-8, JSON payload, a
	// time outside the int64-nanosecond range). It is not sticky.
	ErrInvalidEntry = errors.New("wal: invalid entry")
	// ErrStaleEpoch is returned by Open when Options.Epoch is lower than
	// the epoch of a record already in the journal: a newer owner has
	// written to it, and this one must not (docs/cluster.md).
	ErrStaleEpoch = errors.New("wal: the journal holds records of a newer epoch")
	// ErrFenced is returned by Append when Options.Fence says this writer
	// no longer owns the journal (a cluster shard whose lock is lost,
	// docs/cluster.md "Fenced appends"): before the write, nothing was
	// written; after the fsync, the batch is in the file but was never
	// acknowledged. Like ErrFailed it is sticky: every later Append
	// returns it, whatever the fence says then.
	ErrFenced = errors.New("wal: this writer no longer owns the journal (fenced)")
)

// Options configures Open. The zero value is valid.
type Options struct {
	// SegmentSize is the target size of a segment file in bytes; a new
	// segment starts once the current one reaches it. Zero means
	// DefaultSegmentSize (4 MiB). It can change between opens.
	SegmentSize int
	// OnRecord, if not nil, is called with every record, in seq order,
	// during Open's verification pass, so the caller can rebuild its state
	// in the same read. An error stops Open and is returned. Records seen
	// before Open later fails (damage found further on) must be discarded
	// by the caller. Record.Payload points into a read buffer that is never
	// reused; keeping it keeps that segment's buffer alive, so copy what
	// you keep long-term.
	OnRecord func(Record) error
	// Now gives the time for entries whose Time is zero. Nil means
	// time.Now.
	Now func() time.Time
	// Epoch, when not zero, is the fencing epoch of the writer (a shard
	// owner's lock revision, docs/cluster.md): every record it appends is
	// a VersionEpoch frame carrying it, and Open refuses (ErrStaleEpoch)
	// a journal that already holds a record of a greater epoch. Zero (a
	// local journal) writes Version frames, as before.
	Epoch uint64
	// Fence, when not nil, is asked by every Append before it writes and
	// again after its fsync: false means this writer no longer owns the
	// journal (a shard lock's Held, docs/cluster.md), and Append fails
	// with ErrFenced, then and ever after. It must be cheap and safe to
	// call from the writing goroutine.
	Fence func() bool
}

// Recovery says what Open found and did. The caller journals a
// recovered_torn_tail record itself when TornTail is set: this package does
// not know record type names.
type Recovery struct {
	// TornTail is set when Open cut damage off the end of the last segment.
	TornTail bool
	// Reason is ReasonTornTail or ReasonTrailingGarbage when TornTail is set.
	Reason string
	// DroppedBytes is how many bytes were cut off.
	DroppedBytes int64
	// LastGoodSeq is the seq of the last record kept (0 for an empty
	// journal); it is the Log's head after Open.
	LastGoodSeq uint64
	// Segment is the base name of the segment that was cut.
	Segment string
	// BrokenCopy is the path of the copy of that segment taken before the
	// cut (Segment + ".broken", or ".broken.N" if that exists).
	BrokenCopy string
}

// Log is the journal's writer: it appends hash-chained, CRC-framed records
// to a tidwall/wal log with one fsync per Append.
//
// A Log is NOT safe for concurrent use. Exactly one goroutine owns it (the
// journal actor's flusher) and calls Append, Head and Close. It takes no
// lock on the directory: the caller holds the home's flock before Open, and
// no other process may open the directory for writing meanwhile
// (tidwall/wal has no lock and two writers corrupt the log). Readers use
// Snapshot + Scan/Verify/Dump, never the Log.
type Log struct {
	// Fixed at Open.
	dir     string
	segSize int
	now     func() time.Time
	epoch   uint64
	fence   func() bool

	// Owned by the single writer goroutine.
	w         *twal.Log
	seq       uint64   // last seq written (0: empty)
	hash      [32]byte // hash of record seq (genesis when empty)
	tailBytes int      // bytes in tidwall's tail segment buffer, to see rotations
	batch     twal.Batch
	frames    []byte
	h         hasher
	err       error // sticky: the first write failure, wrapped in ErrFailed
	closed    bool

	// Test hooks; nil in production.
	hookWriteBatch func(*twal.Batch) error
	hookSyncDir    func(string) error
}

// Open opens (creating if needed) the journal in dir for writing.
//
// Before tidwall/wal sees the files, Open reads every segment itself and
// checks framing, CRC, seq continuity, each hash and the chain from the
// genesis value, calling opts.OnRecord for every record in order. What a
// crash leaves at the end of the last segment with no valid record after
// it (an incomplete final entry that continues the chain as far as it
// goes, or zero fill to the end of the file) is repaired: the
// segment is copied to "<name>.broken", truncated after its last good
// record, and the file and directory are fsynced; Recovery says what was
// dropped. A complete last entry that fails to decode, an incomplete one
// that contradicts the chain, and stray bytes are damage, not a torn
// write; they and damage anywhere else return a *DamageError naming the
// segment and seq, and nothing is changed.
//
// The repair is ours because tidwall/wal has none: a torn last entry makes
// its Open fail with ErrCorrupt (tidwall/wal#21), and zero fill opens as
// phantom empty entries. The full read is ours because tidwall/wal parses
// only the last segment at open.
//
// The caller must hold the home's lock (see Log).
func Open(dir string, opts Options) (*Log, *Recovery, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Log{dir: dir, segSize: opts.SegmentSize, now: opts.Now, epoch: opts.Epoch, fence: opts.Fence}
	if err := l.makeDir(); err != nil {
		return nil, nil, err
	}

	w := newWalker(modeOpen, opts.OnRecord)
	if err := w.walkDir(dir); err != nil {
		return nil, nil, err
	}
	if opts.Epoch != 0 && w.maxEpoch > opts.Epoch {
		return nil, nil, fmt.Errorf("%w: %d, this writer's is %d", ErrStaleEpoch, w.maxEpoch, opts.Epoch)
	}
	rec := &Recovery{}
	if t := w.tail; t != nil {
		broken, err := l.repairTail(t)
		if err != nil {
			return nil, nil, err
		}
		*rec = Recovery{
			TornTail:     true,
			Reason:       t.reason,
			DroppedBytes: int64(len(t.data) - t.off),
			Segment:      t.seg.name,
			BrokenCopy:   broken,
		}
	}
	rec.LastGoodSeq = w.lastSeq

	tw, err := twal.Open(dir, &twal.Options{
		NoSync:           false,
		SegmentSize:      opts.SegmentSize,
		LogFormat:        twal.Binary,
		SegmentCacheSize: 1, // we never Read through tidwall/wal
		DirPerms:         dirPerm,
		FilePerms:        filePerm,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	last, err := tw.LastIndex()
	if err == nil && last != w.lastSeq {
		err = fmt.Errorf("wal: tidwall/wal reports last index %d, records end at seq %d", last, w.lastSeq)
	}
	if err == nil && w.segments == 0 {
		// tidwall/wal has created the first segment; it never fsyncs the
		// directory. With segments there already it creates none, and
		// the Open that created them made them durable.
		err = l.syncDir()
	}
	if err == nil {
		l.tailBytes, err = tailSize(dir)
	}
	if err != nil {
		tw.Close()
		return nil, nil, err
	}
	l.w = tw
	l.seq = w.lastSeq
	l.hash = w.prev
	return l, rec, nil
}

// makeDir creates dir if it is missing and makes its entry durable.
func (l *Log) makeDir() error {
	if _, err := os.Stat(l.dir); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(l.dir, dirPerm); err != nil {
		return err
	}
	return syncDir(filepath.Dir(filepath.Clean(l.dir)))
}

// tailSize returns the size of the last segment file, which is what
// tidwall/wal loads as its tail buffer.
func tailSize(dir string) (int, error) {
	segs, _, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	fi, err := os.Stat(segs[len(segs)-1].path)
	if err != nil {
		return 0, err
	}
	return int(fi.Size()), nil
}

// repairTail keeps a copy of the damaged last segment, cuts it after its
// last good entry and fsyncs file and directory (etcd's repair.go does the
// same). Only the last segment is ever cut.
func (l *Log) repairTail(t *tailDamage) (string, error) {
	broken := t.seg.path + ".broken"
	for i := 2; ; i++ {
		if _, err := os.Lstat(broken); errors.Is(err, os.ErrNotExist) {
			break
		}
		broken = fmt.Sprintf("%s.broken.%d", t.seg.path, i)
	}
	if err := writeFileSync(broken, t.data); err != nil {
		return "", fmt.Errorf("wal: repair: copy %s: %w", t.seg.name, err)
	}
	f, err := os.OpenFile(t.seg.path, os.O_WRONLY, 0)
	if err != nil {
		return "", fmt.Errorf("wal: repair: %w", err)
	}
	err = f.Truncate(int64(t.off))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.syncDir()
	}
	if err != nil {
		return "", fmt.Errorf("wal: repair: truncate %s: %w", t.seg.name, err)
	}
	return broken, nil
}

// writeFileSync writes a new file and fsyncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs a directory so that file creations, renames and
// truncations in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *Log) syncDir() error {
	if l.hookSyncDir != nil {
		return l.hookSyncDir(l.dir)
	}
	return syncDir(l.dir)
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
	// emptyPayload is what an empty Entry.Payload is stored as.
	emptyPayload = []byte("{}")
)

// checkEntry enforces the limits a reader relies on.
// ValidateEntry reports why Append would refuse e (ErrInvalidEntry), or
// nil. The journal actor uses it to single out a bad entry of a refused
// batch.
func ValidateEntry(e Entry) error {
	if err := checkEntry(&e); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidEntry, err)
	}
	return nil
}

func checkEntry(e *Entry) error {
	for _, f := range [...]struct{ name, v string }{{"user", e.User}, {"actor", e.Actor}, {"channel", e.Channel}} {
		if len(f.v) > MaxFieldLen {
			return fmt.Errorf("%s longer than %d bytes", f.name, MaxFieldLen)
		}
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("%s is not valid UTF-8", f.name)
		}
	}
	if len(e.Payload) > MaxPayloadLen {
		return fmt.Errorf("payload longer than %d bytes", MaxPayloadLen)
	}
	if len(e.Payload) > 0 && !json.Valid(e.Payload) {
		return errors.New("payload is not valid JSON")
	}
	if !e.Time.IsZero() && (e.Time.Before(minTime) || e.Time.After(maxTime)) {
		return errors.New("time outside the int64 nanosecond range")
	}
	return nil
}

// Append journals entries as consecutive records with ONE tidwall/wal
// WriteBatch, that is one write and one fsync, and returns the sealed
// records only after that fsync (and, if a segment may have rotated, a
// directory fsync) succeeded. A record Append returned is durable.
//
// An invalid entry fails the whole call with ErrInvalidEntry and writes
// nothing. A write or fsync failure is sticky: this and every later Append
// return the same error, wrapping ErrFailed; nothing is retried. Append with
// no entries returns nil, nil. With Options.Fence, a fence that says no
// before the write or after the fsync fails this and every later Append
// with ErrFenced.
func (l *Log) Append(entries []Entry) ([]Record, error) {
	if l.err != nil {
		return nil, l.err
	}
	if l.closed {
		return nil, ErrClosed
	}
	if len(entries) == 0 {
		return nil, nil
	}
	if l.fence != nil && !l.fence() {
		l.err = ErrFenced
		return nil, l.err
	}
	payloadLen := 0
	for i := range entries {
		if err := checkEntry(&entries[i]); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrInvalidEntry, i, err)
		}
		payloadLen += max(len(entries[i].Payload), len(emptyPayload))
	}

	recs := make([]Record, len(entries))
	payloads := make([]byte, 0, payloadLen) // one copy for all returned payloads
	l.batch.Clear()
	l.frames = l.frames[:0]
	seq, prev := l.seq, l.hash
	var now time.Time
	sizes := make([]int, 0, len(entries)) // bytes each entry takes in the segment
	for i := range entries {
		e := &entries[i]
		ts := e.Time
		if ts.IsZero() {
			if now.IsZero() {
				now = l.now()
			}
			ts = now
		}
		payload := e.Payload
		if len(payload) == 0 {
			payload = emptyPayload
		}
		seq++
		start := len(l.frames)
		var sum [32]byte
		// The bytes written (big-endian integers; see appendFrame):
		// version(1) | type(2) | time ns(8) | seq(8) | prev_hash(32) |
		// [epoch(8), VersionEpoch only] | uvarint+user | uvarint+actor | uvarint+channel | uvarint+payload |
		// hash(32) = SHA-256(prev_hash || all before) | CRC-32C(4) of all before.
		l.frames, sum = appendFrame(l.frames, &l.h, seq, e.Type, ts.UnixNano(), &prev, l.epoch, e.User, e.Actor, e.Channel, payload)
		frame := l.frames[start:]
		l.batch.Write(seq, frame) // tidwall/wal adds: uvarint(len(frame)) | frame
		sizes = append(sizes, uvarintLen(uint64(len(frame)))+len(frame))
		p0 := len(payloads)
		payloads = append(payloads, payload...)
		recs[i] = Record{
			Seq:      seq,
			Time:     time.Unix(0, ts.UnixNano()).UTC(),
			Type:     e.Type,
			User:     e.User,
			Actor:    e.Actor,
			Channel:  e.Channel,
			Payload:  payloads[p0:len(payloads):len(payloads)],
			PrevHash: prev,
			Hash:     sum,
			Epoch:    l.epoch,
		}
		prev = sum
	}

	write := l.w.WriteBatch
	if l.hookWriteBatch != nil {
		write = l.hookWriteBatch
	}
	if err := write(&l.batch); err != nil {
		return nil, l.fail(err)
	}
	if l.rotated(sizes) {
		// tidwall/wal created a segment file and fsynced the data, but
		// never the directory entry.
		if err := l.syncDir(); err != nil {
			return nil, l.fail(err)
		}
	}
	l.seq, l.hash = seq, prev
	if l.fence != nil && !l.fence() {
		// Durable but not acknowledged: the lock may have passed to
		// another writer during the write (docs/cluster.md "Failure
		// model").
		l.err = ErrFenced
		return nil, l.err
	}
	return recs, nil
}

// fail makes err the Log's sticky error.
func (l *Log) fail(err error) error {
	l.err = fmt.Errorf("%w: %w", ErrFailed, err)
	return l.err
}

// rotated mirrors tidwall/wal's writeBatch: it cycles to a new segment when
// the tail buffer is over SegmentSize before a batch, or reaches it after
// an entry. It reports whether that happened and tracks the tail size.
func (l *Log) rotated(sizes []int) bool {
	r := false
	if l.tailBytes > l.segSize {
		r, l.tailBytes = true, 0
	}
	for _, n := range sizes {
		l.tailBytes += n
		if l.tailBytes >= l.segSize {
			r, l.tailBytes = true, 0
		}
	}
	return r
}

// Head returns the seq and hash of the last record (0 and GenesisHash for
// an empty journal): what `journal head` prints for external checkpoints.
func (l *Log) Head() (seq uint64, hash [32]byte) { return l.seq, l.hash }

// Err returns the sticky write error, or nil.
func (l *Log) Err() error { return l.err }

// Close fsyncs and closes the log. After a failure it still closes the
// file and returns the close error, if any. A second Close returns
// ErrClosed.
func (l *Log) Close() error {
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	return l.w.Close()
}

// Owned reports whether Options.Fence still says this writer owns the
// journal (true without a fence). It does not write; a venue write of the
// journal's owner asks it just before it leaves (docs/cluster.md "Fenced
// venue writes").
func (l *Log) Owned() bool { return l.fence == nil || l.fence() }
