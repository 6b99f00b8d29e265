package cmd_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test built only without the race detector (//go:build !race,
// docs/decisions.md D160) runs in make test's pass without it: its
// package is one of the Makefile's NORACE_PKGS, or it is in
// cmd/guarded-exchange and its name matches NORACE_CMD. A test outside
// both would run nowhere.
func TestNoRaceTestsRunSomewhere(t *testing.T) {
	root := repoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := makeVar(t, string(mk), "NORACE_PKGS")
	cmdRun := regexp.MustCompile(makeVar(t, string(mk), "NORACE_CMD"))
	if !strings.Contains(string(mk), "$(NORACE_PKGS)") || !strings.Contains(string(mk), "-run '$(NORACE_CMD)' ./cmd/guarded-exchange") {
		t.Fatal("the Makefile's test target does not run NORACE_PKGS and NORACE_CMD")
	}
	testFunc := regexp.MustCompile(`^func (Test\w+)\(`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || !regexp.MustCompile(`(?m)^//go:build !race$`).Match(b) {
			return err
		}
		pkg := "./" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, root+string(filepath.Separator))))
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			m := testFunc.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			found++
			inPkgs := strings.Contains(" "+pkgs+" ", " "+pkg+" ")
			if !inPkgs && !(pkg == "./cmd/guarded-exchange" && cmdRun.MatchString(m[1])) {
				t.Errorf("%s (%s) is built only without -race but make test's pass without it does not run it", m[1], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no test built only without -race was found: the check reads nothing")
	}
}

// makeVar returns the value of a Makefile variable set with :=.
func makeVar(t *testing.T, mk, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*:=\s*(.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return strings.TrimSpace(m[1])
}
