package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// heartbeat is how often a "still running" line names the packages whose
// tests have not finished.
const heartbeat = time.Minute

func main() {
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	failed := relay(out, os.Stdout, ticker.C, time.Now)
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json's TestEvent), with
// the fields this program reads.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// progress is the state of the run: the packages in progress and the
// output held back for each running test until it passes or fails.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	started time.Time
	running map[string]time.Time
	held    map[string][]string // package + "\x00" + test → output lines
	failed  bool
}

// relay reads go test's JSON events from r until it ends and writes the
// account to w; on every tick it names the packages still running. It
// reports whether any test, package or build failed.
func relay(r io.Reader, w io.Writer, tick <-chan time.Time, now func() time.Time) bool {
	p := &progress{w: w, now: now, started: now(), running: map[string]time.Time{}, held: map[string][]string{}}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tick:
				p.stillRunning()
			}
		}
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (go test prints some build errors as text).
			p.print(sc.Text())
			continue
		}
		p.handle(e)
	}
	close(done)
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "tests finished in %s\n", p.now().Sub(p.started).Round(time.Second))
	return p.failed
}

func (p *progress) print(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

func (p *progress) handle(e event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := e.Package + "\x00" + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(p.w, e.Output)
	case e.Action == "build-fail":
		p.failed = true
		fmt.Fprintf(p.w, "FAIL  %s (build failed)\n", e.ImportPath)
	case e.Action == "start" && e.Test == "":
		p.running[e.Package] = p.now()
		fmt.Fprintf(p.w, "...   %s\n", e.Package)
	case e.Action == "output":
		p.held[key] = append(p.held[key], e.Output)
	case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
		delete(p.held, key)
	case e.Test != "" && e.Action == "fail":
		p.failed = true
		fmt.Fprint(p.w, strings.Join(p.held[key], ""))
		delete(p.held, key)
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		delete(p.running, e.Package)
		if e.Action == "fail" {
			p.failed = true
			// Output outside any test: a panic, a timeout, a TestMain
			// failure, "FAIL" itself.
			fmt.Fprint(p.w, strings.Join(p.held[key], ""))
		}
		delete(p.held, key)
		word := map[string]string{"pass": "ok", "fail": "FAIL", "skip": "skip"}[e.Action]
		fmt.Fprintf(p.w, "%-5s %s %.1fs\n", word, e.Package, e.Elapsed)
	}
}

// stillRunning prints the packages in progress, longest running first.
func (p *progress) stillRunning() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.running) == 0 {
		return
	}
	names := make([]string, 0, len(p.running))
	for name := range p.running {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return p.running[names[i]].Before(p.running[names[j]]) })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s (%s)", name, p.now().Sub(p.running[name]).Round(time.Second))
	}
	fmt.Fprintf(p.w, "      %s: still running %s\n", p.now().Sub(p.started).Round(time.Second), strings.Join(parts, ", "))
}
