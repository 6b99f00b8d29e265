// Package wal is the journal: an append-only, hash-chained, CRC-framed
// record log on top of github.com/tidwall/wal, with the recovery rules and
// read-only tools (scan, verify, dump) that make it tamper-evident.
//
// One idea: wal knows records and bytes, not trading. It imports nothing
// from this module; a record type is a plain uint16 and callers supply the
// names (DumpOptions.TypeName).
//
// # Bytes on disk
//
// The journal directory holds tidwall/wal segment files, each named by the
// zero-padded 20-digit index of its first entry (00000000000000000001, ...).
// tidwall/wal's Binary format stores each entry as a uvarint length and the
// entry bytes, with no checksum. The tidwall/wal index is the record's seq:
// 1-based and contiguous. Each entry holds one frame, version 1 (integers
// big-endian):
//
//	offset  size  field
//	     0     1  version (1)
//	     1     2  record type, uint16
//	     3     8  time, int64 nanoseconds since the Unix epoch (UTC)
//	    11     8  seq, uint64 (equals the tidwall/wal index)
//	    19    32  prev_hash (hash of record seq-1; GenesisHash for seq 1)
//	    51   var  uvarint len | user      (at most MaxFieldLen bytes)
//	         var  uvarint len | actor     (at most MaxFieldLen bytes)
//	         var  uvarint len | channel   (at most MaxFieldLen bytes, may be empty)
//	         var  uvarint len | payload   (JSON, at most MaxPayloadLen bytes)
//	     N    32  hash = SHA-256(prev_hash || bytes [0, N))
//	  N+32     4  CRC-32C (Castagnoli) of bytes [0, N+32)
//
// Lengths are minimal uvarints, so a record has exactly one encoding; a
// reader rejects any other (ErrCorrupt). Every future version keeps the
// first byte as the version and the last four as a CRC-32C of everything
// before, so a reader tells a newer record (ErrVersion) from a damaged one.
//
// The chain: hash = SHA-256(prev_hash || canonical encoding), where the
// canonical encoding is the frame bytes before the hash field (they include
// prev_hash, seq, type, time, user, actor, channel and payload). Changing,
// removing, inserting or reordering any record breaks a CRC, a hash, a
// prev_hash link or seq continuity. Rewriting the whole chain from some
// record on is caught only against a head written down earlier
// (Verify's expectHead, the `journal head` checkpoint).
//
// # Durability
//
// NoSync stays false: each Append is one tidwall/wal WriteBatch, that is one
// write(2) and one fsync(2), and Append returns records only after it. The
// directory is fsynced after Open, after a repair, and after any Append that
// may have rotated to a new segment (tidwall/wal never fsyncs it). A failed
// write or fsync is sticky (ErrFailed): tidwall/wal's memory may be ahead of
// the disk, and an fsync is never retried.
//
// # Recovery
//
// Open reads every segment itself (tidwall/wal parses only the last one)
// and checks the CRC, seq continuity, each hash and the chain from
// GenesisHash, calling Options.OnRecord for each record. Then:
//
//   - What a crash leaves at the end of the LAST segment, with no intact
//     frame after it, is a torn tail: an incomplete final entry (its length
//     prefix or its bytes run past the end of the file) whose bytes are a
//     prefix of the record the writer would have written next (version,
//     seq, prev_hash, lengths, hash and CRC as far as they go), or zero
//     fill to the end of the file. The segment is copied to
//     "<name>.broken", truncated after its last good entry, and the file
//     and the directory are fsynced. Recovery reports it; the caller
//     journals recovered_torn_tail.
//   - Anything else refuses to open with a *DamageError naming the segment
//     file and the seq, and nothing is changed: a COMPLETE last entry that
//     fails to decode, whatever its seq and prev_hash say (a crash cannot
//     produce that, so cutting it would lose an acknowledged record), an
//     incomplete one that contradicts the chain, stray bytes, a bad record
//     anywhere else, a seq gap or reordering, a broken chain, a truncated
//     older segment, a record of a newer version. See walker.tailVerdict
//     and docs/journal-format.md.
//
// # Concurrency
//
// A *Log is not safe for concurrent use: exactly one goroutine, the journal
// actor's flusher, owns it. It takes no lock on the directory; the caller
// holds the home's flock before Open (tidwall/wal has none, and two writers
// corrupt the log). Scan, Verify and Dump read files directly and never
// write; run them on a Snapshot when a server may be writing. They may run
// concurrently with each other.
package wal
