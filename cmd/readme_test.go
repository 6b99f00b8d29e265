package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// gxVariable is a GX_ variable named in Go source: a string literal that is
// the whole name ("GX_HOME"), or a kong env tag (env:"GX_HOME").
var gxVariable = regexp.MustCompile(`"(GX_[A-Z0-9_]+)"`)

// readmeVariables are the variables of the README's environment table: the
// first cell of each row under "## Environment variables".
func readmeVariables(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	row := regexp.MustCompile("^\\| `(GX_[A-Z0-9_]+)` \\|")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Environment variables"
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// TestReadmeListsEveryVariable: every GX_ variable the code reads (outside
// tests) has a row in the README's environment table, and every row names
// a variable the code reads.
func TestReadmeListsEveryVariable(t *testing.T) {
	root := repoRoot(t)
	table := readmeVariables(t, root)
	if len(table) == 0 {
		t.Fatal(`README.md has no "## Environment variables" table`)
	}
	inCode := map[string]string{}
	for rel, files := range goDirs(t, root) {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range gxVariable.FindAllStringSubmatch(string(b), -1) {
				inCode[m[1]] = rel
			}
		}
	}
	for name, where := range inCode {
		if !slices.Contains(table, name) {
			t.Errorf("%s is read in %s but has no row in README.md's environment table", name, where)
		}
	}
	for _, name := range table {
		if _, ok := inCode[name]; !ok {
			t.Errorf("README.md's environment table lists %s, which no code reads", name)
		}
	}
}
