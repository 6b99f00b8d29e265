package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptedTerminal is a terminal whose human types typed.
type scriptedTerminal struct {
	in     io.Reader
	screen *bytes.Buffer
}

func (s scriptedTerminal) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s scriptedTerminal) Write(p []byte) (int, error) { return s.screen.Write(p) }
func (s scriptedTerminal) Close() error                { return nil }

// The form shows the server's message line by line with every terminal
// control sequence made printable, and only a typed y or yes approves;
// without a terminal the form is declined.
func TestFormOnTheTerminal(t *testing.T) {
	message := "Buy 1 BTCUSDT\x1b[2J\x1b]0;owned\x07\u202e\x9b6n\u009b6n\nsecond line"
	for typed, want := range map[string]string{"y\n": "accept", "YES\n": "accept", "n\n": "decline", "\n": "decline", "yy\n": "decline", "": "decline"} {
		screen := &bytes.Buffer{}
		open := func() (io.ReadWriteCloser, error) {
			return scriptedTerminal{in: strings.NewReader(typed), screen: screen}, nil
		}
		res, err := FormHandler(open, nil)(context.Background(), &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: message}})
		if err != nil || res.Action != want {
			t.Fatalf("typed %q: %+v %v, want %s", typed, res, err, want)
		}
		shown := screen.String()
		if strings.ContainsAny(shown, "\x1b\x07\u202e\u009b") || !strings.Contains(shown, "Buy 1 BTCUSDT") || !strings.Contains(shown, "\nsecond line\n") || !strings.Contains(shown, FormPrompt) {
			t.Fatalf("typed %q: the terminal showed %q", typed, shown)
		}
	}
	var note bytes.Buffer
	res, err := FormHandler(func() (io.ReadWriteCloser, error) { return nil, errors.New("no tty") }, &note)(context.Background(), &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: message}})
	if err != nil || res.Action != "decline" || !strings.Contains(note.String(), "no terminal") {
		t.Fatalf("without a terminal: %+v %v %q", res, err, note.String())
	}
}

// lockedBuffer is a screen that several forms may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sharedTerminal is one terminal opened by several forms.
type sharedTerminal struct {
	in     io.Reader
	screen io.Writer
}

func (s sharedTerminal) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s sharedTerminal) Write(p []byte) (int, error) { return s.screen.Write(p) }
func (s sharedTerminal) Close() error                { return nil }

// Forms asked at the same time (an MRTR answer may hold several input
// requests, fulfilled concurrently) are shown one at a time: the line the
// human types answers the one form on the screen, never another one.
func TestFormsAreShownOneAtATime(t *testing.T) {
	typed, typing := io.Pipe()
	defer typing.Close()
	screen := &lockedBuffer{}
	handler := FormHandler(func() (io.ReadWriteCloser, error) { return sharedTerminal{in: typed, screen: screen}, nil }, nil)
	results := map[string]chan string{"FORM-A": make(chan string, 1), "FORM-B": make(chan string, 1)}
	for msg, res := range results {
		go func() {
			r, err := handler(context.Background(), &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: msg}})
			if err != nil {
				res <- err.Error()
				return
			}
			res <- r.Action
		}()
	}
	waitPrompts := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(screen.String(), FormPrompt) < n {
			if time.Now().After(deadline) {
				t.Fatalf("no %d prompts: %q", n, screen.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitPrompts(1)
	time.Sleep(200 * time.Millisecond) // the other form has every chance to show itself
	shown := screen.String()
	if strings.Count(shown, FormPrompt) != 1 {
		t.Fatalf("two forms on the screen at once:\n%s", shown)
	}
	first, second := "FORM-A", "FORM-B"
	if !strings.Contains(shown, first) {
		first, second = second, first
	}
	io.WriteString(typing, "y\n")
	waitPrompts(2)
	io.WriteString(typing, "n\n")
	if got := <-results[first]; got != "accept" {
		t.Fatalf("the form on the screen got %q", got)
	}
	if got := <-results[second]; got != "decline" {
		t.Fatalf("the second form got %q", got)
	}
}
