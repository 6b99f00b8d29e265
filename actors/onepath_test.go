package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeMethods are the venue client's write calls (venue/orders.go).
var writeMethods = map[string]bool{"CreateOrder": true, "AmendOrder": true, "CancelOrder": true, "SetLeverage": true, "SetTradingStop": true}

// writePaths are the Bybit endpoints that change orders or positions
// (docs/bybit.md "Trade endpoints", "Position endpoints"), including the ones this server never calls.
var writePaths = []string{"/v5/order/create", "/v5/order/amend", "/v5/order/cancel", "/v5/order/cancel-all",
	"/v5/order/create-batch", "/v5/order/amend-batch", "/v5/order/cancel-batch", "/v5/position/set-leverage",
	"/v5/position/trading-stop", "/v5/position/switch-mode", "/v5/position/set-tpsl-mode", "/v5/position/add-margin",
	"/v5/asset/transfer", "/v5/asset/withdraw"}

// allowedSites is where each guarded construct may appear outside tests:
// the venue client itself, the venue actor's one write function, and the
// action path's execute (reached only through the decision half).
var allowedSites = map[string][]string{
	"write call": {"actors/venuestream.go:(*venueActor).write"},
	"orderWrite": {"actors/orderexec.go:(*userActor).execute"},
	"execute call": {"actors/driver.go:(*userActor).executeOnce", "actors/leveragestep.go:(*userActor).executeOrder", "actors/cancelall.go:(*userActor).runCancelAll",
		// the dead-man switch cancels the server's own orders through execute (D66)
		"actors/deadman.go:(*userActor).cancelForDeadman"},
	"write endpoint": {"venue/"},
}

// Nothing outside the action path can send a write to the venue: the
// venue client's write calls appear only in the venue actor's write step,
// which only the user actor's execute asks for (the orderWrite message),
// and no package other than venue names a write endpoint, so no raw HTTP
// call can bypass them. The walk covers every non-test Go file of the
// module except the simulator (the venue's side, not a client of it).
func TestOnlyTheActionPathWrites(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var violations []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || rel == "venue/sim" || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		v, err := pathViolations(rel, src)
		if err != nil {
			return err
		}
		violations = append(violations, v...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked only %d files; the walk is broken", files)
	}
	if len(violations) > 0 {
		t.Fatalf("writes outside the action path:\n%s", strings.Join(violations, "\n"))
	}
}

// The checker reports a write added anywhere else: a file in mcp that
// calls CreateOrder directly, names the cancel-all endpoint and builds an
// orderWrite is reported three times; the same calls in the venue actor's
// write step are not.
func TestOnlyTheActionPathWritesCatchesABypass(t *testing.T) {
	sneak := `package actors
func sneak(c interface{ CreateOrder(int) }) { c.CreateOrder(1); _ = "https://x/v5/order/cancel-all"; _ = &orderWrite{} }`
	v, err := pathViolations("mcp/sneak.go", []byte(sneak))
	if err != nil || len(v) != 3 {
		t.Fatalf("bypass: %v %v", v, err)
	}
	allowed := `package actors
func (v *venueActor) write(c interface{ CreateOrder(int) }) { c.CreateOrder(1) }`
	if v, err := pathViolations("actors/venuestream.go", []byte(allowed)); err != nil || len(v) != 0 {
		t.Fatalf("the write step itself: %v %v", v, err)
	}
}

// pathViolations lists the guarded constructs of one Go file (rel is its
// path from the module root) that are outside their allowed sites.
func pathViolations(rel string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, 0)
	if err != nil {
		return nil, err
	}
	var violations []string
	inVenue := f.Name.Name == "venue" && strings.HasPrefix(rel, "venue/")
	for _, decl := range f.Decls {
		fn := funcName(decl)
		site := rel + ":" + fn
		check := func(kind string, pos token.Pos) {
			for _, ok := range allowedSites[kind] {
				if ok == site || (strings.HasSuffix(ok, "/") && strings.HasPrefix(rel, ok)) {
					return
				}
			}
			violations = append(violations, kind+" at "+fset.Position(pos).String()+" in "+fn)
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && writeMethods[sel.Sel.Name] && !inVenue {
					check("write call", x.Pos())
				}
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "execute" && f.Name.Name == "actors" {
					check("execute call", x.Pos())
				}
			case *ast.CompositeLit:
				if id, ok := x.Type.(*ast.Ident); ok && id.Name == "orderWrite" && f.Name.Name == "actors" {
					check(id.Name, x.Pos())
				}
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					s, _ := strconv.Unquote(x.Value)
					for _, p := range writePaths {
						if strings.Contains(s, p) {
							check("write endpoint", x.Pos())
							break
						}
					}
				}
			}
			return true
		})
	}
	return violations, nil
}

// funcName names a declaration as "(*T).m", "f" or "" (not a function).
func funcName(d ast.Decl) string {
	fd, ok := d.(*ast.FuncDecl)
	if !ok {
		return ""
	}
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fd.Name.Name
	}
	return fd.Name.Name
}
