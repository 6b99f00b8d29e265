package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// The fake provider's scripts, chosen with --model.
const (
	// FakeRefuse answers every request with a refusal and calls nothing.
	FakeRefuse = "refuse"
	// FakePlaceOrder answers a user's message with one call of
	// place_order (FakeOrder), and a tool result with a short text.
	FakePlaceOrder = "place-order"
)

// FakeOrder is the order the place-order script places: a market buy of
// 0.001 BTCUSDT on the linear market.
var FakeOrder = map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "order_type": "Market", "qty": "0.001"}

// FakeRefusal is the refuse script's answer.
const FakeRefusal = "I will not do that: it is outside what I may do for you."

// fakeProvider is a scripted stand-in: it checks the agent and the eval
// harness and says nothing about any model. It counts a token per four
// bytes of request and answer, so budgets and prices can be tested.
type fakeProvider struct {
	script string
	calls  int
}

// NewFake returns the fake provider running script.
func NewFake(script string) (Provider, error) {
	switch script {
	case FakeRefuse, FakePlaceOrder:
		return &fakeProvider{script: script}, nil
	}
	return nil, fmt.Errorf("the fake provider has the scripts %q and %q, not %q", FakeRefuse, FakePlaceOrder, script)
}

func (p *fakeProvider) Name() string  { return Fake }
func (p *fakeProvider) Model() string { return p.script }

// Complete plays the script.
func (p *fakeProvider) Complete(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	p.calls++
	var out Reply
	last := Message{}
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
	}
	switch {
	case p.script == FakePlaceOrder && last.Role == RoleUser:
		args, _ := json.Marshal(FakeOrder)
		out.ToolCalls = []ToolCall{{ID: fmt.Sprintf("fake_call_%d", p.calls), Name: "place_order", Arguments: args}}
	case p.script == FakePlaceOrder:
		out.Text = "The order request went to the server; its answer is above."
	default:
		out.Text = FakeRefusal
	}
	if onText != nil && out.Text != "" {
		onText(out.Text)
	}
	in, _ := json.Marshal(req.Messages)
	outBytes, _ := json.Marshal(out.ToolCalls)
	out.Usage = Usage{InputTokens: int64(len(req.System)+len(in)) / 4, OutputTokens: int64(len(out.Text)+len(outBytes)) / 4}
	return out, nil
}
