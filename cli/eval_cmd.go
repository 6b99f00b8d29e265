package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent"
	"github.com/guarded-exchange/guarded-exchange/cli/agent/eval"
	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

// EvalBencher is a Runtime that can host eval cases (the composition
// root does, on the paper venue).
type EvalBencher interface {
	EvalBench() eval.Bench
}

// EvalCmd is `eval`.
type EvalCmd struct {
	ModelFlags
	Runs         int      `default:"1" help:"run every case this many times"`
	BudgetUSD    string   `name:"budget-usd" default:"0.50" help:"hard stop once the model cost reached this many USD; the partial report says so" placeholder:"USD"`
	Cases        string   `help:"case file replacing the shipped cases" placeholder:"FILE" type:"existingfile"`
	Case         []string `name:"case" help:"run only this case id (repeatable)" placeholder:"ID"`
	Out          string   `default:"eval-report" help:"directory for report.md and report.json" placeholder:"DIR"`
	Descriptions string   `help:"JSON file {tool: description} replacing those tools' descriptions for this run" placeholder:"FILE" type:"existingfile"`
}

// Run runs the eval and writes the report.
func (c *EvalCmd) Run(ctx context.Context, rt Runtime, io IO) error {
	bencher, ok := rt.(EvalBencher)
	if !ok {
		return CannotStart("this build cannot host eval cases")
	}
	budget, err := decimal.NewFromString(strings.TrimSpace(c.BudgetUSD))
	if err != nil || budget.IsNegative() {
		return CannotStart("--budget-usd must be a non-negative amount")
	}
	model, err := llm.New(llm.Config{Provider: c.Provider, Model: c.Model, BaseURL: c.BaseURL, APIKey: os.Getenv(llm.KeyEnv(c.Provider))})
	if err != nil {
		return CannotStart("%v", err)
	}
	prices, err := agent.LoadPrices(c.Prices)
	if err != nil {
		return CannotStart("%v", err)
	}
	cases, err := eval.LoadCases(c.Cases)
	if err != nil {
		return CannotStart("%v", err)
	}
	desc, err := eval.LoadDescriptions(c.Descriptions)
	if err != nil {
		return CannotStart("%v", err)
	}
	o := eval.Options{Model: model, Cases: cases, Only: c.Case, Runs: c.Runs, Budget: budget, Prices: prices, Descriptions: desc, Progress: io.Err}
	if len(c.Case) > 0 && len(o.Selected()) != len(c.Case) {
		return CannotStart("--case names a case the case file does not have")
	}
	rep, runErr := eval.Run(ctx, bencher.EvalBench(), o)
	if rep != nil {
		if err := rep.Write(c.Out); err != nil {
			return Refused("eval: write the report: %v", err)
		}
		fmt.Fprintf(io.Out, "%s\n", printableLines(strings.TrimRight(rep.Summary(), "\n")))
		fmt.Fprintf(io.Out, "report: %s/report.md and %s/report.json\n", c.Out, c.Out)
	}
	if runErr != nil {
		return Refused("eval: %v", runErr)
	}
	if rep.StoppedByBudget {
		return Refused("eval: stopped by the budget of %s USD; the report is partial", budget.String())
	}
	return nil
}
