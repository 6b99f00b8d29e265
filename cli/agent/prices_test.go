package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

// The shipped table prices every provider's default model, and a cost is
// tokens times the price per million.
func TestShippedPricesCoverTheDefaults(t *testing.T) {
	p := DefaultPrices()
	for provider, model := range llm.DefaultModels {
		if _, ok := p.Lookup(provider, model); !ok {
			t.Errorf("no price for the default %s/%s", provider, model)
		}
	}
	price, _ := p.Lookup(llm.Anthropic, "claude-sonnet-4-5")
	if got := price.Cost(llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}); !got.Equal(decimal.NewFromFloat(4.5)) {
		t.Fatalf("cost %s, want 4.5", got)
	}
}

// A budget needs a price; the meter stops once the cost reached it, not
// before.
func TestMeterBudget(t *testing.T) {
	if _, err := NewMeter(Prices{}, "openai", "unknown", decimal.NewFromInt(1)); err == nil {
		t.Fatal("a budget without a price started")
	}
	m, err := NewMeter(Prices{"x/*": {InputPerMTok: decimal.NewFromInt(1_000_000)}}, "x", "m", decimal.NewFromInt(10))
	if err != nil {
		t.Fatal(err)
	}
	m.Add(llm.Usage{InputTokens: 9})
	if m.Check() != nil {
		t.Fatal("stopped under the budget")
	}
	m.Add(llm.Usage{InputTokens: 1})
	if m.Check() != ErrBudget {
		t.Fatalf("not stopped at the budget: cost %s", m.Cost)
	}
}

// A price file replaces the table; a negative price is refused.
func TestLoadPrices(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"_note":"x","fake/*":{"input_usd_per_mtok":"2","output_usd_per_mtok":"3"}}`), 0o600)
	os.WriteFile(bad, []byte(`{"fake/*":{"input_usd_per_mtok":"-1","output_usd_per_mtok":"3"}}`), 0o600)
	p, err := LoadPrices(good)
	if err != nil || len(p) != 1 || !p["fake/*"].OutputPerMTok.Equal(decimal.NewFromInt(3)) {
		t.Fatalf("%v %v", p, err)
	}
	if _, err := LoadPrices(bad); err == nil {
		t.Fatal("a negative price was accepted")
	}
}
