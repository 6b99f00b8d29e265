package app

import (
	"bytes"
	"runtime/debug"
	"sync"
	"testing"
)

// serve's collector is held until its second answer is written, then set
// back to the runtime's default (GOGC 100).
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
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GOGC %d after the second answer, want 100", p)
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
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GOGC %d after a replay past the bound, want 100", p)
	}
}
