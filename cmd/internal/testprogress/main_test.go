package main

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// stream is a `go test -json` run of two packages: a passes, b has one
// passing and one failing test.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"start","Package":"m/b"}
{"Action":"run","Package":"m/a","Test":"TestFine"}
{"Action":"output","Package":"m/a","Test":"TestFine","Output":"=== RUN   TestFine\n"}
{"Action":"output","Package":"m/a","Test":"TestFine","Output":"    a_test.go:9: chatter of a passing test\n"}
{"Action":"pass","Package":"m/a","Test":"TestFine","Elapsed":0.01}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t0.02s\n"}
{"Action":"pass","Package":"m/a","Elapsed":0.02}
{"Action":"run","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"    b_test.go:7: want 1, got 2\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken","Elapsed":0.01}
{"Action":"output","Package":"m/b","Output":"FAIL\n"}
{"Action":"fail","Package":"m/b","Elapsed":0.03}
`

func TestRelayNamesPackagesAndShowsOnlyFailures(t *testing.T) {
	var out strings.Builder
	failed := relay(strings.NewReader(stream), &out, nil, time.Now)
	got := out.String()
	if !failed {
		t.Error("relay reported success for a run with a failing test")
	}
	for _, want := range []string{"...   m/a\n", "...   m/b\n", "ok    m/a 0.0s\n", "b_test.go:7: want 1, got 2", "FAIL  m/b 0.0s\n", "tests finished in"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "chatter of a passing test") {
		t.Errorf("output shows a passing test's output:\n%s", got)
	}
}

func TestRelaySucceedsWhenEverythingPasses(t *testing.T) {
	var out strings.Builder
	pass := strings.Join(strings.Split(stream, "\n")[:8], "\n")
	if relay(strings.NewReader(pass), &out, nil, time.Now) {
		t.Errorf("relay reported a failure for a passing run:\n%s", out.String())
	}
}

func TestRelayReportsABuildFailure(t *testing.T) {
	var out strings.Builder
	s := `{"ImportPath":"m/c","Action":"build-output","Output":"c.go:3: undefined: x\n"}
{"ImportPath":"m/c","Action":"build-fail"}
`
	if !relay(strings.NewReader(s), &out, nil, time.Now) {
		t.Error("relay reported success for a build failure")
	}
	if !strings.Contains(out.String(), "undefined: x") || !strings.Contains(out.String(), "FAIL  m/c (build failed)") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestRelayNamesThePackagesStillRunning(t *testing.T) {
	r, w := io.Pipe()
	tick := make(chan time.Time)
	var out lockedBuilder
	done := make(chan bool)
	go func() { done <- relay(r, &out, tick, time.Now) }()
	w.Write([]byte(`{"Action":"start","Package":"m/slow"}` + "\n"))
	for i := 0; i < 1000 && !strings.Contains(out.String(), "...   m/slow"); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	tick <- time.Now()
	for i := 0; i < 1000 && !strings.Contains(out.String(), "still running m/slow"); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	w.Close()
	<-done
	if !strings.Contains(out.String(), "still running m/slow (") {
		t.Errorf("no still-running line:\n%s", out.String())
	}
}

// lockedBuilder is a strings.Builder safe to read while relay writes.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
