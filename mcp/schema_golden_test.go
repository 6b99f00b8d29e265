package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// schemaGolden holds every tool's advertised inputSchema as it was when
// the schemas were written by hand; the generated schemas must stay
// equivalent to it (same properties, types, required, enums, maxima,
// descriptions). GX_UPDATE_SCHEMA_GOLDEN=1 rewrites it.
const schemaGolden = "testdata/input_schemas.golden.json"

// advertisedSchemas is each tool's inputSchema as tools/list sends it,
// decoded from its JSON.
func advertisedSchemas(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	s := &server{}
	for name, tl := range newRegistry(s.allTools()...).tools {
		b, err := json.Marshal(tl.sdkTool().InputSchema)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = v
	}
	return out
}

// Every tool advertises the inputSchema of the golden file, no more and
// no less.
func TestInputSchemasMatchGolden(t *testing.T) {
	got := advertisedSchemas(t)
	if os.Getenv("GX_UPDATE_SCHEMA_GOLDEN") == "1" {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(schemaGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(schemaGolden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(schemaGolden)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: no longer listed", name)
		} else if !reflect.DeepEqual(g, w) {
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(w)
			t.Errorf("%s: inputSchema\n got %s\nwant %s", name, gb, wb)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: listed but not in %s", name, schemaGolden)
		}
	}
}
