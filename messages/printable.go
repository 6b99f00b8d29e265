package messages

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every character a terminal or a form could
// act on replaced by '?': control characters (C0 including ESC, DEL, C1),
// format characters (bidirectional overrides, zero-width marks), line and
// paragraph separators, and invalid UTF-8. Text the exchange or the model
// chose (an order id, an error message, an idempotency key) passes
// through it before a human reads it, so it can neither move the cursor,
// rewrite the terminal's title or earlier lines, nor reorder what is
// shown. s is returned as is when it has nothing to replace.
func Printable(s string) string {
	if strings.IndexFunc(s, unprintable) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size <= 1 || unprintable(r) {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unprintable reports whether r is a control, format or separator
// character other than a plain space.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

// PrintableJSON returns a JSON document with every such character inside
// its strings written as a \uXXXX escape, so the document keeps its
// meaning and a terminal shows it as text. encoding/json escapes C0
// controls already, but not DEL, C1 controls or bidirectional overrides.
// Invalid UTF-8 becomes U+FFFD (JSON's own replacement).
func PrintableJSON(doc []byte) []byte {
	s := string(doc)
	if strings.IndexFunc(s, unprintable) < 0 && utf8.ValidString(s) {
		return doc
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\ufffd`)
		case unprintable(r) && r > 0xffff:
			// Outside the BMP: a UTF-16 surrogate pair.
			r -= 0x10000
			b.WriteString(`\u` + hex4(0xd800+(r>>10)) + `\u` + hex4(0xdc00+(r&0x3ff)))
		case unprintable(r):
			b.WriteString(`\u` + hex4(r))
		default:
			b.WriteRune(r)
		}
	}
	return []byte(b.String())
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf]})
}
