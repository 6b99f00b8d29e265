package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// admin token issue|list|revoke work in-process and over the control
// socket; the token is printed once and reaches neither the journal nor
// the server's logs; --user is required.
func TestTokenCommandsBothWays(t *testing.T) {
	t.Parallel()
	for _, viaSocket := range []bool{false, true} {
		in := newInstall(t)
		var stderr *bytes.Buffer
		var cs *sdk.ClientSession
		if viaSocket {
			cs, stderr = connectStdio(t, in, "")
			defer cs.Close()
		}
		if r := run(t, in.env(), "", "admin", "token", "issue"); r.code != 2 || !strings.Contains(r.stderr, "--user") {
			t.Fatalf("issue without --user: %d %q", r.code, r.stderr)
		}
		r := run(t, in.env(), "", "admin", "token", "issue", "--user", "local", "--json")
		if r.code != 0 {
			t.Fatalf("issue: %d %q", r.code, r.stderr)
		}
		var tok map[string]string
		if err := json.Unmarshal([]byte(r.stdout), &tok); err != nil || len(tok) != 2 || !strings.HasPrefix(tok["token"], "gxt_") || !strings.HasPrefix(tok["id"], "tok_") {
			t.Fatalf("issue --json printed %q (%v)", r.stdout, err)
		}
		r = run(t, in.env(), "", "admin", "token", "issue", "--user", "local")
		if r.code != 0 || !strings.Contains(r.stdout, "token id: tok_") || !strings.Contains(r.stdout, "token: gxt_") {
			t.Fatalf("issue (text): %d %q", r.code, r.stdout)
		}
		if r := run(t, in.env(), "", "admin", "token", "issue", "--user", "nobody"); r.code != 1 {
			t.Fatalf("issue for an unknown user: %d", r.code)
		}
		r = run(t, in.env(), "", "admin", "token", "revoke", tok["id"], "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"changed":true`) {
			t.Fatalf("revoke: %d %q %q", r.code, r.stdout, r.stderr)
		}
		if r := run(t, in.env(), "", "admin", "token", "revoke", "tok_ffffffffffffffff"); r.code != 1 || !strings.Contains(r.stderr, "not_found") {
			t.Fatalf("revoke unknown: %d %q", r.code, r.stderr)
		}
		r = run(t, in.env(), "", "admin", "token", "list", "--user", "local")
		if r.code != 0 || strings.Count(r.stdout, "tok_") != 2 || strings.Contains(r.stdout, "gxt_") {
			t.Fatalf("list: %d %q", r.code, r.stdout)
		}
		d := run(t, in.env(), "", "journal", "dump", "--type", "token_issued", "--type", "token_revoked")
		if d.code != 0 || strings.Count(d.stdout, "\n") != 3 || !strings.Contains(d.stdout, tok["id"]) || !strings.Contains(d.stdout, `"cli:admin"`) {
			t.Fatalf("journal dump: %q %q", d.stdout, d.stderr)
		}
		files, _ := filepath.Glob(filepath.Join(in.home, "journal", "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), tok["token"]) {
				t.Fatal("the token is in the journal")
			}
		}
		if cs != nil {
			if err := cs.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if stderr != nil && strings.Contains(stderr.String(), tok["token"]) {
			t.Fatal("the token is in the server's logs")
		}
	}
}
