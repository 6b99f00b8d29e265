package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent"
	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

// Bench provides each case's server.
type Bench interface {
	// Open makes a fresh home with the case's effective policy, kill
	// switch and seeded paper account, and connects an MCP client that
	// declares no elicitation (nothing can be approved: an action to
	// confirm is refused, or parked where a channel exists). It
	// returns the session, the seeded orders' order ids by client order
	// id, and a function that ends the session and removes the home.
	Open(ctx context.Context, f *CaseFile, c *Case) (cs *sdk.ClientSession, orderIDs map[string]string, closeFn func(), err error)
}

// Options configure an eval run.
type Options struct {
	Model llm.Provider
	Cases *CaseFile
	// Only, when not empty, runs these case ids only.
	Only   []string
	Runs   int
	Budget decimal.Decimal
	Prices agent.Prices
	// Descriptions replaces the descriptions of the tools it names.
	Descriptions map[string]string
	// Progress, when set, gets one line per case.
	Progress io.Writer
}

// MaxSteps bounds the model calls of one case: reads before the decision.
const MaxSteps = 6

// LoadDescriptions reads a {tool: description} file.
func LoadDescriptions(file string) (map[string]string, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("descriptions: %w", err)
	}
	var d map[string]string
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("descriptions %s: %w", file, err)
	}
	return d, nil
}

// Selected returns the cases the run covers.
func (o *Options) Selected() []Case {
	if len(o.Only) == 0 {
		return o.Cases.Cases
	}
	want := map[string]bool{}
	for _, id := range o.Only {
		want[id] = true
	}
	var out []Case
	for _, c := range o.Cases.Cases {
		if want[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// Run runs every selected case Runs times and returns the report, partial
// when the budget stopped it.
func Run(ctx context.Context, bench Bench, o Options) (*Report, error) {
	if o.Runs <= 0 {
		o.Runs = 1
	}
	cases := o.Selected()
	meter, err := agent.NewMeter(o.Prices, o.Model.Name(), o.Model.Model(), o.Budget)
	if err != nil {
		return nil, err
	}
	rep := &Report{Provider: o.Model.Name(), Model: o.Model.Model(), Runs: o.Runs, Cases: len(cases), BudgetUSD: o.Budget, Results: []Result{}}
	defer func() { rep.CostUSD = meter.Cost; rep.Metrics = ComputeMetrics(cases, rep.Results) }()
	for run := 1; run <= o.Runs; run++ {
		for i := range cases {
			c := &cases[i]
			if err := meter.Check(); err != nil {
				rep.StoppedByBudget = true
				return rep, nil
			}
			res, err := runCase(ctx, bench, o, meter, c, run)
			if errors.Is(err, agent.ErrBudget) {
				rep.StoppedByBudget = true
				return rep, nil
			}
			if err != nil {
				return rep, err
			}
			rep.Results = append(rep.Results, res)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%s run %d: %s\n", c.ID, run, map[bool]string{true: "pass", false: "FAIL"}[res.Pass])
			}
		}
	}
	return rep, nil
}

// runCase runs one case on a fresh home. A model error is the case's
// result (kind error); the harness's own failure is returned.
func runCase(ctx context.Context, bench Bench, o Options, meter *agent.Meter, c *Case, run int) (Result, error) {
	res := Result{Case: c.ID, Run: run, Expected: c.Expect}
	cs, orderIDs, closeFn, err := bench.Open(ctx, o.Cases, c)
	if err != nil {
		return res, fmt.Errorf("case %s: %w", c.ID, err)
	}
	defer closeFn()
	var decision *agent.CallRecord
	s := &agent.Session{MCP: cs, Model: o.Model, Meter: meter, MaxSteps: MaxSteps,
		AfterCall: func(rec agent.CallRecord) bool {
			if isDecision(rec) {
				decision = &rec
				return false
			}
			return true
		}}
	if err := s.ListTools(ctx, o.Descriptions); err != nil {
		return res, fmt.Errorf("case %s: %w", c.ID, err)
	}
	if err := checkDescriptions(o.Descriptions, s.Tools()); err != nil {
		return res, err
	}
	turn, err := s.Turn(ctx, c.Prompt)
	switch {
	case errors.Is(err, agent.ErrBudget) && decision == nil:
		return res, err
	case decision != nil:
		res.Got = gotCall(*decision)
	case err != nil:
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Got = Got{Kind: "error", Text: agent.OneLine(err.Error(), 240)}
	default:
		res.Got = gotText(turn.Text)
	}
	res.Pass = Pass(c.Expect, res.Got, orderIDs)
	return res, nil
}

// checkDescriptions refuses a description for a tool the server does not
// list: a typo would silently compare nothing.
func checkDescriptions(d map[string]string, tools []llm.Tool) error {
	listed := map[string]bool{}
	for _, t := range tools {
		listed[t.Name] = true
	}
	for name := range d {
		if !listed[name] {
			return fmt.Errorf("descriptions: %q is not a tool the server lists", name)
		}
	}
	return nil
}
