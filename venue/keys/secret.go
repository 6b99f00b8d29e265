package keys

import (
	"fmt"
	"io"
	"log/slog"
)

// redacted is what every printing, encoding and logging path of a Secret
// produces instead of the value.
const redacted = "[redacted]"

// Secret holds an exchange API secret (or any other credential string) so
// that it never prints. fmt (every verb, including %#v and %q), encoding/json,
// encoding.TextMarshaler users and log/slog all see "[redacted]"; Reveal is
// the only way to the value and belongs in the one place that signs
// requests.
//
// The value sits behind a pointer on purpose: fmt cannot call methods on an
// unexported struct field, so a Secret kept in an unexported field of some
// other struct and printed with %v or %+v is walked by reflection. A plain
// string type would print its value there; this one prints a pointer
// address. encoding/json skips it (no exported fields) unless reached
// through an exported field, where MarshalJSON redacts it, and gob refuses
// it.
//
// The zero value is the empty secret. A Secret is immutable and safe for
// concurrent use. Compare secrets with Equal, not ==, which compares the
// pointers.
type Secret struct {
	p *string
}

// NewSecret wraps s. The caller should drop its own copy of s as soon as it
// can; Go strings cannot be wiped, so the value lives until collected.
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{p: &s}
}

// Reveal returns the value. Call it only to sign a request or to seal the
// secret; never pass the result to a logger, an error or the journal.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.Reveal() == "" }

// Len returns the length of the value in bytes, which is safe to log.
func (s Secret) Len() int { return len(s.Reveal()) }

// Equal reports whether s and o hold the same value.
func (s Secret) Equal(o Secret) bool { return s.Reveal() == o.Reveal() }

// String implements fmt.Stringer; it returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v); it returns "[redacted]".
func (s Secret) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb and flag, including
// %x, %q and %#v, prints "[redacted]" (%q quotes it).
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, `"`+redacted+`"`)
		return
	}
	_, _ = io.WriteString(f, redacted)
}

// MarshalJSON implements json.Marshaler; it returns the JSON string
// "[redacted]". There is deliberately no UnmarshalJSON: decoding into a
// Secret fails, so a redacted value is never read back as a real one.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler; it returns "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue implements slog.LogValuer; it returns "[redacted]".
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

var (
	_ fmt.Stringer   = Secret{}
	_ fmt.GoStringer = Secret{}
	_ fmt.Formatter  = Secret{}
	_ slog.LogValuer = Secret{}
)
