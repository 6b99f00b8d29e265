package keys

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPackageContract: doc.go alone carries the package doc, with the threat
// model, the byte layout and what is journaled (STYLE §10); every exported
// name is documented; the package imports only messages from this module
// (STYLE §1) and never prints to stdout.
func TestPackageContract(t *testing.T) {
	const module = "github.com/guarded-exchange/guarded-exchange/"
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
			for _, want := range []string{"G6", "AES-256-GCM", "HKDF-SHA256", "guarded-exchange credentials v1", "CredentialID", "What is journaled", "Never: the secret", "ContractTrade.Order", "Concurrency"} {
				if !strings.Contains(doc, want) {
					t.Errorf("doc.go does not mention %q", want)
				}
			}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && path != module+"messages" {
				t.Errorf("%s imports %s: keys may import only messages from this module", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "fmt" && strings.HasPrefix(sel.Sel.Name, "Print") {
					t.Errorf("%s: fmt.%s writes to stdout, which belongs to MCP", name, sel.Sel.Name)
				}
			}
			return true
		})
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
