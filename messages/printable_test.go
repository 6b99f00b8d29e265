package messages

import (
	"encoding/json"
	"strings"
	"testing"
)

// Text a terminal acts on never survives Printable; ordinary text,
// including non-ASCII letters, does.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"0bd5c5a4-2f53-4d3e-9b8e-1e2f3a4b5c6d":  "0bd5c5a4-2f53-4d3e-9b8e-1e2f3a4b5c6d",
		"Müller 0.01 BTC":                       "Müller 0.01 BTC",
		"abc\x1b]0;pwned\x07\x1b[2K\rALL CLEAR": "abc?]0;pwned??[2K?ALL CLEAR",
		"a\u009b31mb":                           "a?31mb", // C1 CSI
		"x\x7fy":                                "x?y",
		"safe\u202etxt.exe":                     "safe?txt.exe", // bidi override
		"a\u200bb\u2028c":                       "a?b?c",
		"bad\xffutf8":                           "bad?utf8",
		"tab\tnew\nline":                        "tab?new?line",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// PrintableJSON escapes what encoding/json leaves raw and keeps the
// document's meaning.
func TestPrintableJSON(t *testing.T) {
	in := map[string]string{"order_id": "a\u009b2J\x7f\u202e\U000e0001z\x1b", "ok": "Müller"}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := PrintableJSON(raw)
	if s := string(out); strings.ContainsAny(s, "\u009b\x7f\u202e\U000e0001\x1b") {
		t.Fatalf("raw control characters left: %q", s)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("no longer JSON: %v (%q)", err, out)
	}
	if back["order_id"] != in["order_id"] || back["ok"] != in["ok"] {
		t.Fatalf("meaning changed: %q", back)
	}
	plain := []byte(`{"a":"b"}`)
	if got := PrintableJSON(plain); string(got) != string(plain) {
		t.Fatalf("clean document changed: %q", got)
	}
}
