package wal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Version is the frame version this package writes (the first byte of every
// frame). Every version, present and future, ends its frame with a CRC-32C
// of all bytes before it, so a reader can tell a newer record it cannot parse
// from a damaged one.
const Version = 1

// VersionEpoch is the frame version of a fenced journal (a shard of a
// cluster, docs/cluster.md): a version 1 frame with the writer's epoch, a
// uint64, between prev_hash and the fields. A Log opened with an Epoch
// writes it; a Log without one writes Version frames, byte for byte as
// before. Readers take both.
const VersionEpoch = 2

// Limits on the variable-length fields. A writer refuses an Entry that
// exceeds them and a reader treats a frame that exceeds them as corrupt, so a
// damaged length can never make the reader look far or allocate much.
const (
	// MaxFieldLen is the longest user, actor or channel, in bytes.
	MaxFieldLen = 1024
	// MaxPayloadLen is the longest payload, in bytes (4 MiB).
	MaxPayloadLen = 4 << 20
	// maxFrameLen bounds a whole frame: fixed part, four fields with
	// their uvarint lengths, hash and CRC.
	maxFrameLen = fixedLen + epochLen + 3*(binary.MaxVarintLen64+MaxFieldLen) + binary.MaxVarintLen64 + MaxPayloadLen + trailerLen
)

// Offsets of the fixed part of a version 1 frame (see doc.go).
const (
	offVersion = 0
	offType    = 1
	offTime    = 3
	offSeq     = 11
	offPrev    = 19
	fixedLen   = 51 // version + type + time + seq + prev_hash
	epochLen   = 8  // a VersionEpoch frame's epoch, after prev_hash
	hashLen    = 32
	crcLen     = 4
	trailerLen = hashLen + crcLen
	// minFrameLen is the fixed part, four empty fields (one zero byte
	// each), hash and CRC.
	minFrameLen = fixedLen + 4 + trailerLen
)

// Decoder errors. They are distinct from io.ErrUnexpectedEOF and from each
// other; errors.Is matches them through any detail the decoder adds.
var (
	// ErrTruncated means a frame is shorter than its own fields say: the
	// record ends early.
	ErrTruncated = errors.New("wal: record ends early")
	// ErrCorrupt means a frame is damaged: a CRC mismatch, a bad length,
	// a non-canonical encoding, extra bytes or a wrong hash.
	ErrCorrupt = errors.New("wal: corrupt record")
	// ErrVersion means a frame carries an intact CRC but a version byte this
	// build does not know: it was written by a newer guarded-exchange.
	ErrVersion = errors.New("wal: unknown record version")
)

// Decoder error details, made once so the hot path never formats.
var (
	errEmpty        = fmt.Errorf("%w: empty frame", ErrTruncated)
	errShort        = fmt.Errorf("%w: shorter than the fixed part", ErrTruncated)
	errFieldShort   = fmt.Errorf("%w: field runs past the end", ErrTruncated)
	errNoTrailer    = fmt.Errorf("%w: no room for hash and crc", ErrTruncated)
	errCRC          = fmt.Errorf("%w: crc mismatch", ErrCorrupt)
	errVarint       = fmt.Errorf("%w: bad length", ErrCorrupt)
	errNonCanonical = fmt.Errorf("%w: non-canonical length", ErrCorrupt)
	errTooLong      = fmt.Errorf("%w: field longer than the limit", ErrCorrupt)
	errExtra        = fmt.Errorf("%w: extra bytes before the hash", ErrCorrupt)
	errHash         = fmt.Errorf("%w: hash mismatch", ErrCorrupt)
	errZeroVersion  = fmt.Errorf("%w: version 0", ErrCorrupt)
	errBadVersion   = fmt.Errorf("%w: unknown version with intact crc", ErrVersion)
	errZeroEpoch    = fmt.Errorf("%w: epoch frame with epoch 0", ErrCorrupt)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// genesisText is hashed to give the prev_hash of record 1.
const genesisText = "guarded-exchange journal genesis v1"

// GenesisHex is GenesisHash in lowercase hex: SHA-256 of the ASCII text
// "guarded-exchange journal genesis v1". Record 1 chains from it.
const GenesisHex = "763de3192cea616fa29102cfcb40a21a10f801525e440af8cc0b86b77a9cd637"

var genesis = sha256.Sum256([]byte(genesisText))

// GenesisHash returns the fixed prev_hash of record 1 (see GenesisHex). It
// is a function, not a variable, so no caller can change it.
func GenesisHash() [32]byte { return genesis }

// fieldsAt returns where the fields start in a frame of version v.
func fieldsAt(v byte) int {
	if v == VersionEpoch {
		return fixedLen + epochLen
	}
	return fixedLen
}

// Record is one journal record as stored. Seq is the tidwall/wal index:
// 1-based and contiguous. Time is UTC with nanosecond precision. Payload is
// JSON (an empty payload stands for "{}"). Hash = SHA-256(PrevHash || the
// frame bytes before the hash field).
type Record struct {
	Seq      uint64
	Time     time.Time
	Type     uint16
	User     string
	Actor    string // who caused it, e.g. "mcp:agent", "cli:admin"
	Channel  string // optional
	Payload  []byte
	PrevHash [32]byte
	Hash     [32]byte
	// Epoch is the fencing epoch of the writer that wrote the record (a
	// VersionEpoch frame), 0 for a Version frame (a local journal).
	Epoch uint64
}

// Entry is what a writer gives Append: the record without its sequence
// number and hashes, which the Log assigns. A zero Time means "now" (the
// Log's Options.Now). Payload must be valid JSON or empty (stored as "{}").
type Entry struct {
	Time    time.Time
	Type    uint16
	User    string
	Actor   string
	Channel string
	Payload []byte
}

// frameView is a parsed frame whose slices point into the frame bytes. The
// hot scan path uses it to avoid copying.
type frameView struct {
	typ     uint16
	ts      int64
	seq     uint64
	prev    []byte // 32 bytes
	epoch   uint64 // 0 in a Version frame
	user    []byte
	actor   []byte
	channel []byte
	payload []byte
	body    []byte // frame[:N], the bytes hashed after prev_hash
	hash    []byte // 32 bytes
}

// hasher computes record hashes with one reusable buffer. The zero value is
// ready to use; it is not safe for concurrent use.
type hasher struct{ buf []byte }

// sum returns SHA-256(prev || body).
func (h *hasher) sum(prev, body []byte) [32]byte {
	h.buf = append(append(h.buf[:0], prev...), body...)
	return sha256.Sum256(h.buf)
}

// appendFrame appends the version 1 frame of one record to dst and returns
// the extended slice and the record's hash.
//
// The bytes written, in order (integers big-endian):
//
//	+---------+---------+-----------+---------+---------------+
//	| version | type    | time ns   | seq     | prev_hash     |
//	| 1 byte  | uint16  | int64     | uint64  | 32 bytes      |
//	+---------+---------+-----------+---------+---------------+
//	| uvarint len | user | uvarint len | actor                 |
//	| uvarint len | channel | uvarint len | payload            |
//	+---------------------------------------------------------+
//	| hash = SHA-256(prev_hash || all bytes above)  32 bytes  |
//	+---------------------------------------------------------+
//	| CRC-32C (Castagnoli) of all bytes above       4 bytes   |
//	+---------------------------------------------------------+
//
// Lengths are minimal uvarints, so every record has exactly one encoding.
// Callers check the field limits first.
//
// A non-zero epoch makes it a VersionEpoch frame: the same, with the epoch
// (uint64) between prev_hash and the user's length, hashed like the rest.
func appendFrame(dst []byte, h *hasher, seq uint64, typ uint16, ts int64, prev *[32]byte, epoch uint64, user, actor, channel string, payload []byte) ([]byte, [32]byte) {
	start := len(dst)
	if epoch != 0 {
		dst = append(dst, VersionEpoch)
	} else {
		dst = append(dst, Version)
	}
	dst = binary.BigEndian.AppendUint16(dst, typ)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	dst = binary.BigEndian.AppendUint64(dst, seq)
	dst = append(dst, prev[:]...)
	if epoch != 0 {
		dst = binary.BigEndian.AppendUint64(dst, epoch)
	}
	dst = binary.AppendUvarint(dst, uint64(len(user)))
	dst = append(dst, user...)
	dst = binary.AppendUvarint(dst, uint64(len(actor)))
	dst = append(dst, actor...)
	dst = binary.AppendUvarint(dst, uint64(len(channel)))
	dst = append(dst, channel...)
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	dst = append(dst, payload...)
	sum := h.sum(prev[:], dst[start:])
	dst = append(dst, sum[:]...)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	return dst, sum
}

// frameLen returns the length of the frame appendFrame would write.
func frameLen(epoch uint64, user, actor, channel string, payload []byte) int {
	n := 0
	if epoch != 0 {
		n = epochLen
	}
	return n + fixedLen + uvarintLen(uint64(len(user))) + len(user) +
		uvarintLen(uint64(len(actor))) + len(actor) +
		uvarintLen(uint64(len(channel))) + len(channel) +
		uvarintLen(uint64(len(payload))) + len(payload) + trailerLen
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// readField reads one uvarint-length-prefixed field at b[off:], refusing
// non-canonical lengths and lengths over limit before looking at the bytes.
func readField(b []byte, off, limit int) (field []byte, next int, err error) {
	n, k := binary.Uvarint(b[off:])
	if k == 0 {
		return nil, 0, errFieldShort
	}
	if k < 0 {
		return nil, 0, errVarint
	}
	if k > 1 && b[off+k-1] == 0 {
		return nil, 0, errNonCanonical
	}
	if n > uint64(limit) {
		return nil, 0, errTooLong
	}
	off += k
	if n > uint64(len(b)-off) {
		return nil, 0, errFieldShort
	}
	end := off + int(n)
	return b[off:end:end], end, nil
}

// parseFrame checks the structure and CRC of one frame (not the hash; see
// checkHash) and returns views into it.
func parseFrame(b []byte) (frameView, error) {
	var f frameView
	if len(b) == 0 {
		return f, errEmpty
	}
	v := b[offVersion]
	if v != Version && v != VersionEpoch {
		if v == 0 {
			return f, errZeroVersion
		}
		// Every version ends with a CRC-32C of what precedes it: an
		// intact one means a newer writer, not damage.
		if len(b) >= 1+crcLen && crc32.Checksum(b[:len(b)-crcLen], castagnoli) == binary.BigEndian.Uint32(b[len(b)-crcLen:]) {
			return f, errBadVersion
		}
		return f, errCRC
	}
	off := fieldsAt(v)
	if len(b) < off {
		return f, errShort
	}
	f.typ = binary.BigEndian.Uint16(b[offType:])
	f.ts = int64(binary.BigEndian.Uint64(b[offTime:]))
	f.seq = binary.BigEndian.Uint64(b[offSeq:])
	f.prev = b[offPrev : offPrev+hashLen]
	if v == VersionEpoch {
		f.epoch = binary.BigEndian.Uint64(b[fixedLen:])
		if f.epoch == 0 {
			// A writer with no epoch writes a Version frame: epoch 0
			// has one encoding only.
			if crc32.Checksum(b[:len(b)-crcLen], castagnoli) != binary.BigEndian.Uint32(b[len(b)-crcLen:]) {
				return f, errCRC
			}
			return f, errZeroEpoch
		}
	}
	var err error
	if f.user, off, err = readField(b, off, MaxFieldLen); err != nil {
		return f, err
	}
	if f.actor, off, err = readField(b, off, MaxFieldLen); err != nil {
		return f, err
	}
	if f.channel, off, err = readField(b, off, MaxFieldLen); err != nil {
		return f, err
	}
	if f.payload, off, err = readField(b, off, MaxPayloadLen); err != nil {
		return f, err
	}
	switch rest := len(b) - off; {
	case rest < trailerLen:
		return f, errNoTrailer
	case rest > trailerLen:
		// The CRC decides between "damaged" and "well-formed but with
		// bytes we do not expect": both are corrupt.
		if crc32.Checksum(b[:len(b)-crcLen], castagnoli) != binary.BigEndian.Uint32(b[len(b)-crcLen:]) {
			return f, errCRC
		}
		return f, errExtra
	}
	if crc32.Checksum(b[:off+hashLen], castagnoli) != binary.BigEndian.Uint32(b[off+hashLen:]) {
		return f, errCRC
	}
	f.body = b[:off]
	f.hash = b[off : off+hashLen]
	return f, nil
}

// checkHash reports whether the frame's stored hash is SHA-256 of its own
// prev_hash and body.
func (f *frameView) checkHash(h *hasher) bool {
	sum := h.sum(f.prev, f.body)
	return [32]byte(f.hash) == sum
}

// record copies a frameView into a Record. Strings go through the interner;
// Payload aliases the frame bytes (capacity clipped), which the callers
// never reuse.
func (f *frameView) record(in *interner) Record {
	r := Record{
		Seq:      f.seq,
		Time:     time.Unix(0, f.ts).UTC(),
		Type:     f.typ,
		User:     in.str(f.user),
		Actor:    in.str(f.actor),
		Channel:  in.str(f.channel),
		Payload:  f.payload,
		PrevHash: [32]byte(f.prev),
		Hash:     [32]byte(f.hash),
		Epoch:    f.epoch,
	}
	return r
}

// decodeRecord parses and fully checks one frame (structure, CRC, hash) and
// returns it as a Record with copied fields.
func decodeRecord(b []byte) (Record, error) {
	f, err := parseFrame(b)
	if err != nil {
		return Record{}, err
	}
	var h hasher
	if !f.checkHash(&h) {
		return Record{}, errHash
	}
	r := f.record(nil)
	r.Payload = append([]byte(nil), f.payload...)
	return r, nil
}

// encodeRecord is the inverse of decodeRecord for a record whose Hash is
// the one its fields produce; it returns the frame and that hash.
func encodeRecord(r Record) ([]byte, [32]byte) {
	var h hasher
	return appendFrame(nil, &h, r.Seq, r.Type, r.Time.UnixNano(), &r.PrevHash, r.Epoch, r.User, r.Actor, r.Channel, r.Payload)
}

// interner returns one string per distinct small byte sequence, so that a
// scan of a million records with the same few users and actors does not
// allocate a million strings. A nil interner allocates every time.
type interner struct{ m map[string]string }

const internMax = 4096

func (in *interner) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if in == nil || len(b) > 64 {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string)
	}
	if len(in.m) < internMax {
		in.m[s] = s
	}
	return s
}

// hexHash returns a hash in lowercase hex.
func hexHash(h [32]byte) string { return hex.EncodeToString(h[:]) }
