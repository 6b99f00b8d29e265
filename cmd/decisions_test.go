package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	// recordHead is a decision record's heading: "## D12. Title".
	recordHead = regexp.MustCompile(`(?m)^## D(\d+)\. (.+)$`)
	// indexEntry is a line of "## Index by area": "- D12 — Title — status".
	indexEntry = regexp.MustCompile(`(?m)^- D(\d+) — (.+) — (.+)$`)
	// statusLine is a record's Status paragraph (up to its blank line).
	statusLine = regexp.MustCompile(`(?ms)^Status: (.*?)(?:\n\n|\z)`)
	// parenthesis is an explanation in a status, which may name records
	// it does not mean as the amending ones.
	parenthesis = regexp.MustCompile(`\([^)]*\)`)
	recordRef   = regexp.MustCompile(`D(\d+)`)
)

// statusOf is a status's kind (accepted, amended, superseded) and the
// records it names as the amending or superseding ones, explanations in
// parentheses and any sentence after the first left out.
func statusOf(s string) (string, []int) {
	s = strings.Join(strings.Fields(s), " ")
	for _, kind := range []string{"amended by", "superseded by"} {
		if strings.HasPrefix(s, kind) {
			head := parenthesis.ReplaceAllString(s, "")
			head, _, _ = strings.Cut(head, ". ")
			var ns []int
			for _, m := range recordRef.FindAllStringSubmatch(head, -1) {
				n, _ := strconv.Atoi(m[1])
				ns = append(ns, n)
			}
			slices.Sort(ns)
			return kind, ns
		}
	}
	if strings.HasPrefix(s, "accepted") {
		return "accepted", nil
	}
	return s, nil
}

// TestDecisionIndexMatchesRecords fails when a decision record is missing
// from docs/decisions.md's "Index by area", is listed twice, or is listed
// with another title or status than its own Status line says (the kind,
// and which records amend or supersede it), and when the index lists a
// record that does not exist.
func TestDecisionIndexMatchesRecords(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "decisions.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	heads := recordHead.FindAllStringSubmatchIndex(text, -1)
	if len(heads) == 0 {
		t.Fatal("no decision records found")
	}
	type record struct{ title, status string }
	records := map[int]record{}
	for i, h := range heads {
		n, _ := strconv.Atoi(text[h[2]:h[3]])
		end := len(text)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		if _, dup := records[n]; dup {
			t.Errorf("D%d: two records have this number", n)
		}
		st := statusLine.FindStringSubmatch(text[h[1]:end])
		if st == nil {
			t.Errorf("D%d: no Status line", n)
			continue
		}
		records[n] = record{title: text[h[4]:h[5]], status: st[1]}
	}
	index := text[:heads[0][0]]
	if _, after, ok := strings.Cut(index, "## Index by area"); ok {
		index = after
	} else {
		t.Fatal(`docs/decisions.md has no "## Index by area"`)
	}
	listed := map[int]int{}
	for _, m := range indexEntry.FindAllStringSubmatch(index, -1) {
		n, _ := strconv.Atoi(m[1])
		listed[n]++
		r, ok := records[n]
		if !ok {
			t.Errorf("the index lists D%d, which has no record", n)
			continue
		}
		if strings.TrimSuffix(m[2], ".") != strings.TrimSuffix(r.title, ".") {
			t.Errorf("D%d: the index says %q, the record's title is %q", n, m[2], r.title)
		}
		ik, in := statusOf(m[3])
		rk, rn := statusOf(r.status)
		if ik != rk || !slices.Equal(in, rn) {
			t.Errorf("D%d: the index says %q, the record's Status line %q", n, m[3], strings.Join(strings.Fields(r.status), " "))
		}
	}
	for n := range records {
		if listed[n] != 1 {
			t.Errorf("D%d is listed %d times in the index, want once", n, listed[n])
		}
	}
}
