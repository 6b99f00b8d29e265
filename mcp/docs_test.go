package mcp

import (
	"os"
	"strings"
	"testing"
)

// TestToolsDocNamesEveryTool fails when a tool of the registry has no row
// in docs/tools.md, or the row gives it another kind than the registry.
func TestToolsDocNamesEveryTool(t *testing.T) {
	doc, err := os.ReadFile("../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[Kind]string{KindRead: "read", KindSafety: "safety", KindTrade: "trade"}
	s := &server{}
	for _, tl := range s.allTools() {
		row := "| `" + tl.name + "` | " + kinds[tl.kind] + " |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/tools.md has no row %q", row)
		}
	}
}
