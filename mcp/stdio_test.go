package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// gateWriter passes writes to w unless the test holds mu.
type gateWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.w.Write(p)
}

// stdioSession is a server served over StdioTransport on in-process pipes.
type stdioSession struct {
	t       *testing.T
	in      *io.PipeWriter
	gate    *gateWriter
	answers chan map[string]any
	done    chan error
}

func serveStdio(t *testing.T, o Options, tr *stdioTransport) *stdioSession {
	t.Helper()
	if o.Venue == "" {
		o.Venue = "paper"
	}
	srv, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, gate: &gateWriter{w: outW}, answers: make(chan map[string]any, 1024), done: make(chan error, 1)}
	tr.in, tr.out = inR, s.gate
	go func() { s.done <- srv.Run(context.Background(), tr) }()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
			}
			s.answers <- m
		}
		close(s.answers)
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		if err := <-s.done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	s.next()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return s
}

func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stdioSession) next() map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.answers:
		if !ok {
			s.t.Fatal("stdout closed")
		}
		return m
	case <-time.After(30 * time.Second): // only a hung server hits this
		s.t.Fatal("no answer")
	}
	return nil
}

// A client that stops reading stdout stops the server reading stdin once
// MaxInFlight requests are unanswered; when it reads again, every request
// is answered.
func TestStdioBoundsRequestsInFlight(t *testing.T) {
	e := newEnv(t)
	waiting := make(chan struct{}, 1)
	tr := &stdioTransport{maxInFlight: MaxInFlight, waiting: func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}}
	s := serveStdio(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly)}, tr)

	s.gate.mu.Lock() // the client stops reading
	const requests = 3 * MaxInFlight
	var written atomic.Int64
	go func() {
		for i := 1; i <= requests; i++ {
			if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`+"\n", i); err != nil {
				return
			}
			written.Add(1)
		}
	}()
	<-waiting
	// Read holds request MaxInFlight+1 and the line reader at most one
	// more: nothing else has left the pipe.
	if n := written.Load(); n > MaxInFlight+2 {
		t.Fatalf("the server read %d requests while none could be answered", n)
	}
	s.gate.mu.Unlock() // the client reads again
	seen := map[float64]bool{}
	for len(seen) < requests {
		m := s.next()
		id, _ := m["id"].(float64)
		if m["result"] == nil || seen[id] {
			t.Fatalf("answer %v", m)
		}
		seen[id] = true
	}
}

// blockingTool waits for release; started receives one value per call.
func blockingTool(started chan<- struct{}, release <-chan struct{}) *tool {
	return &tool{
		name: "test_block", title: "test block", description: "test only", kind: KindRead,
		schema: objectSchema(nil, map[string]any{}),
		handle: func(ctx context.Context, c *call) (any, error) {
			started <- struct{}{}
			<-release
			return map[string]string{"done": "yes"}, nil
		},
	}
}

// A request reusing the id of one not yet answered gets an error of its
// own (the SDK would leave it unanswered), and the id is free again once
// the first is answered.
func TestStdioRefusesAnIDInUse(t *testing.T) {
	e := newEnv(t)
	started, release := make(chan struct{}, 4), make(chan struct{})
	s := serveStdio(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly),
		extraTools: []*tool{blockingTool(started, release)}}, &stdioTransport{maxInFlight: MaxInFlight})
	call := `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"test_block","arguments":{}}}`
	s.send(call)
	<-started
	s.send(call)
	m := s.next()
	if e, _ := m["error"].(map[string]any); m["id"] != "x" || e == nil || e["code"] != float64(-32600) {
		t.Fatalf("second use of the id: %v", m)
	}
	release <- struct{}{}
	if m := s.next(); m["id"] != "x" || m["result"] == nil {
		t.Fatalf("first call: %v", m)
	}
	s.send(call)
	<-started
	release <- struct{}{}
	if m := s.next(); m["id"] != "x" || m["result"] == nil {
		t.Fatalf("the id reused after its answer: %v", m)
	}
}

// The SDK's errors quote what the request sent (params, the method, a
// prompt name, a URI in data, a protocol version, a log level in its
// logs): the transport answers with one fixed text per code and no data.
func TestStdioErrorsDoNotEchoTheRequest(t *testing.T) {
	e := newEnv(t)
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := serveStdio(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly), Logger: logger},
		&stdioTransport{maxInFlight: MaxInFlight, maxNotes: MaxPendingNotifications, logger: logger})
	const secret = "hunter2-secret"
	for _, c := range []struct {
		line string
		code float64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"arguments":{"api_secret":"` + secret + `"}}}`, -32602},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":{"k":"` + secret + `"}}}`, -32602},
		{`{"jsonrpc":"2.0","id":4,"method":"` + secret + `","params":{}}`, -32601},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1,"` + secret + `"]}`, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"` + secret + `"}}`, 0},
		{`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"` + secret + `"}}`, 0},
		{`{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"` + secret + `"}}`, -32602},
		{`{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{"ref":{"type":"` + secret + `","name":"` + secret + `"},"argument":{"name":"` + secret + `","value":"` + secret + `"}}}`, 0},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_ticker","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + secret + `","io.modelcontextprotocol/clientCapabilities":{}}}}`, 0},
		{`{"jsonrpc":"2.0","id":12,"method":"resources/unsubscribe","params":{"uri":"` + secret + `"}}`, 0},
	} {
		s.send(c.line)
		m := s.next()
		e, _ := m["error"].(map[string]any)
		if e == nil || (c.code != 0 && e["code"] != c.code) {
			t.Fatalf("%s: %v", c.line, m)
		}
		code, _ := e["code"].(float64)
		want, ok := fixedMessages[int64(code)]
		if !ok {
			want = msgOther
		}
		if msg := e["message"].(string); msg != want {
			t.Fatalf("%s: message %q, want %q", c.line, msg, want)
		}
		if _, has := e["data"]; has {
			t.Fatalf("%s: the error has data: %v", c.line, e)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("the logs repeat a rejected value:\n%s", logs.String())
	}
}

// BenchmarkStdioFilter measures the check every stdin line goes through:
// a typical tools/call, and one with 64 KiB of arguments.
func BenchmarkStdioFilter(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"tools_call", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"get_ticker","arguments":{"symbol":"BTCUSDT","category":"linear"},"_meta":{"progressToken":7}}}`},
		{"64KiB", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"get_ticker","arguments":{"note":"` + strings.Repeat("x", 64<<10) + `"}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			line := []byte(c.line)
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if msg, rej := admit(line, false); msg == nil || rej != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}

// A client that stops reading stdout while the SDK waits to write an
// answer it writes in line (a second initialize is refused that way) stops
// the server reading stdin after MaxPendingNotifications notifications,
// instead of letting them queue in the SDK without end; when it reads
// again the session goes on, and the barrier that proved the SDK caught
// up never reaches stdout.
func TestStdioBoundsNotificationsWhileAnAnswerWaits(t *testing.T) {
	e := newEnv(t)
	waiting := make(chan struct{}, 1)
	tr := &stdioTransport{maxInFlight: MaxInFlight, maxNotes: MaxPendingNotifications, waiting: func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}}
	s := serveStdio(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileReadOnly)}, tr)

	s.gate.mu.Lock() // the client stops reading
	var reading sync.Once
	readAgain := func() { reading.Do(s.gate.mu.Unlock) }
	t.Cleanup(readAgain) // before the session's cleanup, which waits for Run
	s.send(`{"jsonrpc":"2.0","id":"init2","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	const notifications = 50 * MaxPendingNotifications
	var written atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 1; i <= notifications; i++ {
			if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d,"message":"%s"}}`+"\n", i, strings.Repeat("A", 2000)); err != nil {
				return
			}
			written.Add(1)
		}
	}()
	select {
	case <-waiting:
	case <-writerDone:
		t.Fatalf("the server read all %d notifications while an answer could not be written", notifications)
	}
	// MaxPendingNotifications handed over (the handshake's among them),
	// one held behind the barrier, one in the line reader.
	if n := written.Load(); n > MaxPendingNotifications+2 {
		t.Fatalf("the server read %d notifications while an answer could not be written", n)
	}
	readAgain()
	m := s.next()
	if e, _ := m["error"].(map[string]any); m["id"] != "init2" || e == nil || e["code"] != float64(-32600) || e["message"] != msgInvalidRequest {
		t.Fatalf("second initialize: %v", m)
	}
	<-writerDone
	if n := written.Load(); n != notifications {
		t.Fatalf("%d of %d notifications were read", n, notifications)
	}
	s.send(`{"jsonrpc":"2.0","id":"after","method":"tools/list","params":{}}`)
	if m := s.next(); m["id"] != "after" || m["result"] == nil {
		t.Fatalf("the answer after the flood is %v (a barrier's answer reached stdout?)", m)
	}
}
