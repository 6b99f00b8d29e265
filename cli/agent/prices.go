package agent

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

//go:embed prices.json
var defaultPrices []byte

// Price is what a model costs, in USD per million tokens.
type Price struct {
	InputPerMTok  decimal.Decimal `json:"input_usd_per_mtok"`
	OutputPerMTok decimal.Decimal `json:"output_usd_per_mtok"`
}

// Prices is the price table: "provider/model" (or "provider/*") to Price.
type Prices map[string]Price

// DefaultPrices is the table shipped in the binary (prices.json).
func DefaultPrices() Prices {
	p, err := parsePrices(defaultPrices)
	if err != nil {
		panic(err) // the embedded table is checked by the tests
	}
	return p
}

// LoadPrices reads a price table file; "" is the shipped table.
func LoadPrices(file string) (Prices, error) {
	if file == "" {
		return DefaultPrices(), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	p, err := parsePrices(b)
	if err != nil {
		return nil, fmt.Errorf("price table %s: %w", file, err)
	}
	return p, nil
}

func parsePrices(b []byte) (Prices, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := Prices{}
	for k, v := range raw {
		if strings.HasPrefix(k, "_") {
			continue // comments
		}
		var p Price
		if err := json.Unmarshal(v, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if p.InputPerMTok.IsNegative() || p.OutputPerMTok.IsNegative() {
			return nil, fmt.Errorf("%s: a negative price", k)
		}
		out[k] = p
	}
	return out, nil
}

// Lookup returns the price of provider's model: the exact entry, else
// the provider's "*" entry.
func (t Prices) Lookup(provider, model string) (Price, bool) {
	if p, ok := t[provider+"/"+model]; ok {
		return p, true
	}
	p, ok := t[provider+"/*"]
	return p, ok
}

var million = decimal.NewFromInt(1_000_000)

// Cost is what u costs at p.
func (p Price) Cost(u llm.Usage) decimal.Decimal {
	return p.InputPerMTok.Mul(decimal.NewFromInt(u.InputTokens)).Add(p.OutputPerMTok.Mul(decimal.NewFromInt(u.OutputTokens))).Div(million)
}
