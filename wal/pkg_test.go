package wal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPackageContract: doc.go alone carries the package doc, with the
// layout, fsync policy, recovery rules and concurrency contract (STYLE §10),
// and the package imports nothing from this module (STYLE §1).
func TestPackageContract(t *testing.T) {
	const module = "github.com/guarded-exchange/guarded-exchange"
	fset := token.NewFileSet()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if (f.Doc != nil) != (name == "doc.go") {
			t.Errorf("%s: only doc.go may (and must) carry the package doc", name)
		}
		if name == "doc.go" {
			doc := f.Doc.Text()
			for _, want := range []string{"Bytes on disk", "CRC-32C", "SHA-256", "fsync", "Recovery", ".broken", "DamageError", "Concurrency", "not safe for concurrent use"} {
				if !strings.Contains(doc, want) {
					t.Errorf("doc.go does not mention %q", want)
				}
			}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) {
				t.Errorf("%s imports %s: wal knows records and bytes, nothing of this module", name, path)
			}
			if path == "fmt" {
				for _, call := range []string{"Print", "Println", "Printf"} {
					ast.Inspect(f, func(n ast.Node) bool {
						if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == call {
							if id, ok := sel.X.(*ast.Ident); ok && id.Name == "fmt" {
								t.Errorf("%s: fmt.%s writes to stdout, which belongs to MCP", name, call)
							}
						}
						return true
					})
				}
			}
		}
	}
}
