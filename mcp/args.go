package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// maxArgsBytes bounds the raw arguments of one call.
const maxArgsBytes = 16 << 10

var (
	symbolPattern  = messages.SymbolRE
	argNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
)

// args is a strict reader of one call's arguments. The first problem wins
// and is kept in err; later reads are no-ops. done reports unknown fields.
type args struct {
	fields map[string]json.RawMessage
	used   map[string]bool
	err    *messages.Error
	// probe (tests only) makes every read go on as if its argument were
	// absent and no read had failed, and done refuse, so used names every
	// argument a parser reads (TestEveryAdvertisedArgumentIsParsed).
	probe bool
}

// errProbed is done's answer to a probing reader.
var errProbed = messages.Internal(errors.New("mcp: arguments probed"))

// parseArgs accepts a JSON object (or nothing) of at most maxArgsBytes.
func parseArgs(raw json.RawMessage) *args {
	a := &args{fields: map[string]json.RawMessage{}, used: map[string]bool{}}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return a
	}
	if len(raw) > maxArgsBytes {
		a.err = messages.InvalidParams("arguments", "too large")
		return a
	}
	if raw[0] != '{' || json.Unmarshal(raw, &a.fields) != nil {
		a.err = messages.InvalidParams("arguments", "must be a JSON object")
	}
	return a
}

func (a *args) fail(field, reason string) {
	if a.err == nil && !a.probe {
		a.err = messages.InvalidParams(field, reason)
	}
}

// raw returns the field's JSON if present and not null.
func (a *args) raw(name string) (json.RawMessage, bool) {
	a.used[name] = true
	v, ok := a.fields[name]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, false
	}
	return v, true
}

// str reads a string field. A missing required field, a non-string value or
// one that does not match pattern fails with reason.
func (a *args) str(name string, required bool, pattern *regexp.Regexp, reason string) string {
	if a.err != nil {
		return ""
	}
	v, ok := a.raw(name)
	if !ok {
		if required {
			a.fail(name, "required")
		}
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		a.fail(name, "must be a JSON string")
		return ""
	}
	if pattern != nil && !pattern.MatchString(s) {
		a.fail(name, reason)
		return ""
	}
	return s
}

// enum reads a string field that must be one of allowed.
func (a *args) enum(name string, required bool, allowed ...string) string {
	s := a.str(name, required, nil, "")
	if a.err != nil || s == "" && !required {
		return s
	}
	if !slices.Contains(allowed, s) {
		a.fail(name, "must be one of "+joinQuoted(allowed))
		return ""
	}
	return s
}

// symbol reads the symbol field of docs/tools.md.
func (a *args) symbol() string {
	return a.str("symbol", true, symbolPattern, symbolReason)
}

// category reads the category field of docs/tools.md.
func (a *args) category() messages.Category {
	return messages.Category(a.enum("category", true, string(messages.CategorySpot), string(messages.CategoryLinear)))
}

// integer reads an optional integer in [lo, hi], def when absent.
func (a *args) integer(name string, def, lo, hi int) int {
	if a.err != nil {
		return def
	}
	v, ok := a.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
	if err != nil {
		a.fail(name, "must be a JSON integer")
		return def
	}
	if n < lo || n > hi {
		a.fail(name, "must be between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
		return def
	}
	return n
}

// timestamp reads an optional RFC 3339 time.
func (a *args) timestamp(name string) time.Time {
	s := a.str(name, false, nil, "")
	if a.err != nil || s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		a.fail(name, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
		return time.Time{}
	}
	return t.UTC()
}

// done returns the first problem, including any argument the tool does not
// take. An unknown argument is named only if its name is a plain
// identifier; otherwise the field is reported as "arguments".
func (a *args) done() *messages.Error {
	if a.probe {
		return errProbed
	}
	if a.err != nil {
		return a.err
	}
	names := make([]string, 0, len(a.fields))
	for k := range a.fields {
		if !a.used[k] {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	if argNamePattern.MatchString(names[0]) {
		return messages.InvalidParams(names[0], "unknown argument for this tool")
	}
	return messages.InvalidParams("arguments", "contains an unknown argument")
}

// joinQuoted lists xs as Go-quoted strings separated by ", ".
func joinQuoted(xs []string) string {
	quoted := make([]string, len(xs))
	for i, x := range xs {
		quoted[i] = strconv.Quote(x)
	}
	return strings.Join(quoted, ", ")
}
