package cmd_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// The journal writer (actors/journal) owns the log through a goroutine of
// its own and is reached through callbacks: it imports wal, messages and
// the standard library only, never an actor system or the network
// (docs/architecture.md "Group commit").
func TestJournalWriterImportsNoActors(t *testing.T) {
	pkg, err := build.ImportDir(filepath.Join(repoRoot(t), "actors", "journal"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
		switch {
		case path == module+"/wal", path == module+"/messages":
		case std && !strings.HasPrefix(path, "net"):
		default:
			t.Errorf("actors/journal imports %s: the journal writer may use wal, messages and the standard library (no network) only", path)
		}
	}
}
