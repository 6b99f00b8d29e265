package agent

import (
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

// ErrBudget is the session's end at its budget: no further model call is
// made once the cost so far reached --budget-usd.
var ErrBudget = errors.New("the budget is spent")

// Meter counts tokens and cost, and stops at the budget. The budget is
// checked before each model call, so the last call may end a little
// above it; none starts at or above it.
type Meter struct {
	price  Price
	priced bool
	// Budget is the most the session may spend, in USD; zero is none.
	Budget decimal.Decimal
	// Usage and Cost are the totals so far.
	Usage llm.Usage
	Cost  decimal.Decimal
}

// NewMeter prices provider's model from the table. A budget needs a
// price: a model the table does not know refuses to start with one.
func NewMeter(prices Prices, provider, model string, budget decimal.Decimal) (*Meter, error) {
	if budget.IsNegative() {
		return nil, fmt.Errorf("the budget is negative")
	}
	p, ok := prices.Lookup(provider, model)
	if !ok && budget.IsPositive() {
		return nil, fmt.Errorf("the price table has no price for %s/%s, so the budget cannot be kept; give one with --prices FILE", provider, model)
	}
	return &Meter{price: p, priced: ok, Budget: budget}, nil
}

// Priced reports whether the table knows the model's price.
func (m *Meter) Priced() bool { return m.priced }

// Add counts one completion and returns its cost.
func (m *Meter) Add(u llm.Usage) decimal.Decimal {
	c := m.price.Cost(u)
	m.Usage = m.Usage.Add(u)
	m.Cost = m.Cost.Add(c)
	return c
}

// Check returns ErrBudget once the cost reached the budget.
func (m *Meter) Check() error {
	if m.Budget.IsPositive() && m.Cost.GreaterThanOrEqual(m.Budget) {
		return ErrBudget
	}
	return nil
}

// FormatUSD prints an amount of USD for the console and the reports.
func FormatUSD(d decimal.Decimal) string { return "$" + d.StringFixed(6) }
