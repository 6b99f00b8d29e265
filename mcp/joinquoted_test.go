package mcp

import "testing"

// An enum refusal lists the allowed values quoted, separated by ", ".
func TestJoinQuoted(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"Buy"}, `"Buy"`},
		{[]string{"Buy", "Sell", `a"b`}, `"Buy", "Sell", "a\"b"`},
	} {
		if got := joinQuoted(c.in); got != c.want {
			t.Fatalf("joinQuoted(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
