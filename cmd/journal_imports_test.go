package cmd_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The journal writer (actors/journal) owns the log through a goroutine of
// its own and is reached through callbacks: it imports wal, messages and
// the standard library only, never an actor system or the network
// (docs/architecture.md "Group commit").
func TestJournalWriterImportsNoActors(t *testing.T) {
	root := repoRoot(t)
	files := goDirs(t, root)[filepath.Join("actors", "journal")]
	if len(files) == 0 {
		t.Fatal("actors/journal has no Go files")
	}
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == module+"/wal", path == module+"/messages":
			case !strings.Contains(strings.SplitN(path, "/", 2)[0], "."):
				if strings.HasPrefix(path, "net") {
					t.Errorf("%s imports %s: the journal writer does no network I/O", f, path)
				}
			default:
				t.Errorf("%s imports %s: the journal writer may use wal, messages and the standard library only", f, path)
			}
		}
	}
}
