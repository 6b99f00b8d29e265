package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// doctor on a fresh home passes its checks and lists what stands between
// the agent and a trade, each with its command; once the admin has lifted
// them only the notes remain. A missing home is "server not running".
func TestDoctorSaysWhatStandsBeforeATrade(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	r := run(t, in.env(), "", "doctor")
	for _, want := range []string{
		"ok    server not running\n",
		"all checks passed\n",
		"what still stands between the agent of local and a trade on paper:\n",
		"next  profile is read_only: the agent can only read. Run: guarded-exchange admin policy set-ceiling --user local --profile trade\n",
		"next  the allowlist is empty: no symbol may be traded. Run: guarded-exchange admin policy set-ceiling --user local --allow linear:BTCUSDT\n",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("doctor on a fresh home: exit %d, want %q in:\n%s", r.code, want, r.stdout)
		}
	}
	if r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT", "--max-leverage", "5"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	r = run(t, in.env("GX_CONFIRM_CLI_ENABLED=true"), "", "doctor")
	if r.code != 0 || strings.Contains(r.stdout, "next  ") ||
		!strings.Contains(r.stdout, "nothing in the policy stands between the agent of local and a trade on paper\n") ||
		!strings.Contains(r.stdout, "note  paper accounts start every symbol at 10x, above max_leverage 5") {
		t.Fatalf("doctor once trading is allowed: exit %d\n%s", r.code, r.stdout)
	}

	gone := install{home: filepath.Join(t.TempDir(), "none"), key: in.key}
	r = run(t, gone.env(), "", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "ok    server not running\n") || strings.Contains(r.stdout, "no such file") {
		t.Fatalf("doctor with no home: exit %d\n%s", r.code, r.stdout)
	}
}
