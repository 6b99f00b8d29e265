package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// firstLine is the first line of a command's stderr (kong prints the
// usage after it).
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// A flag given without its value says what to write instead of kong's
// "(short flag)" and "EOL" wording: a negative number goes after "=".
func TestFlagWithoutValueSaysWhatToWrite(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"policy", "tighten", "--max-leverage", "-3"},
			`guarded-exchange: --max-leverage needs a value, and "-3" is taken for a flag: write a value that starts with "-" after "=", as in --max-leverage=-3`},
		{[]string{"policy", "tighten", "--max-leverage"},
			`guarded-exchange: --max-leverage needs a value: write --max-leverage=VALUE (see --help for the values it takes)`},
		{[]string{"policy", "tighten", "--max-leverage", "--json"},
			`guarded-exchange: --max-leverage needs a value before --json: write --max-leverage=VALUE (see --help for the values it takes)`},
		{[]string{"journal", "dump", "--type"},
			`guarded-exchange: --type needs a value: write --type=VALUE (see --help for the values it takes)`},
		{[]string{"journal", "dump", "--since"},
			`guarded-exchange: --since needs a value: write --since=VALUE (see --help for the values it takes)`},
	}
	for _, c := range cases {
		rt := &fakeRuntime{}
		code, _, stderr := runCLI(t, rt, "", c.args...)
		if code != ExitCannot || len(rt.delivered) != 0 {
			t.Fatalf("%v: exit %d, delivered %d", c.args, code, len(rt.delivered))
		}
		if got := firstLine(stderr); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}

// --since and --until take an RFC 3339 time, a date or a duration before
// now; anything else is refused with the three forms, not Go's layout.
func TestTimeFlagForms(t *testing.T) {
	rt := &fakeRuntime{}
	code, _, stderr := runCLI(t, rt, "", "journal", "dump", "--since", "yesterday")
	want := "guarded-exchange: --since: not a time: give an RFC 3339 time (2026-01-02T15:04:05Z), a date (2026-01-02, midnight UTC) or a duration before now (24h, 90m)"
	if code != ExitCannot || firstLine(stderr) != want || len(rt.dumped) != 0 {
		t.Fatalf("exit %d, dumped %d:\n got %s\nwant %s", code, len(rt.dumped), firstLine(stderr), want)
	}
	before := time.Now()
	rt = &fakeRuntime{}
	if code, _, stderr := runCLI(t, rt, "", "journal", "dump", "--since", "2026-01-02", "--until", "24h"); code != ExitOK {
		t.Fatalf("a date and a duration: exit %d: %s", code, stderr)
	}
	o := rt.dumped[0]
	if !o.Since.Equal(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("--since 2026-01-02 is %v", o.Since)
	}
	if ago := before.Sub(o.Until); ago < 24*time.Hour-time.Minute || ago > 24*time.Hour+time.Minute {
		t.Fatalf("--until 24h is %v before now", ago)
	}
	rt = &fakeRuntime{}
	if code, _, stderr := runCLI(t, rt, "", "journal", "dump", "--since=2026-01-02T15:04:05+02:00"); code != ExitOK ||
		!rt.dumped[0].Since.Equal(time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC)) {
		t.Fatalf("RFC 3339: exit %d, %v: %s", code, rt.dumped, stderr)
	}
}

// policy show shows the policy without a word about changes; a tighten
// that changed nothing says so.
func TestPolicyShowSaysNothingAboutChanges(t *testing.T) {
	code, out, _ := runCLI(t, &fakeRuntime{}, "", "policy", "show")
	if code != ExitOK || strings.Contains(out, "change") {
		t.Fatalf("policy show: exit %d:\n%s", code, out)
	}
	if lines := strings.Split(out, "\n"); len(lines) < 2 || !strings.HasPrefix(lines[1], "FIELD") {
		t.Fatalf("policy show: the table does not follow the user line:\n%s", out)
	}
	code, out, _ = runCLI(t, &fakeRuntime{}, "", "policy", "tighten", "--max-leverage", "2")
	if lines := strings.Split(out, "\n"); code != ExitOK || len(lines) < 2 || lines[1] != "no change: the policy already was this" {
		t.Fatalf("policy tighten that changed nothing: exit %d:\n%s", code, out)
	}
}

// posture show says in words how the stream is; a stream that read
// nothing yet is "no message yet", not "-1.0s ago".
func TestPostureShowStreamInWords(t *testing.T) {
	cases := []struct {
		s    messages.StreamHealth
		want string
	}{
		{messages.StreamHealth{Open: true, Connected: true, LastMessageAgeS: -1}, "  stream: connected, no message yet"},
		{messages.StreamHealth{Open: true, Connected: true, LastMessageAgeS: 2.5}, "  stream: connected, last message 2.5s ago"},
		{messages.StreamHealth{Open: true, DownForS: 12, LastMessageAgeS: 30}, "  stream: down for 12.0s, last message 30.0s ago"},
		{messages.StreamHealth{LastMessageAgeS: -1}, "  stream: not running (no stream for this user here)"},
	}
	for _, c := range cases {
		rt := &fakeRuntime{answer: &messages.PostureView{User: "local", Venue: "paper", State: messages.PostureActive, KillSwitch: messages.KillSwitchNone, Stream: c.s}}
		code, out, stderr := runCLI(t, rt, "", "posture", "show")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(out, "\n"+c.want+"\n") || strings.Contains(out, "-1.0s") {
			t.Errorf("%+v: want line %q in\n%s", c.s, c.want, out)
		}
	}
}

// posture resume asks first, like kill-switch off: a closed stdin or a no
// refuses and sends nothing, yes or --yes resumes; reduce never asks.
func TestPostureResumeAsksFirst(t *testing.T) {
	view := &messages.PostureView{User: "local", Venue: "paper", State: messages.PostureActive, KillSwitch: messages.KillSwitchNone}
	rt := &fakeRuntime{answer: view}
	code, _, stderr := runCLI(t, rt, "", "posture", "resume")
	want := "Lift the REDUCING posture of local? Risk-increasing actions will be allowed again. [y/N] guarded-exchange: not confirmed (no answer on stdin; pass --yes to skip the question)\n"
	if code != ExitRefused || len(rt.delivered) != 0 || stderr != want {
		t.Fatalf("closed stdin: exit %d, delivered %d:\n got %q\nwant %q", code, len(rt.delivered), stderr, want)
	}
	rt = &fakeRuntime{answer: view}
	if code, _, _ := runCLI(t, rt, "n\n", "posture", "resume"); code != ExitRefused || len(rt.delivered) != 0 {
		t.Fatalf("answered no: exit %d", code)
	}
	for _, c := range []struct {
		stdin string
		args  []string
	}{{"y\n", []string{"posture", "resume"}}, {"", []string{"posture", "resume", "--yes"}}} {
		rt = &fakeRuntime{answer: view}
		if code, _, _ := runCLI(t, rt, c.stdin, c.args...); code != ExitOK || len(rt.delivered) != 1 {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		if r, ok := rt.delivered[0].(*messages.SetPostureRequest); !ok || r.Reduce {
			t.Fatalf("%v sent %+v", c.args, rt.delivered[0])
		}
	}
	rt = &fakeRuntime{answer: view}
	if code, _, _ := runCLI(t, rt, "", "posture", "reduce"); code != ExitOK || !rt.delivered[0].(*messages.SetPostureRequest).Reduce {
		t.Fatalf("reduce: exit %d", code)
	}
}

// --listen is remote mode's address: without --transport http it is a
// usage error (exit 2) and nothing is served.
func TestListenNeedsTransportHTTP(t *testing.T) {
	for _, args := range [][]string{{"serve", "--listen", "127.0.0.1:9000"}, {"serve", "--listen=127.0.0.1:9000", "--transport", "stdio"}} {
		rt := &fakeRuntime{}
		code, _, stderr := runCLI(t, rt, "", args...)
		want := "guarded-exchange: --listen is the address of remote mode: add --transport http, or leave --listen out for stdio\n"
		if code != ExitCannot || stderr != want || len(rt.served) != 0 {
			t.Fatalf("%v: exit %d, served %d:\n got %q\nwant %q", args, code, len(rt.served), stderr, want)
		}
	}
	rt := &fakeRuntime{}
	if code, _, stderr := runCLI(t, rt, "", "serve", "--transport", "http", "--listen", "127.0.0.1:9000"); code != ExitOK || len(rt.served) != 1 ||
		rt.served[0].Listen != "127.0.0.1:9000" {
		t.Fatalf("http with --listen: exit %d %s", code, stderr)
	}
	rt = &fakeRuntime{}
	if code, _, stderr := runCLI(t, rt, "", "serve"); code != ExitOK || len(rt.served) != 1 {
		t.Fatalf("plain serve: exit %d %s", code, stderr)
	}
}

// warningRuntime is fakeRuntime with a policy warning.
type warningRuntime struct{ fakeRuntime }

func (w *warningRuntime) PolicyWarnings(messages.Policy) []string {
	return []string{"no allowed symbol can be traded"}
}

// A command that changes a policy prints the runtime's warnings about it
// on stderr and the change stands (exit 0); policy show prints none.
func TestPolicyChangeWarnings(t *testing.T) {
	for _, args := range [][]string{{"policy", "tighten", "--max-order-notional", "3"}, {"admin", "policy", "set-ceiling", "--max-order-notional", "3"}} {
		rt := &warningRuntime{}
		var out, errb strings.Builder
		code := Main(t.Context(), args, rt, IO{Out: &out, Err: &errb, In: strings.NewReader("")}, "test")
		if code != ExitOK || len(rt.delivered) != 1 || errb.String() != "guarded-exchange: warning: no allowed symbol can be traded\n" {
			t.Fatalf("%v: exit %d, delivered %d, stderr %q", args, code, len(rt.delivered), errb.String())
		}
	}
	rt := &warningRuntime{}
	var out, errb strings.Builder
	if code := Main(t.Context(), []string{"policy", "show"}, rt, IO{Out: &out, Err: &errb}, "test"); code != ExitOK || errb.String() != "" {
		t.Fatalf("policy show: exit %d, stderr %q", code, errb.String())
	}
}
