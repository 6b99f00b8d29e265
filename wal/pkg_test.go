package wal

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestDocCarriesTheContract: doc.go holds the layout, fsync policy,
// recovery rules and concurrency contract (docs/invariants.md "Rules of the code"). The rules every
// package shares (one doc.go, import direction, nothing on stdout) are
// checked repository-wide in cmd/imports_test.go.
func TestDocCarriesTheContract(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, want := range []string{"Bytes on disk", "CRC-32C", "SHA-256", "fsync", "Recovery", ".broken", "DamageError", "Concurrency", "not safe for concurrent use"} {
		if !strings.Contains(doc, want) {
			t.Errorf("doc.go does not mention %q", want)
		}
	}
}
