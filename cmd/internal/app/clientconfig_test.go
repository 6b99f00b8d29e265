package app

import (
	"strings"
	"testing"
)

// Where each client keeps its configuration, per system.
func TestClientConfigWherePerOS(t *testing.T) {
	target := func(goos string) clientTarget {
		return clientTarget{Exe: "/opt/gx", Env: map[string]string{"GX_HOME": "/h"}, GOOS: goos}
	}
	for _, c := range []struct{ client, goos, want string }{
		{"claude-desktop", "darwin", "~/Library/Application Support/Claude/claude_desktop_config.json"},
		{"claude-desktop", "windows", `%APPDATA%\Claude\claude_desktop_config.json`},
		{"claude-desktop", "linux", "~/.config/Claude/claude_desktop_config.json"},
		{"vscode", "darwin", "~/Library/Application Support/Code/User/mcp.json"},
		{"vscode", "linux", "~/.config/Code/User/mcp.json"},
		{"cursor", "linux", "~/.cursor/mcp.json"},
		{"claude-code", "darwin", ".mcp.json"},
	} {
		s, err := renderClientConfig(c.client, target(c.goos))
		if err != nil {
			t.Fatalf("%s on %s: %v", c.client, c.goos, err)
		}
		if where := strings.Join(s.Where, "\n"); !strings.Contains(where, c.want) {
			t.Errorf("%s on %s: %q does not name %s", c.client, c.goos, where, c.want)
		}
	}
	if _, err := renderClientConfig("claude-desktop", clientTarget{URL: "http://127.0.0.1:8000/mcp", GOOS: "darwin"}); err == nil {
		t.Error("claude-desktop --http was accepted; its file takes no bearer header")
	}
}

func TestMCPURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8000":     "http://127.0.0.1:8000/mcp",
		"https://gx.example.com/":   "https://gx.example.com/mcp",
		"http://127.0.0.1:8000/mcp": "http://127.0.0.1:8000/mcp",
		"ftp://127.0.0.1/mcp":       "",
		"127.0.0.1:8000":            "",
		"http://u:secret@host/mcp":  "",
	} {
		got, err := mcpURL(raw)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("mcpURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("mcpURL(%q) echoes the credentials: %v", raw, err)
		}
	}
}

// A token put in the --http URL's query or fragment (the server reads it
// only from the Authorization header) is never printed into a snippet:
// the URL is refused, naming GX_TOKEN, and the refusal does not repeat it.
func TestMCPURLRefusesATokenInTheURL(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:8000/mcp?token=gxt_secret",
		"http://127.0.0.1:8000/mcp?access_token=gxt_secret&x=1",
		"http://127.0.0.1:8000/mcp#gxt_secret",
	} {
		got, err := mcpURL(raw)
		if err == nil || strings.Contains(got+err.Error(), "gxt_secret") || !strings.Contains(err.Error(), tokenEnv) {
			t.Errorf("mcpURL(%q) = %q, %v; want a refusal naming %s", raw, got, err, tokenEnv)
		}
	}
}
