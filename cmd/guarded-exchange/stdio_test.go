package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawServe is serve driven over raw pipes, so a test can send lines no SDK
// client would.
type rawServe struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	answers chan map[string]any // decoded stdout lines, once started
	stderr  bytes.Buffer
}

func startRawServe(t *testing.T, in install) *rawServe {
	t.Helper()
	s := &rawServe{t: t, cmd: exec.Command(bin, "serve")}
	s.cmd.Env = in.env("GX_LOG_LEVEL=debug")
	s.stdin, _ = s.cmd.StdinPipe()
	s.stdout, _ = s.cmd.StdoutPipe()
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	return s
}

// readAnswers starts decoding stdout; a line that is not a JSON object
// fails the test.
func (s *rawServe) readAnswers() {
	s.answers = make(chan map[string]any, 16)
	go func() {
		defer close(s.answers)
		sc := bufio.NewScanner(s.stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				s.t.Errorf("stdout line is not JSON-RPC: %.200q", sc.Text())
				return
			}
			s.answers <- m
		}
	}()
}

func (s *rawServe) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write to serve: %v\n%s", err, s.stderr.String())
	}
}

// until returns the answers up to and including the one with id.
func (s *rawServe) until(id string) []map[string]any {
	s.t.Helper()
	var got []map[string]any
	deadline := time.After(60 * time.Second) // only a hung server hits this
	for {
		select {
		case m, ok := <-s.answers:
			if !ok {
				s.t.Fatalf("serve closed stdout before answering %q (exit: %v)\n%s", id, s.cmd.Wait(), s.stderr.String())
			}
			got = append(got, m)
			if m["id"] == id {
				return got
			}
		case <-deadline:
			s.t.Fatalf("no answer to %q", id)
		}
	}
}

func (s *rawServe) handshake() {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	s.until("init")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
}

func nest(open, leaf, close string, n int) string {
	return strings.Repeat(open, n) + leaf + strings.Repeat(close, n)
}

// Every line the model or a broken client can send gets at most one
// JSON-RPC error answer and leaves the session answering the next call.
// Before the stdio filter admitted only what the SDK accepts, each of the
// fatal lines below ended serve with exit status 1.
func TestServeSurvivesInvalidLines(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	const secret = "s3cr3t-argument-value"
	type attack struct {
		name, line string
		code       float64 // 0: no answer expected; -1: any code
		id         any     // the answer's id (nil: JSON null)
	}
	attacks := []attack{
		{"arguments nested 1000 deep", `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"get_ticker","arguments":` + nest(`{"a":`, "1", "}", 1000) + `}}`, -32600, "deep"},
		{"_meta nested 5000 deep", `{"jsonrpc":"2.0","id":"meta","method":"tools/list","params":{"_meta":` + nest(`{"a":`, "1", "}", 5000) + `}}`, -32600, "meta"},
		{"arguments nested 20000 deep", `{"jsonrpc":"2.0","id":"deeper","method":"tools/call","params":{"name":"get_ticker","arguments":` + nest(`{"a":`, "1", "}", 20000) + `}}`, -32600, "deeper"},
		{"arrays nested 20000 deep", nest("[", "", "]", 20000), -32600, nil},
		{"unbalanced nesting", nest("[", "", "]", 20000) + "]", -32700, nil},
		{"empty object", `{}`, -32600, nil},
		{"no jsonrpc member", `{"id":"a7","method":"ping"}`, -32600, "a7"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":"v1","method":"ping"}`, -32600, "v1"},
		{"object as id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, nil},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, -32600, nil},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, nil},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":7}`, -32600, "m"},
		{"params not an object", `{"jsonrpc":"2.0","id":"p","method":"tools/list","params":"x"}`, -32600, "p"},
		{"duplicate member", `{"jsonrpc":"2.0","id":"d","method":"ping","id":{"x":1}}`, -32600, nil},
		{"not JSON", `this line is not JSON at all`, -32700, nil},
		{"a batch", `[{"jsonrpc":"2.0","id":"b","method":"tools/list","params":{}}]`, -32600, nil},
		{"a number", `42`, -32600, nil},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, 0, nil},
		{"response with a string error", `{"jsonrpc":"2.0","id":"e","error":"boom"}`, 0, nil},
		{"oversize line", `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`, -32600, nil},
		{"tool name not a string", `{"jsonrpc":"2.0","id":"n5","method":"tools/call","params":{"name":5,"arguments":{"key":"` + secret + `"}}}`, -32602, "n5"},
		{"unknown method", `{"jsonrpc":"2.0","id":"um","method":"` + secret + `"}`, -32601, "um"},
		{"duplicate member in params", `{"jsonrpc":"2.0","id":"dp","method":"tools/call","params":{"name":"get_ticker","name":"get_balances","arguments":{}}}`, -32600, "dp"},
		{"duplicate member escaped", `{"jsonrpc":"2.0","id":"de","method":"tools/call","params":{"name":"get_ticker","\u006eame":"get_balances","arguments":{}}}`, -32600, "de"},
		{"duplicate argument", `{"jsonrpc":"2.0","id":"da","method":"tools/call","params":{"name":"get_ticker","arguments":{"symbol":"BTCUSDT","category":"linear","symbol":"ETHUSDT"}}}`, -32600, "da"},
		{"duplicate member in _meta", `{"jsonrpc":"2.0","id":"dm","method":"tools/list","params":{"_meta":{"a":[{"k":1,"k":2}]}}}`, -32600, "dm"},
		{"notification over 4 KiB", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"` + strings.Repeat("A", 1<<20-200) + `"}}`, -32600, nil},
		{"prompt name", `{"jsonrpc":"2.0","id":"pg","method":"prompts/get","params":{"name":"` + secret + `"}}`, -1, "pg"},
		{"resource uri", `{"jsonrpc":"2.0","id":"rr","method":"resources/read","params":{"uri":"` + secret + `"}}`, -1, "rr"},
		{"log level", `{"jsonrpc":"2.0","id":"ll","method":"logging/setLevel","params":{"level":"` + secret + `"}}`, -32602, "ll"},
		{"protocol version in _meta", `{"jsonrpc":"2.0","id":"pv","method":"tools/call","params":{"name":"get_ticker","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + secret + `","io.modelcontextprotocol/clientCapabilities":{}}}}`, -1, "pv"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			s := startRawServe(t, in)
			s.readAnswers()
			s.handshake()
			s.send(a.line)
			s.send(`{"jsonrpc":"2.0","id":"next","method":"tools/call","params":{"name":"get_ticker","arguments":{"symbol":"BTCUSDT","category":"linear"}}}`)
			got := s.until("next")
			last := got[len(got)-1]
			if res, _ := last["result"].(map[string]any); res == nil || res["isError"] == true {
				t.Fatalf("the next call failed: %v", last)
			}
			got = got[:len(got)-1]
			if a.code == 0 {
				if len(got) != 0 {
					t.Errorf("want no answer, got %v", got)
				}
			} else {
				if len(got) != 1 {
					t.Fatalf("want one answer, got %v", got)
				}
				e, _ := got[0]["error"].(map[string]any)
				if id, has := got[0]["id"]; e == nil || (a.code != -1 && e["code"] != a.code) || !has || id != a.id {
					t.Errorf("want error %v with id %v, got %v", a.code, a.id, got[0])
				}
				if msg, _ := e["message"].(string); strings.Contains(msg, secret) || strings.Contains(msg, "arguments") || len(msg) > 200 {
					t.Errorf("the error repeats the request: %q", msg)
				}
				if _, has := e["data"]; has {
					t.Errorf("the error carries data: %v", e)
				}
			}
			if err := s.stdin.Close(); err != nil {
				t.Fatal(err)
			}
			for range s.answers {
			}
			if err := s.cmd.Wait(); err != nil {
				t.Fatalf("serve exit: %v\n%s", err, s.stderr.String())
			}
			if strings.Contains(s.stderr.String(), secret) {
				t.Fatalf("the logs repeat a rejected value")
			}
		})
	}
}

// vmHWM is the peak resident set size of pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// A client that stops reading stdout while it keeps sending requests does
// not make serve grow: once 64 requests are unanswered serve stops reading
// stdin, and it resumes, losing nothing, when the client reads again.
// Before the bound, serve read every request and its memory grew with them.
func TestServeMemoryIsBoundedWhenTheClientStopsReading(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	const (
		maxInFlight = 64
		pad         = 128 << 10 // bytes of padding per request
		requests    = 2048      // 256 MiB in all, far past the bound
	)
	// Peak RSS growth allowed: 64 requests of 128 KiB, their copies and
	// the GC's headroom; the race detector doubles what the heap costs.
	// Without the bound the server passes it within a few hundred requests.
	growthBound := int64(96 << 20)
	if raceEnabled {
		growthBound *= 2
	}
	in := newInstall(t)
	s := startRawServe(t, in)
	br := bufio.NewReaderSize(s.stdout, 1<<20)
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if _, err := br.ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	// tools/list answers are large, so a few fill the stdout pipe.
	s.send(`{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{}}`)
	if _, err := br.ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	baseline := vmHWM(t, s.cmd.Process.Pid)

	padding := strings.Repeat("x", pad)
	var written, stop atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 1; i <= requests && stop.Load() == 0; i++ {
			line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/list","params":{"_meta":{"pad":"` + padding + `"}}}` + "\n"
			if _, err := io.WriteString(s.stdin, line); err != nil {
				return
			}
			written.Add(1)
		}
	}()
	// Nobody reads stdout now. Wait until the writer finishes or makes no
	// progress for two seconds; stop early if memory passes the bound.
	var peak int64
	last, still := int64(-1), 0
	for still < 20 {
		select {
		case <-writerDone:
			still = 20
		case <-time.After(100 * time.Millisecond):
		}
		peak = vmHWM(t, s.cmd.Process.Pid)
		if peak-baseline > growthBound {
			break
		}
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	stop.Store(1)
	n := written.Load()
	t.Logf("stalled after %d requests (%d KiB each); peak RSS %d MiB, %d MiB over the idle server",
		n, pad>>10, peak>>20, (peak-baseline)>>20)
	if peak-baseline > growthBound {
		t.Fatalf("RSS grew by %d MiB while the client did not read (bound %d MiB)", (peak-baseline)>>20, growthBound>>20)
	}
	if n > maxInFlight+16 { // + answers that fit in the stdout pipe, lines read ahead
		t.Fatalf("serve read %d requests while none could be answered (bound %d)", n, maxInFlight)
	}
	// The client reads again: every request gets its answer.
	got := 0
	for got < int(n) || got < int(written.Load()) {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v\n%s", got, err, s.stderr.String())
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil || m["result"] == nil {
			t.Fatalf("answer %d: %.200q", got, line)
		}
		got++
		if got == int(n) {
			<-writerDone // the writer's last line is in; count it too
		}
	}
	s.stdin.Close()
	io.Copy(io.Discard, br)
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, s.stderr.String())
	}
}

// The SDK answers initialize (and a call it refuses at once) in line, and
// handles notifications one at a time behind it in a queue of its own.
// While such an answer cannot be written because the client stopped
// reading, a client streaming notifications does not make serve grow:
// serve stops reading stdin after a few, and resumes, losing nothing, when
// the client reads again. Before the bound, serve queued every
// notification and grew by their size (2.4 GiB after 1,500 of 1 MB).
func TestServeMemoryIsBoundedWhileAnAnswerWaits(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	const (
		pending       = 16    // mcp.MaxPendingNotifications
		fill          = 40    // tools/list answers waiting behind the full stdout pipe
		notifications = 20000 // 3 KiB each: 60 MiB in all
		growthBound   = 64 << 20
	)
	in := newInstall(t)
	s := startRawServe(t, in)
	// The stdout pipe holds one page: once a tools/list answer (larger
	// than a page) fills it, every later answer waits, however slowly a
	// loaded machine runs the server.
	stdout := s.stdout.(*os.File)
	shrinkPipe(t, stdout)
	br := bufio.NewReaderSize(s.stdout, 1<<20)
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if _, err := br.ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	baseline := vmHWM(t, s.cmd.Process.Pid)
	// Nobody reads stdout from here on.
	for i := 1; i <= fill; i++ {
		s.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/list","params":{}}`)
	}
	// The second initialize is sent only once the pipe is full, so its
	// in-line answer cannot be written (a condition, not a delay).
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if queued, capacity := pipeFill(t, stdout); queued >= capacity {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tools/list answers never filled the stdout pipe\n%s", s.stderr.String())
		}
	}
	s.send(`{"jsonrpc":"2.0","id":"init2","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"` + strings.Repeat("A", 3<<10) + `"}}` + "\n"
	var written, stop atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; i < notifications && stop.Load() == 0; i++ {
			if _, err := io.WriteString(s.stdin, note); err != nil {
				return
			}
			written.Add(1)
		}
	}()
	var peak int64
	last, still := int64(-1), 0
	for still < 20 {
		select {
		case <-writerDone:
			still = 20
		case <-time.After(100 * time.Millisecond):
		}
		peak = vmHWM(t, s.cmd.Process.Pid)
		if peak-baseline > growthBound {
			break
		}
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	stop.Store(1)
	n := written.Load()
	t.Logf("stalled after %d notifications; peak RSS %d MiB, %d MiB over the idle server", n, peak>>20, (peak-baseline)>>20)
	if peak-baseline > growthBound {
		t.Fatalf("RSS grew by %d MiB while an answer waited (bound %d MiB)", (peak-baseline)>>20, growthBound>>20)
	}
	// pending handed to the SDK, one held, one in the line reader, what
	// its 64 KiB buffer and the 64 KiB stdin pipe hold.
	if max := int64(pending + 2 + 2*(64<<10)/len(note) + 2); n > max {
		t.Fatalf("serve read %d notifications while an answer waited (bound %d)", n, max)
	}
	// The client reads again: every call is answered, in full.
	answers := make(chan map[string]any, 64)
	go func() {
		defer close(answers)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				t.Errorf("stdout line is not JSON: %.200q", line)
				return
			}
			answers <- m
		}
	}()
	<-writerDone
	s.send(`{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{}}`)
	// Every answer, in whatever order the server writes them: the
	// tools/list answers that waited need not come before the last one.
	lists, initAnswered, initRefused, after := 0, false, false, false
	deadline := time.After(60 * time.Second) // only a hung server hits this
	for lists < fill || !initAnswered || !after {
		select {
		case m, ok := <-answers:
			if !ok {
				t.Fatalf("stdout ended after %d tools/list answers\n%s", lists, s.stderr.String())
			}
			switch {
			case m["id"] == "after":
				after = m["result"] != nil
				if !after {
					t.Fatalf("answer after the flood: %v", m)
				}
			case m["id"] == "init2":
				initAnswered, initRefused = true, m["error"] != nil
			case m["result"] != nil:
				lists++
			default:
				t.Fatalf("unexpected line: %v", m)
			}
		case <-deadline:
			t.Fatalf("after the flood: %d of %d tools/list answered, second initialize answered %v, last call answered %v", lists, fill, initAnswered, after)
		}
	}
	if lists != fill || !initRefused {
		t.Fatalf("%d of %d tools/list answered; second initialize refused: %v", lists, fill, initRefused)
	}
	s.stdin.Close()
	for range answers {
	}
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, s.stderr.String())
	}
}
