package agent

import (
	"context"
	"errors"
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

// cutOffModel's answers are cut off at the token bound.
type cutOffModel struct{}

func (cutOffModel) Name() string  { return llm.Fake }
func (cutOffModel) Model() string { return "cut-off" }
func (cutOffModel) Complete(ctx context.Context, req llm.Request, onText func(string)) (llm.Reply, error) {
	return llm.Reply{Usage: llm.Usage{InputTokens: 1000, OutputTokens: 2048}}, llm.ErrCutOff
}

// An answer cut off at the token bound ends the turn with the error, and
// its tokens are counted: they are paid for, and the budget sees them.
func TestCutOffAnswerIsCounted(t *testing.T) {
	prices := Prices{"fake/*": {InputPerMTok: decimal.NewFromInt(1), OutputPerMTok: decimal.NewFromInt(1)}}
	meter, err := NewMeter(prices, llm.Fake, "cut-off", decimal.Zero)
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Model: cutOffModel{}, Meter: meter}
	res, err := s.Turn(context.Background(), "buy")
	if !errors.Is(err, llm.ErrCutOff) || len(res.Calls) != 0 {
		t.Fatalf("turn %+v, error %v", res, err)
	}
	if meter.Usage.InputTokens != 1000 || meter.Usage.OutputTokens != 2048 || !meter.Cost.Equal(decimal.RequireFromString("0.003048")) || res.Usage != meter.Usage {
		t.Fatalf("counted %+v, cost %s; turn %+v", meter.Usage, meter.Cost, res.Usage)
	}
}
