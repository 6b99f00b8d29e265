package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// keys add|show|replace|delete, with and without a running server; the
// secret never appears in the journal, the logs or any command's output.
func TestKeysCommandsNeverLeakTheSecret(t *testing.T) {
	t.Parallel()
	paper := sim.New(sim.Config{Seed: 1}).DefaultKey()
	for _, withServer := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "via socket"}[withServer], func(t *testing.T) {
			in := newInstall(t)
			var outputs []string
			if withServer {
				cs, _ := connectStdio(t, in, "")
				defer cs.Close()
			}
			step := func(stdin string, code int, args ...string) result {
				t.Helper()
				r := run(t, in.env(), stdin, args...)
				outputs = append(outputs, r.stdout, r.stderr)
				if r.code != code {
					t.Fatalf("%v: exit %d, want %d\n%s%s", args, r.code, code, r.stdout, r.stderr)
				}
				return r
			}
			show := step("", 0, "keys", "show", "--json")
			var v map[string]any
			json.Unmarshal([]byte(show.stdout), &v)
			if v["present"] != true || !strings.HasPrefix(v["fingerprint"].(string), "fp_") {
				t.Fatalf("init did not store the paper key: %s", show.stdout)
			}
			step("", 1, "keys", "add")                    // already stored
			step(paper.APIKey+"\n", 1, "keys", "replace") // only one line
			step("", 1, "keys", "delete")                 // stdin closed, no --yes
			step("", 0, "keys", "delete", "--yes")
			if r := step("", 0, "keys", "show"); !strings.Contains(r.stdout, "no paper key") {
				t.Fatalf("after delete: %s", r.stdout)
			}
			r := step(paper.APIKey+"\n"+paper.APISecret+"\n", 0, "keys", "add")
			if !strings.Contains(r.stdout, "ContractTrade.Order") {
				t.Fatalf("keys add: %s", r.stdout)
			}
			// The paper venue opened an account for the added key; it
			// learns the stored key again at every start, so another secret
			// for it is rejected by the venue, with or without a server.
			step(paper.APIKey+"\nwrong-"+paper.APISecret+"\n", 1, "keys", "replace")
			if r := run(t, in.env(), "", "keys", "add", paper.APISecret); r.code != 2 {
				t.Fatalf("a secret as an argument must be a usage error: %d", r.code)
			}

			dump := run(t, in.env(), "", "journal", "dump")
			outputs = append(outputs, dump.stdout)
			var types []string
			for _, l := range strings.Split(strings.TrimSpace(dump.stdout), "\n") {
				var rec map[string]any
				json.Unmarshal([]byte(l), &rec)
				// serve re-checks the key at start (credential_checked).
				if ty := rec["type"].(string); strings.HasPrefix(ty, "credential") && ty != "credential_checked" {
					types = append(types, ty)
				}
			}
			if strings.Join(types, ",") != "credential_added,credential_deleted,credential_added" {
				t.Fatalf("credential records %v", types)
			}
			segs, _ := filepath.Glob(filepath.Join(in.home, "journal", "*"))
			for _, s := range segs {
				b, _ := os.ReadFile(s)
				outputs = append(outputs, string(b))
			}
			for i, o := range outputs {
				if strings.Contains(o, paper.APISecret) {
					t.Fatalf("output %d contains the secret", i)
				}
			}
		})
	}
}
