package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No test or benchmark is built only without the race detector: make test
// runs every package under -race once, so such a test would run nowhere.
// The cluster's tests were kept out of race builds while protoactor's
// cluster raced with itself; the patched copy ended that
// (docs/decisions.md D205). A file built only without -race may still
// hold helpers (cmd/guarded-exchange's raceEnabled).
func TestNoTestIsBuiltOnlyWithoutRace(t *testing.T) {
	root := repoRoot(t)
	norace := regexp.MustCompile(`(?m)^//go:build !race$`)
	testFunc := regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz)\w*)\(`)
	files := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || otherModule(root, path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !norace.Match(b) {
			return err
		}
		files++
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			t.Errorf("%s (%s) is built only without -race, and make test runs no pass without it", m[1], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no file built only without -race was found (cmd/guarded-exchange/norace_test.go is one): the check reads nothing")
	}
}
