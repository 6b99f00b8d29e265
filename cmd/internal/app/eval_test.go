package app

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent"
	"github.com/guarded-exchange/guarded-exchange/cli/agent/eval"
	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
)

// evalFull runs every shipped case; make test runs one case per category.
var evalFull = flag.Bool("eval.full", false, "run every shipped eval case, not one per category")

// shippedCases returns the shipped case file and the ids this run covers:
// all with -eval.full, else the first case of each category.
func shippedCases(t *testing.T) (*eval.CaseFile, []string) {
	t.Helper()
	f, err := eval.LoadCases("")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	seen := map[string]bool{}
	for _, c := range f.Cases {
		if *evalFull || !seen[c.Category] {
			ids = append(ids, c.ID)
			seen[c.Category] = true
		}
	}
	return f, ids
}

func runEval(t *testing.T, script string, only []string, budget decimal.Decimal, prices agent.Prices) *eval.Report {
	t.Helper()
	f, _ := eval.LoadCases("")
	model, err := llm.NewFake(script)
	if err != nil {
		t.Fatal(err)
	}
	if prices == nil {
		prices = agent.DefaultPrices()
	}
	rep, err := eval.Run(context.Background(), (&Runtime{Release: "test"}).EvalBench(), eval.Options{Model: model, Cases: f, Only: only, Runs: 1, Budget: budget, Prices: prices})
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	return rep
}

func selected(f *eval.CaseFile, ids []string) []eval.Case {
	var out []eval.Case
	for _, c := range f.Cases {
		if slices.Contains(ids, c.ID) {
			out = append(out, c)
		}
	}
	return out
}

func rate(num, den int) *float64 {
	if den == 0 {
		return nil
	}
	v := float64(num) / float64(den)
	return &v
}

func checkMetrics(t *testing.T, got eval.Metrics, want eval.Metrics) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("metrics\n got %s\nwant %s", g, w)
	}
}

// The shipped cases hold what the issue asks: three languages, at least
// 60 cases, at least 25 dangerous, every trading tool expected somewhere.
func TestShippedCasesCoverTheIssue(t *testing.T) {
	f, _ := shippedCases(t)
	langs, tools := map[string]int{}, map[string]bool{}
	dangerous := 0
	for _, c := range f.Cases {
		langs[c.Lang]++
		if c.Dangerous {
			dangerous++
		}
		if c.Expect.Kind == eval.ExpectCall {
			tools[c.Expect.Tool] = true
		}
	}
	if len(f.Cases) < 60 || dangerous < 25 || len(langs) != 3 || langs["en"] == 0 || langs["ru"] == 0 || langs["de"] == 0 {
		t.Fatalf("%d cases, %d dangerous, languages %v", len(f.Cases), dangerous, langs)
	}
	for _, tool := range []string{"place_order", "cancel_order", "amend_order", "cancel_all_orders", "close_position", "set_trading_stop", "set_leverage"} {
		if !tools[tool] {
			t.Errorf("no case expects %s", tool)
		}
	}
}

// A model that always refuses: it passes exactly the cases expecting a
// refusal, fails those expecting a question or a call, and makes no call
// for the guard to catch (a rate with nothing to count is null).
func TestEvalAlwaysRefusingModel(t *testing.T) {
	f, ids := shippedCases(t)
	rep := runEval(t, llm.FakeRefuse, ids, decimal.Zero, nil)
	cases := selected(f, ids)
	var dangerous, dangerousRefuse, refuse, clarify, call int
	for _, c := range cases {
		switch c.Expect.Kind {
		case eval.ExpectRefuse:
			refuse++
		case eval.ExpectClarify:
			clarify++
		case eval.ExpectCall:
			call++
		}
		if c.Dangerous {
			dangerous++
			if c.Expect.Kind == eval.ExpectRefuse {
				dangerousRefuse++
			}
		}
	}
	if rep.Cases != len(cases) || len(rep.Results) != len(cases) || rep.StoppedByBudget {
		t.Fatalf("%d cases, %d results, stopped %v", rep.Cases, len(rep.Results), rep.StoppedByBudget)
	}
	checkMetrics(t, rep.Metrics, eval.Metrics{
		DangerousPassRate:       rate(dangerousRefuse, dangerous),
		RefuseOrClarifyAccuracy: rate(refuse, refuse+clarify),
		ToolAccuracy:            rate(0, call),
		OverallPassRate:         rate(refuse, len(cases)),
		GuardCatchRate:          nil,
	})
}

// fakeOrderCaught derives from a case's stated policy whether the server
// refuses or parks the fake model's order (a market buy of 0.001
// BTCUSDT, about 60 USDT on paper): the kill switch, a confirmation for
// place_order, BTCUSDT outside the allowlist, a cap under 100 USDT, or a
// max_leverage under the paper account's leverage (10, docs/simulator.md).
func fakeOrderCaught(t *testing.T, f *eval.CaseFile, c *eval.Case) bool {
	p, err := f.EffectivePolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	hundred := decimal.NewFromInt(100)
	return c.KillSwitch ||
		(p.ConfirmActions != nil && slices.Contains(*p.ConfirmActions, "place_order")) ||
		(p.Allow != nil && !slices.Contains(*p.Allow, "linear:BTCUSDT")) ||
		(p.MaxOrderNotionalUSDT != nil && p.MaxOrderNotionalUSDT.LessThan(hundred)) ||
		(p.DailyNotionalCapUSDT != nil && p.DailyNotionalCapUSDT.LessThan(hundred)) ||
		(p.MaxLeverage != nil && p.MaxLeverage.LessThan(decimal.NewFromInt(10)) && holdsBTCUSDT(c))
}

// holdsBTCUSDT reports whether the case seeds a BTCUSDT position. A paper
// account starts at 10x: with no position open, a new order first lowers
// the leverage to max_leverage and is sent (decisions D111); with one
// open, a max_leverage under 10 refuses it.
func holdsBTCUSDT(c *eval.Case) bool {
	return slices.ContainsFunc(c.Seed.Positions, func(p eval.SeedPosition) bool { return p.Symbol == "BTCUSDT" })
}

// A model that always places the same order: it passes exactly the cases
// expecting that very order, every one of its calls in a dangerous case
// is a dangerous call, and the guard catches those the case's policy
// forbids.
func TestEvalAlwaysOrderingModel(t *testing.T) {
	f, ids := shippedCases(t)
	rep := runEval(t, llm.FakePlaceOrder, ids, decimal.Zero, nil)
	cases := selected(f, ids)
	var dangerous, caught, refuseOrClarify, call, same int
	for i := range cases {
		c := &cases[i]
		if c.Dangerous {
			dangerous++
			if fakeOrderCaught(t, f, c) {
				caught++
			}
		}
		switch c.Expect.Kind {
		case eval.ExpectCall:
			call++
			if c.Expect.Tool == "place_order" && len(c.Expect.Arguments) == len(llm.FakeOrder) {
				match := true
				for k, v := range llm.FakeOrder {
					if c.Expect.Arguments[k] != v {
						match = false
					}
				}
				if match {
					same++
				}
			}
		default:
			refuseOrClarify++
		}
	}
	if same == 0 || caught == 0 || caught == dangerous {
		t.Fatalf("the selection does not exercise the metrics: %d same orders, %d of %d caught", same, caught, dangerous)
	}
	checkMetrics(t, rep.Metrics, eval.Metrics{
		DangerousPassRate:       rate(0, dangerous),
		RefuseOrClarifyAccuracy: rate(0, refuseOrClarify),
		ToolAccuracy:            rate(same, call),
		OverallPassRate:         rate(same, len(cases)),
		GuardCatchRate:          rate(caught, dangerous),
	})
}

// The budget is a hard stop: once the cost reached it no case starts, and
// the partial report says so in both files.
func TestEvalStopsAtTheBudget(t *testing.T) {
	_, ids := shippedCases(t)
	prices := agent.Prices{"fake/*": {InputPerMTok: decimal.NewFromInt(1_000_000), OutputPerMTok: decimal.NewFromInt(1_000_000)}}
	budget := decimal.NewFromInt(500) // a model call of the refuse script costs some 200 USD here
	rep := runEval(t, llm.FakeRefuse, ids, budget, prices)
	if !rep.StoppedByBudget || len(rep.Results) == 0 || len(rep.Results) >= len(ids) || rep.CostUSD.LessThan(budget) {
		t.Fatalf("stopped %v after %d of %d cases at %s", rep.StoppedByBudget, len(rep.Results), len(ids), rep.CostUSD)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	js, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if !strings.Contains(string(md), "Stopped by the budget") || !strings.Contains(string(js), `"stopped_by_budget": true`) {
		t.Fatalf("the partial report does not say so:\n%s\n%s", md, js)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(js, &fields); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"budget_usd", "cases", "cost_usd", "metrics", "model", "provider", "results", "runs", "stopped_by_budget"}; !slices.Equal(keys, want) {
		t.Fatalf("report.json fields %v, want %v", keys, want)
	}
}

// recordingModel is the fake provider that keeps the tools it was
// offered.
type recordingModel struct {
	llm.Provider
	tools []llm.Tool
}

func (m *recordingModel) Complete(ctx context.Context, req llm.Request, onText func(string)) (llm.Reply, error) {
	m.tools = req.Tools
	return m.Provider.Complete(ctx, req, onText)
}

// --descriptions replaces the descriptions of the tools it names, and
// only those; a name the server does not list refuses the run.
func TestEvalDescriptionsReplaceToolDescriptions(t *testing.T) {
	f, _ := eval.LoadCases("")
	fake, _ := llm.NewFake(llm.FakeRefuse)
	m := &recordingModel{Provider: fake}
	bench := (&Runtime{Release: "test"}).EvalBench()
	o := eval.Options{Model: m, Cases: f, Only: []string{"buy-market-en"}, Prices: agent.DefaultPrices(),
		Descriptions: map[string]string{"place_order": "REPLACED description"}}
	if _, err := eval.Run(context.Background(), bench, o); err != nil {
		t.Fatal(err)
	}
	replaced, others := 0, 0
	for _, tool := range m.tools {
		switch {
		case tool.Name == "place_order" && tool.Description == "REPLACED description":
			replaced++
		case tool.Name != "place_order" && tool.Description != "" && tool.Description != "REPLACED description":
			others++
		}
	}
	if replaced != 1 || others != len(m.tools)-1 {
		t.Fatalf("%d replaced, %d others of %d tools", replaced, others, len(m.tools))
	}
	o.Descriptions = map[string]string{"no_such_tool": "x"}
	if _, err := eval.Run(context.Background(), bench, o); err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Fatalf("an unknown tool's description: %v", err)
	}
}

// malformedCallModel calls place_order with arguments that are not a JSON
// object, then answers with text.
type malformedCallModel struct{ llm.Provider }

func (m malformedCallModel) Complete(ctx context.Context, req llm.Request, onText func(string)) (llm.Reply, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleUser {
		return llm.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "place_order", Arguments: json.RawMessage(`"buy 1 BTC"`)}}}, nil
	}
	return llm.Reply{Text: "done"}, nil
}

// The guard catch rate scores the server: a state-changing call the
// harness could not send (its arguments are not a JSON object) is the
// model's failed decision, but no catch of the server's — here, where
// the kill switch would have refused it, the rate has nothing to count.
func TestEvalCallNeverSentIsNoGuardCatch(t *testing.T) {
	f, _ := eval.LoadCases("")
	fake, _ := llm.NewFake(llm.FakeRefuse)
	o := eval.Options{Model: malformedCallModel{fake}, Cases: f, Only: []string{"kill-switch-off-en"}, Prices: agent.DefaultPrices()}
	rep, err := eval.Run(context.Background(), (&Runtime{Release: "test"}).EvalBench(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Pass || rep.Results[0].Got.Kind != eval.ExpectCall || rep.Results[0].Got.Guard != eval.GuardNotSent {
		t.Fatalf("results %+v", rep.Results)
	}
	checkMetrics(t, rep.Metrics, eval.Metrics{
		DangerousPassRate:       rate(0, 1),
		RefuseOrClarifyAccuracy: rate(0, 1),
		ToolAccuracy:            nil,
		OverallPassRate:         rate(0, 1),
		GuardCatchRate:          nil,
	})
}
