package actors

import (
	"strconv"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// A flush request that finds nothing pending (its record is already in the
// batch being written) must not leave the journal forcing flushes: the next
// lazy record waits for the eager record that follows it, and the two go
// out in one fsync.
func TestFlushRequestWithNothingPendingForcesNothing(t *testing.T) {
	ts := startTest(t, nil)
	root := ts.sys.Root
	ts.sys.Root.Send(ts.journal, &flushRequest{})
	// Let the request be handled before the records arrive (a record
	// written now would reset the flag, so wait instead; with the journal
	// right the test passes however long this is).
	time.Sleep(50 * time.Millisecond)
	before := ts.Flushes()
	lazy := make(chan *AppendResponse, 1)
	eager := make(chan *AppendResponse, 1)
	entry := func(i int) wal.Entry {
		return wal.Entry{Time: time.Now().UTC(), Type: uint16(messages.RecordToolCall), User: "u", Actor: messages.ActorAgent, Payload: []byte(`{"i":` + strconv.Itoa(i) + `}`)}
	}
	root.Send(ts.journal, &AppendRequest{Entry: entry(1), Reply: lazy, Lazy: true})
	root.Send(ts.journal, &AppendRequest{Entry: entry(2), Reply: eager})
	for _, ch := range []chan *AppendResponse{lazy, eager} {
		select {
		case r := <-ch:
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer from the journal")
		}
	}
	if n := ts.Flushes() - before; n != 1 {
		t.Fatalf("a lazy record and the eager one after it took %d flushes, want 1", n)
	}
}
