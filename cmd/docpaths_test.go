package cmd_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// backticked is a backticked token that looks like a file or package of
// this repository: a path under one of its top-level directories, or a
// bare Go file name.
var backticked = regexp.MustCompile("`([A-Za-z0-9_./-]+)`")

// TestDocsBacktickedPathsExist fails when a docs/ page (other than the
// decision records, which keep their text as history) names in backticks
// a path under one of the repository's top-level directories, or a Go
// file, that does not exist.
func TestDocsBacktickedPathsExist(t *testing.T) {
	root := repoRoot(t)
	top := map[string]bool{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	exists := map[string]bool{}
	bases := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		exists[filepath.ToSlash(rel)] = true
		bases[d.Name()] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	checked := 0
	for _, page := range pages {
		if filepath.Base(page) == "decisions.md" {
			continue
		}
		for i, line := range readLines(t, page) {
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				tok := strings.TrimSuffix(m[1], "/")
				first, _, nested := strings.Cut(tok, "/")
				switch {
				case strings.Contains(tok, "..."):
					continue
				case nested && top[first]:
					// actors/cluster/shard.Journal names a package's identifier.
					pkg := strings.TrimSuffix(tok, path.Ext(tok))
					if !exists[tok] && !(strings.Contains(path.Base(tok), ".") && exists[pkg]) {
						t.Errorf("docs/%s:%d names `%s`, which does not exist", filepath.Base(page), i+1, tok)
					}
				case !nested && strings.HasSuffix(tok, ".go") && !strings.HasPrefix(tok, "_"):
					if !bases[tok] {
						t.Errorf("docs/%s:%d names `%s`, and no file has that name", filepath.Base(page), i+1, tok)
					}
				default:
					continue
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no backticked path found in docs/: the pattern is broken")
	}
}
