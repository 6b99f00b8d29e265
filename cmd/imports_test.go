// Package cmd_test holds repository-wide structure checks: imports point
// one way between packages, every package has one doc.go that says its
// one idea, nothing but the commands writes to stdout, and comments cite
// the repository's own docs (docs/invariants.md "Rules of the code").
package cmd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/guarded-exchange/guarded-exchange"

// allowed lists, for each top-level area, the areas of this module it may
// import. Subpackages belong to their top-level area (venue/sim is venue).
// cmd may import everything.
var allowed = map[string][]string{
	"messages": {},
	"wal":      {},
	"venue":    {"messages", "venue"},
	"actors":   {"messages", "wal", "venue", "actors"},
	"mcp":      {"messages", "mcp"},
	"cli":      {"messages", "cli"},
	"internal": {"messages", "wal", "venue", "actors", "internal"},
}

var reasons = map[string]string{
	"messages": "messages is the shared vocabulary and must import nothing from this module",
	"wal":      "wal knows records and bytes, not trading",
	"venue":    "venue talks to the exchange and may only use messages",
	"actors":   "actors may use messages, wal and venue",
	"mcp":      "mcp may use messages only: it reaches the actors through its Backend interface, never the venue or the journal directly",
	"cli":      "cli speaks over the socket and may only use messages",
	"internal": "internal holds the test kit, for tests only: it builds the stack from messages, wal, venue and actors, and never imports mcp, whose own tests use it (that would be an import cycle)",
}

// narrower holds packages to fewer areas than their own area allows, with
// the reason. The test kit's rig builds the parts under the actor system
// (simulator, venue clients, journal) for every package's tests, the
// actors package's own internal tests included: importing actors (or mcp)
// would make those tests an import cycle (docs/decisions.md D142).
var narrower = map[string]struct {
	areas  []string
	reason string
}{
	"internal/testkit/rig": {[]string{"messages", "wal", "venue"}, "the test kit's rig may use messages, wal and venue only: the actors package's own tests use it, so it never imports actors (nor mcp)"},
}

// areaOf maps a package directory (relative to the repo root) to its area.
func areaOf(rel string) string {
	return strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd) // this file lives in <root>/cmd
}

// otherModule reports whether dir, below root, holds a module of its own
// (its own go.mod): the go tool leaves it out of ./..., and so do these
// checks. Two such modules are patched copies: actors/protoactor-go
// (docs/decisions.md D205) and mcp/go-sdk (D210).
func otherModule(root, dir string) bool {
	if dir == root {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// goDirs returns every directory with non-test Go files, relative to root.
func goDirs(t *testing.T, root string) map[string][]string {
	t.Helper()
	dirs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && ((strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") && path != root || otherModule(root, path)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			dirs[rel] = append(dirs[rel], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func TestImportDirection(t *testing.T) {
	root := repoRoot(t)
	var violations []string
	for rel, files := range goDirs(t, root) {
		area := areaOf(rel)
		if area == "cmd" {
			continue
		}
		ok, known := allowed[area]
		if !known {
			violations = append(violations, rel+": package outside the known areas "+strconv.Quote(area))
			continue
		}
		reason := reasons[area]
		if n, held := narrower[filepath.ToSlash(rel)]; held {
			ok, reason = n.areas, n.reason
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, module+"/") {
					continue
				}
				target := areaOf(strings.TrimPrefix(path, module+"/"))
				permitted := false
				for _, a := range ok {
					if a == target {
						permitted = true
					}
				}
				if !permitted {
					violations = append(violations, rel+" imports "+path+": "+reason)
				}
			}
		}
	}
	sort.Strings(violations)
	for _, v := range violations {
		t.Error(v)
	}
}

// pure lists the packages of pure state and decisions, with the only
// imports they may have beyond the standard library: no actor library, no
// journal, no venue and no network code, so that everything in them is a
// plain value or function, tested without actors (docs/architecture.md
// "Packages and the direction of imports"). Their test files are held to the same
// list: their tables run without actors too.
var pure = map[string][]string{
	"actors/state": {module + "/messages", "github.com/shopspring/decimal"},
	// The pure half of the trading tools: the risk gate and each tool's
	// checks and decision, on the user's state and what the venue read.
	"actors/risk": {module + "/messages", module + "/actors/state", "github.com/shopspring/decimal"},
}

// pureImport reports whether a pure package may import path: one of
// allowed, or a package of the standard library that is not network code.
func pureImport(path string, allowed []string) bool {
	if slices.Contains(allowed, path) {
		return true
	}
	first := strings.SplitN(path, "/", 2)[0]
	if strings.Contains(first, ".") {
		return false // a module outside the standard library
	}
	return first != "net" && path != "crypto/tls"
}

func TestPurePackagesImportNoEffects(t *testing.T) {
	root := repoRoot(t)
	for dir, allowed := range pure {
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			for _, path := range importPaths(t, f) {
				if !pureImport(path, allowed) {
					t.Errorf("%s imports %s: a pure package may import only %s and the standard library's non-network packages",
						strings.TrimPrefix(f, root+"/"), path, strings.Join(allowed, ", "))
				}
			}
		}
	}
}

// testkit is the shared test kit's import path.
const testkit = module + "/internal/testkit"

// importPaths lists the import paths of the Go file f.
func importPaths(t *testing.T, f string) []string {
	t.Helper()
	af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, imp := range af.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		paths = append(paths, path)
	}
	return paths
}

// TestTestkitOnlyInTests: the test kit starts simulators and journals in
// temporary directories; no package of the product, commands included,
// may import it outside its _test.go files.
func TestTestkitOnlyInTests(t *testing.T) {
	root := repoRoot(t)
	for rel, files := range goDirs(t, root) {
		if areaOf(rel) == "internal" {
			continue
		}
		for _, f := range files {
			for _, path := range importPaths(t, f) {
				if path == testkit || strings.HasPrefix(path, testkit+"/") {
					t.Errorf("%s imports %s: the test kit is for _test.go files only", strings.TrimPrefix(f, root+"/"), path)
				}
			}
		}
	}
}

func TestEveryPackageHasDocGo(t *testing.T) {
	root := repoRoot(t)
	for rel := range goDirs(t, root) {
		doc := filepath.Join(root, rel, "doc.go")
		if rel == filepath.Join("cmd", "guarded-exchange") {
			doc = filepath.Join(root, rel, "main.go") // a command documents itself in main.go
		}
		af, err := parser.ParseFile(token.NewFileSet(), doc, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: needs a doc.go with the package's one idea: %v", rel, err)
			continue
		}
		if af.Doc == nil || len(strings.TrimSpace(af.Doc.Text())) < 40 {
			t.Errorf("%s: doc.go has no real package comment", rel)
		}
	}
}

// TestOnlyDocGoCarriesThePackageDoc: one place per package says what it
// is; a second package comment elsewhere drifts.
func TestOnlyDocGoCarriesThePackageDoc(t *testing.T) {
	root := repoRoot(t)
	for rel, files := range goDirs(t, root) {
		if rel == filepath.Join("cmd", "guarded-exchange") {
			continue
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil && filepath.Base(f) != "doc.go" {
				t.Errorf("%s: only doc.go carries the package comment", strings.TrimPrefix(f, root+"/"))
			}
		}
	}
}

// TestNothingWritesToStdout: stdout of serve carries only MCP JSON-RPC, so
// no package but the commands (cmd, cli) may print to it.
func TestNothingWritesToStdout(t *testing.T) {
	root := repoRoot(t)
	for rel, files := range goDirs(t, root) {
		if area := areaOf(rel); area == "cmd" || area == "cli" {
			continue
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := n.X.(*ast.Ident); ok {
						if id.Name == "fmt" && strings.HasPrefix(n.Sel.Name, "Print") || id.Name == "os" && n.Sel.Name == "Stdout" {
							t.Errorf("%s: %s.%s writes to stdout, which belongs to MCP", strings.TrimPrefix(f, root+"/"), id.Name, n.Sel.Name)
						}
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "println" || id.Name == "print") {
						t.Errorf("%s: %s writes to stderr unstructured", strings.TrimPrefix(f, root+"/"), id.Name)
					}
				}
				return true
			})
		}
	}
}
