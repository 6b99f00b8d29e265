package app

import (
	"io"
	"math"
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
// After start-up the collector runs at the runtime's defaults
// (servingGCPercent, servingMemoryLimit): a higher GOGC saved CPU per
// order but let a flood of stream pushes grow serve's memory past its
// bound (docs/decisions.md D179, superseded by D204).
const (
	startupHeapLimit   = 64 << 20
	startupGCBound     = 2 * time.Second
	servingGCPercent   = 100
	servingMemoryLimit = math.MaxInt64
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
