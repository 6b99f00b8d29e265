package journal

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

func indexRec(seq uint64, user string, typ messages.RecordType, payload string) wal.Record {
	return wal.Record{Seq: seq, User: user, Type: uint16(typ), Actor: messages.ActorAgent, Payload: []byte(payload)}
}

// The index keeps each user's newest records within both bounds, pages
// below a seq, leaves out tool_call and system records, and says when it
// dropped older ones.
func TestJournalIndexBoundsAndPages(t *testing.T) {
	x := NewIndex()
	var recs []wal.Record
	for i := uint64(1); i <= 3*journalIndexRecords; i++ {
		user := "a"
		if i%3 == 0 {
			user = "b"
		}
		typ := messages.RecordOrderRepeat
		if i%7 == 0 {
			typ = messages.RecordToolCall
		}
		recs = append(recs, indexRec(i, user, typ, `{}`))
	}
	recs = append(recs, indexRec(uint64(len(recs)+1), "", messages.RecordServerStarted, `{}`))
	x.Add(recs[:100], false)
	x.Add(recs[100:], false)

	var seen []uint64
	before := uint64(0)
	for {
		p := x.Page("a", before, 37)
		for _, e := range p.Entries {
			if e.Type == messages.RecordToolCall {
				t.Fatal("a tool_call is indexed")
			}
			if len(seen) > 0 && e.Seq >= seen[len(seen)-1] {
				t.Fatalf("not newest first: %d after %d", e.Seq, seen[len(seen)-1])
			}
			seen = append(seen, e.Seq)
		}
		if !p.More {
			if !p.Evicted {
				t.Fatal("older records were dropped but the page does not say so")
			}
			break
		}
		before = p.Entries[len(p.Entries)-1].Seq
	}
	if len(seen) != journalIndexRecords || seen[0] != uint64(3*journalIndexRecords-1) {
		t.Fatalf("kept %d records of a, newest %d", len(seen), seen[0])
	}
	if p := x.Page("b", 0, 1000); len(p.Entries) == 0 || len(p.Entries) > journalIndexRecords || p.Entries[0].Seq%3 != 0 {
		t.Fatalf("b: %d records", len(p.Entries))
	}
	if p := x.Page("nobody", 0, 10); len(p.Entries) != 0 || p.More {
		t.Fatal("records for a user with none")
	}

	// The byte bound: big payloads keep fewer records, never none.
	big := `"` + strings.Repeat("x", journalIndexBytes/4) + `"`
	y := NewIndex()
	for i := uint64(1); i <= 20; i++ {
		y.Add([]wal.Record{indexRec(i, "c", messages.RecordOrderRefused, big)}, true)
	}
	if p := y.Page("c", 0, 100); len(p.Entries) < 3 || len(p.Entries) > 4 || p.Entries[0].Seq != 20 {
		t.Fatalf("byte bound kept %d records", len(p.Entries))
	}
	huge := `"` + strings.Repeat("y", 2*journalIndexBytes) + `"`
	y.Add([]wal.Record{indexRec(21, "c", messages.RecordOrderRefused, huge)}, true)
	if p := y.Page("c", 0, 100); len(p.Entries) != 1 || p.Entries[0].Seq != 21 {
		t.Fatalf("a record above the byte bound alone: %d records", len(p.Entries))
	}
}

// The flusher's cost per batch of 1,000 records of 1,000 users, and a
// reader's cost per page of 100.
func BenchmarkJournalIndex(b *testing.B) {
	batch := make([]wal.Record, 1000)
	for i := range batch {
		batch[i] = indexRec(uint64(i+1), fmt.Sprintf("u%d", i), messages.RecordOrderOutcome, `{"status":"accepted"}`)
	}
	b.Run("add_batch_1000", func(b *testing.B) {
		x := NewIndex()
		for b.Loop() {
			x.Add(batch, false)
		}
	})
	b.Run("page_100", func(b *testing.B) {
		x := NewIndex()
		for i := uint64(1); i <= journalIndexRecords; i++ {
			x.Add([]wal.Record{indexRec(i, "u", messages.RecordOrderOutcome, `{}`)}, false)
		}
		for b.Loop() {
			_ = x.Page("u", 300, 100)
		}
	})
}

// The ring keeps exactly what a plain list with the same bounds keeps,
// whatever the mix of payload sizes (seeded).
func TestJournalIndexMatchesAPlainList(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 57))
	x := NewIndex()
	var model []wal.Record
	modelBytes := 0
	for seq := uint64(1); seq <= 5000; seq++ {
		size := rng.IntN(300)
		if rng.IntN(50) == 0 {
			size = journalIndexBytes / (1 + rng.IntN(8))
		}
		r := indexRec(seq, "u", messages.RecordOrderOutcome, strings.Repeat("z", size))
		x.Add([]wal.Record{r}, false)
		model = append(model, r)
		modelBytes += size
		for len(model) > journalIndexRecords || (modelBytes > journalIndexBytes && len(model) > 1) {
			modelBytes -= len(model[0].Payload)
			model = model[1:]
		}
		if seq%97 == 0 || seq == 5000 {
			p := x.Page("u", 0, journalIndexRecords+1)
			if len(p.Entries) != len(model) {
				t.Fatalf("seq %d: ring keeps %d, list %d", seq, len(p.Entries), len(model))
			}
			for i, e := range p.Entries {
				if want := model[len(model)-1-i]; e.Seq != want.Seq || len(e.Payload) != len(want.Payload) {
					t.Fatalf("seq %d: entry %d is %d, want %d", seq, i, e.Seq, want.Seq)
				}
			}
			if x.live != len(model) || len(x.order)-x.head > 2*x.live+1025 {
				t.Fatalf("seq %d: live %d, %d order entries", seq, x.live, len(x.order)-x.head)
			}
		}
	}
}

// With many users, the whole index stays within its total bound by
// dropping the oldest records of all users first, and its bookkeeping
// stays proportional to what it keeps.
func TestJournalIndexTotalBound(t *testing.T) {
	x := NewIndex()
	x.budget = 100 * (journalIndexEntryCost + 10)
	const users = 50
	for seq := uint64(1); seq <= 10_000; seq++ {
		x.Add([]wal.Record{indexRec(seq, fmt.Sprintf("u%d", seq%users), messages.RecordOrderOutcome, "0123456789")}, false)
		if x.total > x.budget {
			t.Fatalf("seq %d: total %d over the budget %d", seq, x.total, x.budget)
		}
		if len(x.order)-x.head > 2*x.live+1024+1 {
			t.Fatalf("seq %d: %d order entries for %d live records", seq, len(x.order)-x.head, x.live)
		}
	}
	kept := 0
	oldest := uint64(10_000)
	for u := range users {
		p := x.Page(fmt.Sprintf("u%d", u), 0, 1000)
		kept += len(p.Entries)
		for _, e := range p.Entries {
			oldest = min(oldest, e.Seq)
		}
		if len(p.Entries) > 0 && p.Entries[0].Seq%users != uint64(u) {
			t.Fatalf("u%d holds another user's record %d", u, p.Entries[0].Seq)
		}
	}
	if kept != 100 || kept != x.live || oldest != 10_000-99 {
		t.Fatalf("kept %d (live %d), oldest %d: want the newest 100 of all users", kept, x.live, oldest)
	}
}
