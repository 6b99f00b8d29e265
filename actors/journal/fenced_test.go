package journal

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// A log whose fence goes down (a cluster shard that lost its lock) makes
// the writer answer shard_fenced: the write in flight, every later one,
// and DownError.
func TestFencedLogAnswersShardFenced(t *testing.T) {
	var held atomic.Bool
	held.Store(true)
	l, _, err := wal.Open(t.TempDir(), wal.Options{Epoch: 3, Fence: held.Load})
	if err != nil {
		t.Fatal(err)
	}
	w := New(l, Options{})
	defer func() {
		w.Close()
		_ = l.Close()
	}()
	if r := appendWait(t, w, entry("u", 0), Sync); r.Err != nil {
		t.Fatal(r.Err)
	}
	held.Store(false)
	isFenced := func(what string, e *messages.Error) {
		t.Helper()
		if e == nil || e.Code != messages.CodeInternalError || e.Details["reason"] != messages.ReasonShardFenced {
			t.Fatalf("%s: %v, want internal_error reason %s", what, e, messages.ReasonShardFenced)
		}
	}
	isFenced("the write after the fence went down", appendWait(t, w, entry("u", 1), Sync).Err)
	select {
	case <-w.Down():
	case <-time.After(10 * time.Second):
		t.Fatal("the writer is not down after a fenced write")
	}
	held.Store(true) // a renewed lock revives nothing
	isFenced("a later write", appendWait(t, w, entry("u", 2), Sync).Err)
	isFenced("DownError", w.DownError())
}
