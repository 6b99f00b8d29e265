package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shellWords splits a command line the way a POSIX shell does, with env
// set, by asking sh to print each word it would pass.
func shellWords(t *testing.T, line string, env ...string) []string {
	t.Helper()
	cmd := exec.Command("sh", "-c", `eval "set -- $1"; for a in "$@"; do printf '%s\0' "$a"; done`, "sh", line)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh cannot parse %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// Each client's snippet parses as that client's format and carries the
// binary's absolute path, the home and the CLI confirmation channel; the
// remote forms carry the bearer header as a reference to GX_TOKEN, never
// its value.
func TestClientConfigSnippets(t *testing.T) {
	t.Parallel()
	in := install{home: filepath.Join(t.TempDir(), "home"), key: filepath.Join(t.TempDir(), "master.key")}
	const secret = "gxt_must_never_be_printed"
	env := in.env("GX_TOKEN=" + secret)
	exe, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	checkStdio := func(client string, e entry) {
		t.Helper()
		if e.Command != exe || len(e.Args) != 1 || e.Args[0] != "serve" {
			t.Errorf("%s: command %q %q, want %q serve", client, e.Command, e.Args, exe)
		}
		if e.Env["GX_HOME"] != in.home || e.Env["GX_CONFIRM_CLI_ENABLED"] != "true" || e.Env["GX_MASTER_KEY_FILE"] != in.key {
			t.Errorf("%s: env %v, want GX_HOME=%s, GX_CONFIRM_CLI_ENABLED=true, GX_MASTER_KEY_FILE=%s", client, e.Env, in.home, in.key)
		}
	}
	for _, c := range []struct {
		client, servers, stdioType, httpType, tokenRef, where string
	}{
		{"claude-code", "mcpServers", "stdio", "http", "Bearer ${GX_TOKEN}", ".mcp.json"},
		{"claude-desktop", "mcpServers", "", "", "", "claude_desktop_config.json"},
		{"cursor", "mcpServers", "", "", "Bearer ${env:GX_TOKEN}", "~/.cursor/mcp.json"},
		{"vscode", "servers", "stdio", "http", "Bearer ${input:gx-token}", ".vscode/mcp.json"},
	} {
		r := run(t, env, "", "client-config", "--client", c.client)
		if r.code != 0 || !strings.Contains(r.stderr, c.where) {
			t.Fatalf("%s: exit %d, stderr %q (want it to name %s)", c.client, r.code, r.stderr, c.where)
		}
		var doc map[string]map[string]entry
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%s: stdout is not JSON: %v\n%s", c.client, err, r.stdout)
		}
		e, ok := doc[c.servers]["guarded-exchange"]
		if !ok || e.Type != c.stdioType {
			t.Fatalf("%s: no %s.guarded-exchange of type %q:\n%s", c.client, c.servers, c.stdioType, r.stdout)
		}
		checkStdio(c.client, e)

		r = run(t, env, "", "client-config", "--client", c.client, "--http", "http://127.0.0.1:8000")
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Fatalf("%s --http printed the token", c.client)
		}
		if c.tokenRef == "" {
			if r.code != 1 || !strings.Contains(r.stderr, "use the stdio form") {
				t.Fatalf("%s --http: exit %d %q, want a refusal naming the stdio form", c.client, r.code, r.stderr)
			}
			continue
		}
		var remote map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &remote); r.code != 0 || err != nil {
			t.Fatalf("%s --http: exit %d, %v\n%s", c.client, r.code, err, r.stdout)
		}
		var servers map[string]entry
		if err := json.Unmarshal(remote[c.servers], &servers); err != nil {
			t.Fatal(err)
		}
		e = servers["guarded-exchange"]
		if e.URL != "http://127.0.0.1:8000/mcp" || e.Type != c.httpType || e.Headers["Authorization"] != c.tokenRef {
			t.Errorf("%s --http: %+v", c.client, e)
		}
	}

	// The Inspector's snippet is a command line.
	r := run(t, env, "", "client-config", "--client", "inspector")
	if r.code != 0 {
		t.Fatalf("inspector: %d %q", r.code, r.stderr)
	}
	words := shellWords(t, strings.TrimSpace(r.stdout))
	want := []string{"npx", "@modelcontextprotocol/inspector", "--cli", "-e", "GX_CONFIRM_CLI_ENABLED=true", "-e", "GX_HOME=" + in.home, "-e", "GX_MASTER_KEY_FILE=" + in.key, exe, "serve", "--method", "tools/list"}
	if strings.Join(words, "\n") != strings.Join(want, "\n") {
		t.Errorf("inspector words:\n%q\nwant\n%q", words, want)
	}
	r = run(t, env, "", "client-config", "--client", "inspector", "--http", "http://127.0.0.1:8000/mcp")
	if r.code != 0 || strings.Contains(r.stdout, secret) {
		t.Fatalf("inspector --http: %d %q", r.code, r.stdout)
	}
	words = shellWords(t, strings.TrimSpace(r.stdout), "GX_TOKEN=tok")
	if got := strings.Join(words, " "); got != "npx @modelcontextprotocol/inspector --cli --server-url http://127.0.0.1:8000/mcp --transport http --header Authorization: Bearer tok --method tools/list" {
		t.Errorf("inspector --http words: %q", words)
	}
}
