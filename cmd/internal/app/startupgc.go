package app

import (
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Start-up allocates a few megabytes that live on (the command parser, the
// actor system's registry, the tool schemas, the journal's replay) and
// would run the collector two or three times before serve's first answer,
// for nothing to free. Until the first answers (or startupGCBound, for a
// command that never answers) the collector runs only when the heap
// reaches startupHeapLimit, then it is set back to the runtime's defaults.
// A journal of more than startupGCRecords records sets it back as soon as
// the replay has read them: a large replay's live heap could pass the
// limit, and the collector would then run without pause. GOGC or
// GOMEMLIMIT set by the operator are left as they are.
//
// After start-up the collector runs at servingGCPercent, not the
// runtime's 100, with servingMemoryLimit as its soft limit
// (docs/decisions.md D179): serve's live heap is small (a few MiB to tens
// of MiB) and most of what an order allocates is short-lived JSON, so at
// GOGC 100 the collector ran every few orders and took about a quarter of
// serve's CPU per order. At 400 the heap may grow to five times the live
// heap between collections; near servingMemoryLimit the collector runs as
// often as it must to stay under it (above it only if the live heap itself
// needs more). GOGC or GOMEMLIMIT in the environment replace both.
const (
	startupHeapLimit   = 64 << 20
	startupGCBound     = 2 * time.Second
	servingGCPercent   = 400
	servingMemoryLimit = 1 << 30
)

var startupGCRecords = 20000 // a variable for tests

var startupGC struct {
	once sync.Once
	held bool
}

// HoldGCForStartup defers garbage collection until ReleaseStartupGC or
// startupGCBound (main calls it first thing).
func HoldGCForStartup() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	startupGC.held = true
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(startupHeapLimit)
	time.AfterFunc(startupGCBound, ReleaseStartupGC)
}

// ReleaseStartupGC sets the collector to its serving settings
// (servingGCPercent, servingMemoryLimit): once the first answers are out,
// or the replay is large.
func ReleaseStartupGC() {
	startupGC.once.Do(func() {
		if startupGC.held {
			debug.SetGCPercent(servingGCPercent)
			debug.SetMemoryLimit(servingMemoryLimit)
		}
	})
}

// afterAnswers calls then once, after the n-th write to w has returned:
// serve's stdout, where every write is one whole answer line.
type afterAnswers struct {
	w    io.Writer
	n    atomic.Int32
	at   int32
	then func()
}

func (a *afterAnswers) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if a.n.Add(1) == a.at {
		a.then()
	}
	return n, err
}
