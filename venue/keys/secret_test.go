package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// testSecret is a recognisable value; no output may contain it, nor a
// recognisable piece of it.
const testSecret = "S3cr3tVALUEzq9XfLkWpR7"

// leaks reports whether out contains the secret or a long piece of it,
// including in hex.
func leaks(out string) bool {
	for _, needle := range []string{testSecret, testSecret[:8], testSecret[len(testSecret)-8:], fmt.Sprintf("%x", testSecret[:8])} {
		if strings.Contains(out, needle) {
			return true
		}
	}
	return false
}

type exported struct {
	Name   string
	Secret Secret
}

type unexported struct {
	name   string
	secret Secret
}

type withPointer struct {
	Secret *Secret
}

func TestSecretReveal(t *testing.T) {
	s := NewSecret(testSecret)
	if s.Reveal() != testSecret {
		t.Fatal("Reveal does not return the value")
	}
	if s.IsZero() || s.Len() != len(testSecret) {
		t.Fatalf("IsZero=%v Len=%d", s.IsZero(), s.Len())
	}
	if !s.Equal(NewSecret(testSecret)) || s.Equal(NewSecret("other")) {
		t.Fatal("Equal compares values")
	}
	var zero Secret
	if zero.Reveal() != "" || !zero.IsZero() || !zero.Equal(NewSecret("")) {
		t.Fatal("zero value is the empty secret")
	}
}

func TestSecretNeverFormats(t *testing.T) {
	s := NewSecret(testSecret)
	ps := &s
	values := map[string]any{
		"value":      s,
		"pointer":    ps,
		"exported":   exported{"n", s},
		"unexported": unexported{"n", s},
		"ptrfield":   withPointer{ps},
		"slice":      []Secret{s, s},
		"map":        map[string]Secret{"k": s},
		"any-slice":  []any{s, unexported{"n", s}},
		"ptr-unexp":  &unexported{"n", s},
	}
	verbs := []string{"%v", "%s", "%q", "%+v", "%#v", "%x", "%X", "%d", "%10.3s", "%-20v", "%T"}
	for name, v := range values {
		for _, verb := range verbs {
			out := fmt.Sprintf(verb, v)
			if leaks(out) {
				t.Errorf("%s %s leaks: %s", name, verb, out)
			}
		}
		if out := fmt.Sprint(v) + fmt.Sprintln(v); leaks(out) {
			t.Errorf("%s Sprint leaks: %s", name, out)
		}
	}
	if got := fmt.Sprintf("%v|%s|%q|%#v", s, s, s, s); got != `[redacted]|[redacted]|"[redacted]"|[redacted]` {
		t.Errorf("got %s", got)
	}
	if s.String() != "[redacted]" || s.GoString() != "[redacted]" {
		t.Error("String/GoString must redact")
	}
}

func TestSecretNeverEncodes(t *testing.T) {
	s := NewSecret(testSecret)
	for name, v := range map[string]any{
		"value":      s,
		"pointer":    &s,
		"exported":   exported{"n", s},
		"unexported": unexported{"n", s},
		"map":        map[string]Secret{"k": s},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if leaks(string(b)) {
			t.Errorf("%s json leaks: %s", name, b)
		}
	}
	b, _ := json.Marshal(s)
	if string(b) != `"[redacted]"` {
		t.Errorf("json = %s", b)
	}
	txt, _ := s.MarshalText()
	if string(txt) != "[redacted]" {
		t.Errorf("text = %s", txt)
	}
	// A map key goes through MarshalText.
	b, _ = json.Marshal(map[Secret]int{s: 1})
	if leaks(string(b)) {
		t.Errorf("json map key leaks: %s", b)
	}
	// A redacted value is never read back as a real secret.
	var back Secret
	if err := json.Unmarshal([]byte(`"[redacted]"`), &back); err == nil {
		t.Error("decoding into a Secret must fail")
	}
}

func TestSecretNeverLogs(t *testing.T) {
	s := NewSecret(testSecret)
	var buf bytes.Buffer
	for _, h := range []slog.Handler{
		slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}),
	} {
		log := slog.New(h)
		log.Info("secret", "s", s, "p", &s)
		log.Info("structs", "exp", exported{"n", s}, "unexp", unexported{"n", s})
		log.Info("attr", slog.Any("s", s), slog.Group("g", slog.Any("s", s)))
		log.With("s", s).Debug("with")
		log.Info("fmt " + fmt.Sprint(s))
		log.Info("err", "err", fmt.Errorf("sign: %v", s))
	}
	out := buf.String()
	if leaks(out) {
		t.Errorf("slog leaks:\n%s", out)
	}
	if !strings.Contains(out, `"s":"[redacted]"`) || !strings.Contains(out, "s=[redacted]") {
		t.Errorf("expected redacted markers in:\n%s", out)
	}
}

func TestSecretNeverInErrors(t *testing.T) {
	s := NewSecret(testSecret)
	base := errors.New("boom")
	errs := []error{
		fmt.Errorf("sign with %v: %w", s, base),
		fmt.Errorf("sign with %s %q %+v %#v: %w", s, s, s, s, base),
		fmt.Errorf("wrap: %w", fmt.Errorf("creds %+v", unexported{"n", s})),
		&messages.Error{Code: messages.CodeInternalError, Message: "x", Err: fmt.Errorf("%v", exported{"n", s})},
		messages.Errorf(messages.CodeInternalError, "secret %v", s),
	}
	for i, err := range errs {
		if leaks(err.Error()) || leaks(fmt.Sprintf("%+v %#v", err, err)) {
			t.Errorf("error %d leaks: %v", i, err)
		}
		b, _ := json.Marshal(err)
		if leaks(string(b)) {
			t.Errorf("error %d json leaks: %s", i, b)
		}
	}
}
