package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"
)

// firstTradeRecipe returns the README's "First trade" section: every
// command of its sh blocks, and those of the blocks marked
// <!-- test:run --> (the ones a fresh home runs as they are).
func firstTradeRecipe(t *testing.T) (all, marked []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(raw), "\n## First trade\n")
	if !ok {
		t.Fatal("README has no \"## First trade\" section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	lines := strings.Split(sec, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```sh" {
			continue
		}
		run := i > 0 && strings.TrimSpace(lines[i-1]) == "<!-- test:run -->"
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			cmd, _, _ := strings.Cut(lines[i], " #")
			if cmd = strings.TrimSpace(cmd); cmd == "" {
				continue
			}
			all = append(all, cmd)
			if run {
				marked = append(marked, cmd)
			}
		}
	}
	return all, marked
}

// The README's first-trade recipe, followed on a fresh home: at most five
// commands, its marked commands run as written (with the README's example
// ceiling, --max-leverage 5), then an MCP client (the go-sdk over stdio
// with the built binary) that shows forms asks for a market order and the
// human ticks the form. The order fills at a leverage within the policy:
// the plan shown lowered the account's 10x to 5x first.
func TestFirstTradeRecipe(t *testing.T) {
	t.Parallel()
	all, marked := firstTradeRecipe(t)
	if len(all) > 5 {
		t.Fatalf("the recipe has %d commands, at most 5: %q", len(all), all)
	}
	if !strings.Contains(strings.Join(marked, "\n"), "--max-leverage 5") {
		t.Fatalf("the recipe does not use the README's example ceiling: %q", marked)
	}
	root := t.TempDir()
	in := install{home: filepath.Join(root, "home"), key: filepath.Join(root, "config", "master.key")}
	for _, line := range marked {
		args := strings.Fields(line)
		if args[0] != "guarded-exchange" {
			t.Fatalf("a marked recipe line is not a guarded-exchange command: %q", line)
		}
		if r := run(t, in.env(), "", args[1:]...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", line, r.code, r.stdout, r.stderr)
		}
	}
	f := connectForm(t, in, "")
	f.mu.Lock()
	f.behaviour = "accept"
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order",
		Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Market", "qty": "0.001"}})
	if err != nil || res.IsError {
		t.Fatalf("the first market order: %v %+v", err, res)
	}
	out := structured(t, res)
	lowered, _ := out["lowers_leverage"].(map[string]any)
	if out["status"] != "accepted" || out["order_status"] != "Filled" || lowered["from"] != "10" || lowered["to"] != "5" {
		t.Fatalf("the first market order: %v", out)
	}
	f.mu.Lock()
	forms := append([]string(nil), f.forms...)
	f.mu.Unlock()
	if len(forms) != 1 || !strings.Contains(forms[0], "after lowering the leverage from 10x to 5x") {
		t.Fatalf("the human saw %d forms; the plan:\n%s", len(forms), strings.Join(forms, "\n---\n"))
	}
	pos, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_positions", Arguments: map[string]any{"symbol": "BTCUSDT"}})
	if err != nil || pos.IsError {
		t.Fatalf("get_positions: %v %+v", err, pos)
	}
	rows, _ := structured(t, pos)["positions"].([]any)
	if len(rows) != 1 {
		t.Fatalf("positions %v", structured(t, pos))
	}
	row, _ := rows[0].(map[string]any)
	lev, err := decimal.NewFromString(row["leverage"].(string))
	if err != nil || lev.GreaterThan(decimal.NewFromInt(5)) || row["size"] != "0.001" {
		t.Fatalf("the position %v: leverage above the policy's 5", row)
	}
}
