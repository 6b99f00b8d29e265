package cli

import (
	"context"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent"
)

// ModelFlags choose the model, for agent and eval.
type ModelFlags struct {
	Provider string `default:"anthropic" enum:"anthropic,openai,openai-compatible,fake" help:"anthropic (ANTHROPIC_API_KEY), openai (OPENAI_API_KEY), openai-compatible (a local server at --base-url, key GX_AGENT_API_KEY if it needs one) or fake (a scripted stand-in: says nothing about any model)"`
	Model    string `help:"the model (default per provider; fake: refuse or place-order)"`
	BaseURL  string `name:"base-url" help:"the provider's API address, e.g. http://127.0.0.1:8080/v1 for llama.cpp" placeholder:"URL"`
	Prices   string `help:"price table file (USD per million tokens) replacing the shipped one" placeholder:"FILE" type:"existingfile"`
}

// AgentCmd is `agent`.
type AgentCmd struct {
	ModelFlags
	MCPURL    string `name:"mcp-url" help:"a server's MCP endpoint (Streamable HTTP, bearer token from GX_TOKEN); default: start serve over stdio on this home" placeholder:"URL"`
	Prompt    string `help:"run this one turn and exit"`
	MaxTurns  int    `name:"max-turns" default:"10" help:"the most model calls in one turn"`
	BudgetUSD string `name:"budget-usd" default:"0" help:"stop once the session's model cost reached this many USD (0: no budget)" placeholder:"USD"`
}

// Run runs the console agent.
func (c *AgentCmd) Run(ctx context.Context, g *Globals, io IO, kongVars versionVar) error {
	budget, err := decimal.NewFromString(strings.TrimSpace(c.BudgetUSD))
	if err != nil || budget.IsNegative() {
		return CannotStart("--budget-usd must be a non-negative amount")
	}
	o := agent.Options{
		Provider: c.Provider, Model: c.Model, BaseURL: c.BaseURL, MCPURL: c.MCPURL, ServeArgs: serveArgs(g),
		Prompt: c.Prompt, MaxSteps: c.MaxTurns, BudgetUSD: budget, PricesFile: c.Prices, Version: string(kongVars),
	}
	if err := agent.Run(ctx, o, agent.Streams{In: io.In, Out: io.Out, Err: io.Err}); err != nil {
		return Refused("agent: %v", err)
	}
	return nil
}

// versionVar is the release, bound for the commands that report it.
type versionVar string

// serveArgs are the global flags that make `serve` act on the same home,
// user and venue as this process.
func serveArgs(g *Globals) []string {
	var a []string
	add := func(flag, v string) {
		if v != "" {
			a = append(a, flag+"="+v)
		}
	}
	add("--home", g.Home)
	add("--master-key-file", g.MasterKeyFile)
	add("--user", g.User)
	add("--venue", g.Venue)
	add("--env-file", g.EnvFile)
	return a
}
