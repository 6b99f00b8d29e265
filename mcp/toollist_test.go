package mcp

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolListBudget is the most bytes a tools/list entry may take on average
// for a profile (issue 13: an agent's context is not spent on the tool
// list).
const toolListBudget = 500

// toolListBytes lists the tools p's profile sees and measures each entry
// as sent: the bytes of the JSON of the whole tools/list entry (name,
// title, description, inputSchema, annotations and anything else the
// entry carries). It returns the bytes per tool and their average.
func toolListBytes(t testing.TB, cs *sdk.ClientSession) (map[string]int, float64) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) == 0 {
		t.Fatal("no tools listed")
	}
	per := map[string]int{}
	total := 0
	for _, tl := range res.Tools {
		b, err := json.Marshal(tl)
		if err != nil {
			t.Fatal(err)
		}
		per[tl.Name] = len(b)
		total += len(b)
	}
	return per, float64(total) / float64(len(res.Tools))
}

// Every profile's tools/list averages at most toolListBudget bytes per
// tool, over whatever the registry holds; every tool keeps a description.
func TestToolListStaysLean(t *testing.T) {
	e := newEnv(t)
	for _, profile := range []string{ProfileReadOnly, ProfileTrade} {
		cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("local", profile)}, "")
		per, avg := toolListBytes(t, cs)
		t.Logf("%s: %d tools, %.0f bytes per tool on average: %v", profile, len(per), avg, per)
		if avg > toolListBudget {
			t.Errorf("%s: tools/list averages %.0f bytes per tool, over the budget of %d", profile, avg, toolListBudget)
		}
	}
	s := &server{}
	for _, tl := range newRegistry(s.allTools()...).tools {
		if len(tl.description) < 60 || len(tl.title) == 0 {
			t.Errorf("%s: a tool needs a title and a description that says when to use it and what it returns", tl.name)
		}
	}
}

// BenchmarkToolsListBytes reports the bytes per tools/list entry of each
// profile (bytes/tool: the JSON of the whole entry, averaged).
func BenchmarkToolsListBytes(b *testing.B) {
	e := newEnv(b)
	for _, profile := range []string{ProfileReadOnly, ProfileTrade} {
		b.Run(profile, func(b *testing.B) {
			cs := connect(b, Options{Backend: e.sys, Principal: fixedPrincipal("local", profile), CallsPerSecond: 1e9, CallBurst: 1e9}, "")
			var avg float64
			var n int
			for b.Loop() {
				var per map[string]int
				per, avg = toolListBytes(b, cs)
				n = len(per)
			}
			b.ReportMetric(avg, "bytes/tool")
			b.ReportMetric(float64(n), "tools")
		})
	}
}
