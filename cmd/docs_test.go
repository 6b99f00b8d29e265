package cmd_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// outsideCitations are the spellings of documents that live outside the
// repository. The product contract is in docs/, in the project's own
// words; a comment or a page that cites something else points at text a
// reader of the repository cannot open. Each is split in two so that this
// file does not cite them itself.
var outsideCitations = []string{
	"SP" + "EC §", "SP" + "EC.md", "ST" + "YLE §", "ST" + "YLE.md",
	"deps" + ".md", "mcp" + ".md", "bybit-v5" + ".md",
	"shared/" + "reference", "reference" + " §", "/work/" + "shared",
}

// citableFiles returns every file whose text may cite a document,
// relative to root: Go sources, Markdown files, the Makefile and the
// READMEs of test data.
func citableFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "dist") || otherModule(root, path) {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md") || name == "Makefile" || strings.HasPrefix(name, "README") {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNoCitationOutsideTheRepository fails when a file cites a document
// outside the repository instead of the docs/ page that says the same.
func TestNoCitationOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	for _, rel := range citableFiles(t, root) {
		lines := readLines(t, filepath.Join(root, rel))
		for i, line := range lines {
			for _, c := range outsideCitations {
				if strings.Contains(line, c) {
					t.Errorf("%s:%d cites %q, a document outside the repository: cite the docs/ page that says it (docs/README.md lists them)", rel, i+1, c)
				}
			}
		}
	}
}

var (
	// docCitation is a citation of a docs/ page, with the sections it
	// names in quotes after it, comma-separated.
	docCitation = regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)((?:,? "[^"]+")*)`)
	// quoted is one quoted section name of a citation.
	quoted = regexp.MustCompile(`"([^"]+)"`)
	// relativeLink is a link from one docs/ page to another: [x](errors.md).
	relativeLink = regexp.MustCompile(`\]\(([A-Za-z0-9_-]+\.md)(?:#[^)]*)?\)`)
)

// TestDocsCitedExist fails when a file cites a docs/ page that does not
// exist, or a section the page does not have (a heading, or the first cell
// of a table row, that starts with the quoted text), and when a docs/ page
// links to a missing page.
func TestDocsCitedExist(t *testing.T) {
	root := repoRoot(t)
	anchors := map[string][]string{} // page -> headings and first table cells
	pageAnchors := func(page string) ([]string, bool) {
		if a, ok := anchors[page]; ok {
			return a, true
		}
		path := filepath.Join(root, "docs", page)
		if _, err := os.Stat(path); err != nil {
			return nil, false
		}
		var a []string
		for _, line := range readLines(t, path) {
			switch {
			case strings.HasPrefix(line, "#"):
				a = append(a, strings.TrimSpace(strings.TrimLeft(line, "#")))
			case strings.HasPrefix(line, "| "):
				a = append(a, strings.TrimSpace(strings.SplitN(line[2:], "|", 2)[0]))
			}
		}
		anchors[page] = a
		return a, true
	}
	hasSection := func(a []string, section string) bool {
		return slices.ContainsFunc(a, func(h string) bool { return strings.HasPrefix(h, section) })
	}
	for _, rel := range citableFiles(t, root) {
		for i, line := range readLines(t, filepath.Join(root, rel)) {
			for _, m := range docCitation.FindAllStringSubmatch(line, -1) {
				a, ok := pageAnchors(m[1])
				if !ok {
					t.Errorf("%s:%d cites docs/%s, which does not exist", rel, i+1, m[1])
					continue
				}
				for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
					if !hasSection(a, q[1]) {
						t.Errorf("%s:%d cites section %q of docs/%s, which has no such heading or table row", rel, i+1, q[1], m[1])
					}
				}
			}
			if !strings.HasPrefix(rel, "docs/") {
				continue
			}
			for _, m := range relativeLink.FindAllStringSubmatch(line, -1) {
				if _, ok := pageAnchors(m[1]); !ok {
					t.Errorf("%s:%d links to %s, which does not exist in docs/", rel, i+1, m[1])
				}
			}
		}
	}
}

// TestJournalFormatNamesEveryRecordType fails when a journal record type
// of messages.RecordTypes is not named in docs/journal-format.md.
func TestJournalFormatNamesEveryRecordType(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "journal-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range messages.RecordTypes {
		if !strings.Contains(string(doc), "`"+info.Name+"`") {
			t.Errorf("docs/journal-format.md does not name record type %d `%s`", info.Type, info.Name)
		}
	}
}

// TestPolicyDocNamesEveryField fails when a policy field of
// messages.PolicyFieldTable has no row, with its flag, in docs/policy.md.
func TestPolicyDocNamesEveryField(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range messages.PolicyFieldTable {
		if !strings.Contains(string(doc), "| `"+f.Name+"` | `--"+f.Flag+"` |") {
			t.Errorf("docs/policy.md has no row for policy field `%s` (flag --%s)", f.Name, f.Flag)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return lines
}
