package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

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
