package journal

import (
	"sync"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The journal index keeps, per user, that user's most recent records in
// memory, for get_my_journal (D61). The WAL has no live read API (a
// tidwall/wal handle read while the writer appends panics, and a Snapshot
// copies the whole journal), so the records are remembered as they pass:
// every record at start through the replay's OnRecord, then every record the
// Writer makes durable, added by its flusher before the writers are
// answered (an answer is never followed by a read that misses its record).
//
// The flusher only appends references (the payloads Append returns are
// its own copies) under one short lock per batch; decoding and rendering
// happen on the reader's goroutine. Readers copy at most a page of
// references under the same lock.
const (
	// journalIndexRecords bounds the records kept per user.
	journalIndexRecords = 500
	// journalIndexBytes bounds the payload bytes kept per user.
	journalIndexBytes = 256 << 10
	// journalIndexTotal bounds the memory of the whole index (payloads
	// plus journalIndexEntryCost per record): with many users, the
	// oldest records of all are dropped first.
	journalIndexTotal = 64 << 20
	// journalIndexEntryCost is what one record costs besides its payload
	// (its entry in the ring and in the global order).
	journalIndexEntryCost = 128
)

// Index is the per-user memory of recent records (get_my_journal). Safe
// for concurrent use; a nil *Index adds nothing.
type Index struct {
	mu    sync.Mutex
	users map[string]*userJournal
	// order lists the records in seq order across users (from head), to
	// drop the oldest when the total bound is passed. An entry whose
	// record its user already dropped is stale and skipped.
	order []indexRef
	head  int
	// total is the cost of the live records; live counts them.
	total, live int
	// budget is journalIndexTotal (smaller in tests).
	budget int
}

// indexRef names one record in order.
type indexRef struct {
	u   *userJournal
	seq uint64
}

// holds reports whether the user still keeps the record.
func (r indexRef) holds() bool { return r.u.n > 0 && r.seq >= r.u.at(0).Seq }

// userJournal is one user's records, a ring in seq order: the n live
// records start at head and wrap around buf, which grows up to
// journalIndexRecords and is then reused.
type userJournal struct {
	buf     []messages.JournalEntry
	head, n int
	bytes   int
	evicted bool
}

// at returns the i-th oldest live record.
func (u *userJournal) at(i int) *messages.JournalEntry { return &u.buf[(u.head+i)%len(u.buf)] }

// dropOldest forgets the oldest live record and returns its cost.
func (u *userJournal) dropOldest() int {
	old := u.at(0)
	c := entryCost(old)
	u.bytes -= len(old.Payload)
	*old = messages.JournalEntry{}
	u.head = (u.head + 1) % len(u.buf)
	u.n--
	u.evicted = true
	return c
}

func entryCost(e *messages.JournalEntry) int { return len(e.Payload) + journalIndexEntryCost }

// push adds the newest record, then drops the oldest ones beyond the
// user's bounds (never the record just added); it returns the cost
// dropped.
func (u *userJournal) push(e messages.JournalEntry) (dropped int) {
	switch {
	case u.n < len(u.buf):
		*u.at(u.n) = e
		u.n++
	case len(u.buf) < journalIndexRecords:
		if u.head != 0 { // put the ring in order before growing it
			nb := make([]messages.JournalEntry, 0, min(2*len(u.buf), journalIndexRecords))
			nb = append(append(nb, u.buf[u.head:]...), u.buf[:u.head]...)
			u.buf, u.head = nb, 0
		}
		u.buf = append(u.buf, e)
		u.n++
	default:
		dropped += u.dropOldest()
		*u.at(u.n) = e
		u.n++
	}
	u.bytes += len(e.Payload)
	for u.bytes > journalIndexBytes && u.n > 1 {
		dropped += u.dropOldest()
	}
	return dropped
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{users: map[string]*userJournal{}, budget: journalIndexTotal}
}

// indexed reports whether get_my_journal shows records of type t: every
// record about a user except tool_call, which only restates the caller's
// own calls (one per call, get_my_journal's own included) and would crowd
// out the decisions and outcomes.
func indexed(rec *wal.Record) bool {
	return rec.User != "" && messages.RecordType(rec.Type) != messages.RecordToolCall
}

// Add remembers recs (in seq order). copyPayload is true when the payloads
// alias a buffer the caller reuses (replay at start).
func (x *Index) Add(recs []wal.Record, copyPayload bool) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		if !indexed(r) {
			continue
		}
		p := r.Payload
		if copyPayload {
			p = append([]byte(nil), p...)
		}
		u := x.users[r.User]
		if u == nil {
			u = &userJournal{}
			x.users[r.User] = u
		}
		e := messages.JournalEntry{Seq: r.Seq, Time: r.Time, Type: messages.RecordType(r.Type), Actor: r.Actor, Channel: r.Channel, Payload: p}
		before := u.n
		dropped := u.push(e)
		x.total += entryCost(&e) - dropped
		x.live += u.n - before
		x.order = append(x.order, indexRef{u: u, seq: r.Seq})
		x.trim()
	}
}

// trim drops the oldest records of all users while the total bound is
// passed, and compacts the order when most of it is stale.
func (x *Index) trim() {
	for x.total > x.budget && x.head < len(x.order) {
		r := x.order[x.head]
		x.order[x.head] = indexRef{}
		x.head++
		if r.u.n > 0 && r.u.at(0).Seq == r.seq {
			x.total -= r.u.dropOldest()
			x.live--
		}
	}
	if n := len(x.order) - x.head; n > 1024 && n > 2*x.live {
		kept := make([]indexRef, 0, 2*x.live+1)
		for _, r := range x.order[x.head:] {
			if r.holds() {
				kept = append(kept, r)
			}
		}
		x.order, x.head = kept, 0
	} else if x.head > 1024 && x.head > len(x.order)/2 {
		x.order, x.head = append([]indexRef(nil), x.order[x.head:]...), 0
	}
}

// Page returns up to limit of user's records with a seq below before (0:
// the newest), newest first.
func (x *Index) Page(user string, before uint64, limit int) messages.JournalPage {
	x.mu.Lock()
	defer x.mu.Unlock()
	u := x.users[user]
	if u == nil || limit <= 0 {
		return messages.JournalPage{}
	}
	// i is one past the newest record to show.
	i := u.n
	if before > 0 {
		lo, hi := 0, u.n
		for lo < hi {
			m := (lo + hi) / 2
			if u.at(m).Seq < before {
				lo = m + 1
			} else {
				hi = m
			}
		}
		i = lo
	}
	out := messages.JournalPage{Evicted: u.evicted}
	for j := i - 1; j >= 0 && len(out.Entries) < limit; j-- {
		out.Entries = append(out.Entries, *u.at(j))
	}
	out.More = i-len(out.Entries) > 0
	return out
}

// Hold takes the index's lock until release is called. The flusher adds a
// durable batch to the index before it answers the batch's writers, so
// while the index is held every write stays unanswered after its fsync;
// tests use it to keep a user's write in flight.
func (ix *Index) Hold() (release func()) {
	ix.mu.Lock()
	var once sync.Once
	return func() { once.Do(ix.mu.Unlock) }
}
