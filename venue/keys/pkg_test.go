package keys

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestPackageContract: doc.go holds the threat model, the byte layout and
// what is journaled (docs/invariants.md "Rules of the code"), and every exported name is documented. The
// rules every package shares (one doc.go, import direction, nothing on
// stdout) are checked repository-wide in cmd/imports_test.go.
func TestPackageContract(t *testing.T) {
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
		if name == "doc.go" {
			doc := f.Doc.Text()
			for _, want := range []string{"G6", "AES-256-GCM", "HKDF-SHA256", "guarded-exchange credentials v1", "CredentialID", "What is journaled", "Never: the secret", "ContractTrade.Order", "Concurrency"} {
				if !strings.Contains(doc, want) {
					t.Errorf("doc.go does not mention %q", want)
				}
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && d.Doc == nil {
					t.Errorf("%s: %s has no doc comment", name, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					var idents []*ast.Ident
					var doc *ast.CommentGroup
					switch s := s.(type) {
					case *ast.TypeSpec:
						idents, doc = []*ast.Ident{s.Name}, s.Doc
					case *ast.ValueSpec:
						idents, doc = s.Names, s.Doc
					}
					for _, id := range idents {
						if id.IsExported() && doc == nil && d.Doc == nil {
							t.Errorf("%s: %s has no doc comment", name, id.Name)
						}
					}
				}
			}
		}
	}
}
