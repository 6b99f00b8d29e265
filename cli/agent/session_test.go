package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

// textModel answers with fixed text, streamed in pieces.
type textModel struct{ pieces []string }

func (m textModel) Name() string  { return llm.Fake }
func (m textModel) Model() string { return "text" }
func (m textModel) Complete(ctx context.Context, req llm.Request, onText func(string)) (llm.Reply, error) {
	for _, p := range m.pieces {
		onText(p)
	}
	return llm.Reply{Text: strings.Join(m.pieces, "")}, nil
}

// The model's streamed text keeps its lines and loses every other control
// character: an answer in several lines reads as such, and escape
// sequences never reach the terminal.
func TestStreamedTextKeepsLinesOnly(t *testing.T) {
	meter, err := NewMeter(DefaultPrices(), llm.Fake, "text", decimal.Zero)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s := &Session{Model: textModel{pieces: []string{"Two steps:\n1. read", "\n2. \x1b]52;c;eQ==\x07ask\r\n"}}, Meter: meter, Out: &out}
	if _, err := s.Turn(context.Background(), "plan"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "Two steps:\n1. read\n2. ") || strings.ContainsAny(got, "\x1b\x07\r") {
		t.Fatalf("shown %q", got)
	}
}
