package messages

import "time"

// JournalEntry is one journal record as get_my_journal sees it: the
// record's own fields and its raw payload, which the caller renders field
// by field (it is shared: never modify it).
type JournalEntry struct {
	Seq     uint64
	Time    time.Time
	Type    RecordType
	Actor   string
	Channel string
	Payload []byte
}

// JournalPage is a page of one user's recent records, newest first.
type JournalPage struct {
	Entries []JournalEntry
	// More is true when older records are kept: pass the last entry's Seq
	// as the next page's "before".
	More bool
	// Evicted is true when older records of this user are no longer kept
	// in memory (they stay in the journal, for `journal dump`).
	Evicted bool
}
