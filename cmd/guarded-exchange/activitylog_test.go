package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// logLines parses stderr as JSON log lines; a line that is not one fails
// the test (stderr of serve carries only log lines).
func logLines(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a stderr line is not a JSON log line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// findLine is the first log line with msg whose fields include want.
func findLine(lines []map[string]any, msg string, want map[string]any) map[string]any {
	for _, l := range lines {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if ok {
			return l
		}
	}
	return nil
}

// At the default level, serve's log shows what the agent did: one line per
// tool call (tool, user, outcome, duration, ids), per order sent and
// settled, per confirmation asked and decided, per posture and kill switch
// change. No argument value and no part of the exchange key is in it,
// whatever the agent sent. GX_CONFIRM_CLI_ENABLED=yes opens the CLI channel
// (a boolean in any of its usual words).
func TestActivityLogAtTheDefaultLevel(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	const apiKey, apiSecret = "PLANTEDKEYq7Xv9Lm", "PLANTEDSECRETz5Rr2Wd"
	if r := run(t, in.env(), apiKey+"\n"+apiSecret+"\n", "keys", "replace"); r.code != 0 {
		t.Fatalf("keys replace: %d %s", r.code, r.stderr)
	}
	confirmCeiling(t, in, "paper")
	env := []string{"GX_LOG_LEVEL=", "GX_CONFIRM_CLI_ENABLED=yes"} // the default level
	cs, stderr := connectStdio(t, in, "", env...)
	const idem, note = "PLANTEDIDEMb3Kd8Qw", "PLANTEDNOTEp9Tt4Zx"
	order := map[string]any{"idempotency_key": idem}
	for k, v := range limitOrder {
		order[k] = v
	}
	out, isErr := callTool(t, cs, "place_order", order)
	id, _ := out["confirmation_id"].(string)
	if isErr || out["status"] != "pending" || id == "" {
		t.Fatalf("place_order: %v", out)
	}
	if out, isErr := callTool(t, cs, "get_ticker", map[string]any{"category": "linear", "symbol": "BTCUSDT", "note": note}); !isErr {
		t.Fatalf("an unknown argument was accepted: %v", out)
	}
	approve := run(t, in.env(env...), "", "confirm", "approve", id, "--yes")
	if approve.code != 0 {
		t.Fatalf("approve: %d %s", approve.code, approve.stderr)
	}
	if _, isErr := callTool(t, cs, "reduce_risk_only", map[string]any{}); isErr {
		t.Fatal("reduce_risk_only refused")
	}
	if _, isErr := callTool(t, cs, "activate_kill_switch", map[string]any{}); isErr {
		t.Fatal("activate_kill_switch refused")
	}
	cs.Close()

	all := stderr.String() + approve.stderr
	for _, secret := range []string{apiKey, apiSecret, idem, note} {
		if strings.Contains(all, secret) {
			t.Fatalf("%s is in stderr:\n%s", secret, all)
		}
	}
	lines := logLines(t, stderr.String())
	link := "gx-cf-" + strings.TrimPrefix(id, "cf_")
	for _, w := range []struct {
		msg    string
		fields map[string]any
	}{
		{"tool call", map[string]any{"tool": "place_order", "user": "local", "outcome": "ok", "status": "pending", "confirmation_id": id}},
		{"tool call", map[string]any{"tool": "get_ticker", "user": "local", "outcome": "invalid_params"}},
		{"confirmation requested", map[string]any{"user": "local", "confirmation_id": id, "tool": "place_order", "channel": "cli", "confirmed_by": "confirm_actions"}},
		{"confirmation decided", map[string]any{"user": "local", "confirmation_id": id, "decision": "approve", "channel": "cli"}},
		{"order sent", map[string]any{"user": "local", "tool": "place_order", "symbol": "BTCUSDT", "client_order_id": link, "confirmed": true}},
		{"order settled", map[string]any{"user": "local", "client_order_id": link, "status": "accepted"}},
		{"tool call", map[string]any{"tool": "reduce_risk_only", "outcome": "ok"}},
		{"posture changed", map[string]any{"user": "local", "after": "REDUCING"}},
		{"kill switch changed", map[string]any{"user": "local", "before": "none", "after": "user"}},
	} {
		l := findLine(lines, w.msg, w.fields)
		if l == nil {
			t.Errorf("no %q line with %v in the log", w.msg, w.fields)
			continue
		}
		if l["level"] != "INFO" {
			t.Errorf("%q is at %v, want INFO", w.msg, l["level"])
		}
		if _, ok := l["duration_ms"].(float64); w.msg == "tool call" && !ok {
			t.Errorf("tool call line without duration_ms: %v", l)
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr.String())
	}
}

// A CLI command that goes well prints its answer and nothing on stderr at
// the default level: no warning about the actors it stopped on the way
// out, and its activity lines only when GX_LOG_LEVEL asks for them.
func TestCLIRunsPrintNoWarnings(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	env := in.env("GX_LOG_LEVEL=")
	for _, args := range [][]string{
		{"policy", "show"},
		{"posture", "show"},
		{"kill-switch", "on"},
		{"policy", "tighten", "--max-leverage", "5"},
		{"journal", "verify"},
	} {
		r := run(t, env, "", args...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("%v: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
	}
	// At info, the same kind of run shows its activity and still no
	// warning.
	r := run(t, in.env("GX_LOG_LEVEL=info"), "", "kill-switch", "off", "--yes")
	lines := logLines(t, r.stderr)
	if r.code != 0 || findLine(lines, "kill switch changed", map[string]any{"before": "user", "after": "none"}) == nil {
		t.Fatalf("kill-switch off at info: exit %d:\n%s", r.code, r.stderr)
	}
	for _, l := range lines {
		if l["level"] != "INFO" {
			t.Fatalf("kill-switch off at info logged %v", l)
		}
	}
}

// The settings are checked before any command runs: a value a variable
// does not take refuses to start (exit 2), naming the variable and not
// the value; an unknown GX_ variable is named in a warning and the
// command runs.
func TestSettingsCheckedAtStart(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	for _, c := range []struct{ env, want string }{
		{"GX_CONFIRM_CLI_ENABLED=maybe", "guarded-exchange: cannot start: GX_CONFIRM_CLI_ENABLED must be one of true, false, 1, 0, yes, no, on, off (any case)\n"},
		{"GX_LOG_LEVEL=verbose", "guarded-exchange: cannot start: GX_LOG_LEVEL must be one of debug, info, warn, error (any case)\n"},
	} {
		r := run(t, in.env(c.env), "", "policy", "show")
		if r.code != 2 || r.stderr != c.want || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q\n got %q\nwant %q", c.env, r.code, r.stdout, r.stderr, c.want)
		}
	}
	r := run(t, in.env("GX_LOG_LEVEL=", "GX_CONFRIM_CLI_ENABLED=true"), "", "policy", "show")
	lines := logLines(t, r.stderr)
	if r.code != 0 || len(lines) != 1 || lines[0]["level"] != "WARN" || lines[0]["name"] != "GX_CONFRIM_CLI_ENABLED" {
		t.Fatalf("unknown variable: exit %d:\n%s", r.code, r.stderr)
	}
}

// A ceiling whose order cap is under the smallest order of every allowed
// symbol is accepted with a warning that says why, using the paper
// venue's instrument rules (no network); serve says it again at start.
func TestPolicyThatBlocksTradingIsWarned(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	env := in.env("GX_LOG_LEVEL=")
	r := run(t, env, "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT", "--max-order-notional", "20")
	want := "guarded-exchange: warning: no allowed symbol can be traded: max_order_notional_usdt is 20 USDT, under the smallest order of every allowed symbol (linear:BTCUSDT 41.33 USDT; from the instrument rules of the paper venue); raise max_order_notional_usdt or allow another symbol\n"
	if r.code != 0 || r.stderr != want || !strings.Contains(r.stdout, "changed (journaled)") {
		t.Fatalf("set-ceiling: exit %d, stdout %q\n got %q\nwant %q", r.code, r.stdout, r.stderr, want)
	}
	cs, stderr := connectStdio(t, in, "", "GX_LOG_LEVEL=")
	cs.Close()
	if findLine(logLines(t, stderr.String()), "the policy lets no order through", map[string]any{"user": "local", "level": "WARN", "why": strings.TrimSuffix(strings.TrimPrefix(want, "guarded-exchange: warning: "), "\n")}) == nil {
		t.Fatalf("serve did not warn:\n%s", stderr.String())
	}
	// A cap an allowed symbol fits under says nothing.
	if r := run(t, env, "", "admin", "policy", "set-ceiling", "--user", "local", "--allow", "linear:BTCUSDT,linear:SOLUSDT"); r.code != 0 || r.stderr != "" {
		t.Fatalf("a tradable policy: exit %d, stderr %q", r.code, r.stderr)
	}
}

// --log-format text writes slog's text lines; GX_LOG_FORMAT does the same.
func TestLogFormatText(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{[]string{"GX_LOG_LEVEL=info"}, []string{"--log-format", "text", "kill-switch", "on"}},
		{[]string{"GX_LOG_LEVEL=info", "GX_LOG_FORMAT=text"}, []string{"kill-switch", "off", "--yes"}},
	} {
		r := run(t, in.env(c.env...), "", c.args...)
		if r.code != 0 || !strings.Contains(r.stderr, `level=INFO msg="kill switch changed" user=local`) || strings.Contains(r.stderr, "{") {
			t.Fatalf("%v: exit %d, stderr:\n%s", c.args, r.code, r.stderr)
		}
	}
}

// A setting refused at start never shows its value, whichever part of the
// program reads it: GX_VENUE (read as --venue) and GX_APPROVER_UIDS
// (doctor reports it, serve refuses to start) are named, and what they
// were set to is not repeated on stdout or stderr.
func TestSettingsRefusalsNeverEchoTheValue(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	for _, c := range []struct {
		env  string
		args []string
		name string
	}{
		{"GX_VENUE=sekrit-venue", []string{"policy", "show"}, "GX_VENUE"},
		{"GX_APPROVER_UIDS=1000,sekrit-uid", []string{"doctor"}, "GX_APPROVER_UIDS"},
		{"GX_APPROVER_UIDS=1000,sekrit-uid", []string{"serve"}, "GX_APPROVER_UIDS"},
	} {
		r := run(t, in.env(c.env), "", c.args...)
		if r.code == 0 || strings.Contains(r.stdout+r.stderr, "sekrit") || !strings.Contains(r.stdout+r.stderr, c.name) {
			t.Errorf("%s %v: exit %d\nstdout %q\nstderr %q", c.env, c.args, r.code, r.stdout, r.stderr)
		}
	}
}
