package wal

import (
	"errors"
	"sync/atomic"
	"testing"
)

// fenceAfter is a fence that says yes to its first n checks only.
func fenceAfter(n int64) (func() bool, *atomic.Int64) {
	var left atomic.Int64
	left.Store(n)
	return func() bool { return left.Add(-1) >= 0 }, &left
}

// A fence that says no before the write fails the Append with ErrFenced
// and writes nothing; every later Append fails the same way, even once the
// fence says yes again.
func TestFenceBeforeWriteWritesNothing(t *testing.T) {
	dir := t.TempDir()
	fence, left := fenceAfter(2) // one Append: before and after
	l, _, err := Open(dir, Options{Epoch: 4, Fence: fence})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append([]Entry{testEntry(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]Entry{testEntry(1)}); !errors.Is(err, ErrFenced) {
		t.Fatalf("append with the fence down: %v, want ErrFenced", err)
	}
	left.Store(100)
	if _, err := l.Append([]Entry{testEntry(2)}); !errors.Is(err, ErrFenced) {
		t.Fatalf("append after a fenced one: %v, want ErrFenced (latched)", err)
	}
	if !errors.Is(l.Err(), ErrFenced) {
		t.Fatalf("Err() = %v", l.Err())
	}
	res, err := Verify(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Records != 1 {
		t.Fatalf("%d records, %v; want the one acknowledged record", res.Records, res.Problems)
	}
}

// A fence that says no after the fsync fails the Append: the batch is in
// the file (it was written) but was not acknowledged, and the chain stays
// valid for the next owner.
func TestFenceAfterFsyncNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	fence, _ := fenceAfter(1) // yes before the write, no after it
	l, _, err := Open(dir, Options{Epoch: 4, Fence: fence})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Append([]Entry{testEntry(0), testEntry(1)})
	if !errors.Is(err, ErrFenced) || recs != nil {
		t.Fatalf("append losing the fence during its write: %v, %d records", err, len(recs))
	}
	if _, err := l.Append([]Entry{testEntry(2)}); !errors.Is(err, ErrFenced) {
		t.Fatalf("later append: %v, want ErrFenced", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	next, _, err := Open(dir, Options{Epoch: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if seq, _ := next.Head(); seq != 2 {
		t.Fatalf("the next owner's head is %d, want 2 (the unacknowledged batch is durable)", seq)
	}
	if _, err := next.Append([]Entry{testEntry(3)}); err != nil {
		t.Fatal(err)
	}
}

// Without a fence nothing changes.
func TestNoFenceAppends(t *testing.T) {
	l, _, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		if _, err := l.Append([]Entry{testEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
}
