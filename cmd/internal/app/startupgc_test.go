package app

import (
	"bytes"
	"math"
	"runtime/debug"
	"sync"
	"testing"
)

// serve's collector is held until its second answer is written, then set
// to its serving settings (the runtime's defaults: GOGC 100, no limit).
func TestStartupGCHeldUntilTheSecondAnswer(t *testing.T) {
	if startupGC.held {
		t.Skip("held by another test of this process")
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	HoldGCForStartup()
	if !startupGC.held {
		t.Fatal("not held")
	}
	var buf bytes.Buffer
	out := &afterAnswers{w: &buf, at: 2, then: ReleaseStartupGC}
	out.Write([]byte("{\"id\":1}\n"))
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GOGC %d after the first answer, want off", p)
	}
	out.Write([]byte("{\"id\":2}\n"))
	if p := debug.SetGCPercent(100); p != servingGCPercent {
		t.Fatalf("GOGC %d after the second answer, want %d", p, servingGCPercent)
	}
	if l := debug.SetMemoryLimit(math.MaxInt64); l != servingMemoryLimit {
		t.Fatalf("memory limit %d after the second answer, want %d", l, servingMemoryLimit)
	}
	if buf.String() != "{\"id\":1}\n{\"id\":2}\n" {
		t.Fatalf("written %q", buf.String())
	}
}

// A replay of more than startupGCRecords records sets the collector back
// before the first answer.
func TestStartupGCReleasedByALargeReplay(t *testing.T) {
	r, g := paperHome(t) // init journals a few records
	old, oldRecords := debug.SetGCPercent(-1), startupGCRecords
	defer func() {
		debug.SetGCPercent(old)
		startupGCRecords = oldRecords
		startupGC.held, startupGC.once = false, sync.Once{}
	}()
	startupGC.held, startupGC.once = true, sync.Once{}
	startupGCRecords = 2
	openStack(t, r, g, "journal")
	if p := debug.SetGCPercent(100); p != servingGCPercent {
		t.Fatalf("GOGC %d after a replay past the bound, want %d", p, servingGCPercent)
	}
	debug.SetMemoryLimit(math.MaxInt64)
}
