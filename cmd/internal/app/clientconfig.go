package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/cli"
)

// serverName is the name client-config gives the server in a client's
// configuration.
const serverName = "guarded-exchange"

// tokenEnv is the environment variable the remote snippets read the bearer
// token from: client-config never prints a token.
const tokenEnv = "GX_TOKEN"

// clientTarget is what a snippet points a client at.
type clientTarget struct {
	// Exe is this binary's absolute path (stdio).
	Exe string
	// Env is the environment serve needs (stdio): GX_HOME and the rest.
	Env map[string]string
	// URL is the remote server's MCP endpoint; empty for stdio.
	URL string
	// GOOS decides where a client keeps its configuration.
	GOOS string
}

// clientSnippet is client-config's answer: the snippet, exactly as the
// client reads it (stdout), and where it goes (stderr).
type clientSnippet struct {
	Text  string
	Where []string
}

// ClientConfig prints the snippet for o.Client: this binary's absolute
// path and the resolved home for the stdio form, or o.HTTP with a bearer
// header read from GX_TOKEN for the remote form. It reads nothing but the
// paths: no home needs to exist yet.
func (r *Runtime) ClientConfig(_ context.Context, g *cli.Globals, o cli.ClientConfigOptions, out cli.IO) error {
	t := clientTarget{GOOS: runtime.GOOS}
	if o.HTTP != "" {
		u, err := mcpURL(o.HTTP)
		if err != nil {
			return cli.CannotStart("%v", err)
		}
		t.URL = u
	} else {
		p, err := resolvePaths(g)
		if err != nil {
			return cli.CannotStart("%v", err)
		}
		exe, err := os.Executable()
		if err != nil {
			return cli.CannotStart("cannot tell this binary's path: %v", err)
		}
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		t.Exe = exe
		t.Env = serveEnv(g, p)
	}
	s, err := renderClientConfig(o.Client, t)
	if err != nil {
		return cli.Refused("%v", err)
	}
	fmt.Fprintln(out.Out, s.Text)
	for _, line := range s.Where {
		fmt.Fprintln(out.Err, line)
	}
	return nil
}

// serveEnv is the environment a client gives the serve it starts: the
// home (absolute), the CLI confirmation channel on (so a human can approve
// from a terminal when the client has no form), and the master key,
// venue and user when they are not the defaults.
func serveEnv(g *cli.Globals, p paths) map[string]string {
	env := map[string]string{"GX_HOME": p.Home, "GX_CONFIRM_CLI_ENABLED": "true"}
	if g.MasterKeyFile != "" {
		env["GX_MASTER_KEY_FILE"] = p.MasterKey
	}
	if g.Venue != "" && g.Venue != "paper" {
		env["GX_VENUE"] = g.Venue
	}
	if g.User != "" && g.User != "local" {
		env["GX_USER"] = g.User
	}
	return env
}

// mcpURL checks a --http URL and adds the /mcp path when none is given.
func mcpURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--http: want an http:// or https:// URL of the server, e.g. http://127.0.0.1:8000/mcp")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// A token in the URL would be printed into the snippet (and the
		// server reads it only from the Authorization header).
		return "", fmt.Errorf("--http: the URL must carry no credentials, query or fragment; the bearer token goes in %s", tokenEnv)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/mcp"
	}
	return u.String(), nil
}

// stdioServer is a server entry of the mcpServers family of formats
// (Claude Code, Claude Desktop, Cursor, the Inspector) and of VS Code's
// servers.
type stdioServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// httpServer is a remote server entry.
type httpServer struct {
	Type    string            `json:"type,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// renderClientConfig builds the snippet of client for t.
func renderClientConfig(client string, t clientTarget) (clientSnippet, error) {
	remote := t.URL != ""
	stdio := func(typ string) stdioServer {
		return stdioServer{Type: typ, Command: t.Exe, Args: []string{"serve"}, Env: t.Env}
	}
	bearer := func(ref string) map[string]string { return map[string]string{"Authorization": "Bearer " + ref} }
	mcpServers := func(entry any) string {
		return indentJSON(map[string]any{"mcpServers": map[string]any{serverName: entry}})
	}
	switch client {
	case "claude-code":
		var entry any = stdio("stdio")
		if remote {
			entry = httpServer{Type: "http", URL: t.URL, Headers: bearer("${" + tokenEnv + "}")}
		}
		where := []string{"Claude Code: save this as .mcp.json in your project's root (or merge it into the mcpServers of the one there)."}
		if remote {
			where = append(where, "Claude Code expands ${"+tokenEnv+"} in .mcp.json from its environment: export "+tokenEnv+" (a token from `guarded-exchange admin token issue`) before starting it.")
		} else {
			one, _ := json.Marshal(entry)
			where = append(where, "Or add it for every project with:", "  claude mcp add-json --scope user "+serverName+" "+shellQuote(string(one)))
		}
		return clientSnippet{Text: mcpServers(entry), Where: where}, nil
	case "claude-desktop":
		if remote {
			return clientSnippet{}, fmt.Errorf("Claude Desktop's configuration file takes no bearer header for a remote server: use the stdio form on the machine that runs the server (a second serve relays its session to the running engine)")
		}
		where := []string{"Claude Desktop: merge this into " + claudeDesktopConfig(t.GOOS) + " (Settings > Developer > Edit Config), then restart Claude Desktop."}
		if t.GOOS == "linux" {
			where = append(where, "Claude Desktop has no official Linux build; the builds for Linux read that file.")
		}
		return clientSnippet{Text: mcpServers(stdio("")), Where: where}, nil
	case "cursor":
		var entry any = stdio("")
		if remote {
			entry = httpServer{URL: t.URL, Headers: bearer("${env:" + tokenEnv + "}")}
		}
		where := []string{"Cursor: merge this into ~/.cursor/mcp.json (every project) or .cursor/mcp.json in a project."}
		if remote {
			where = append(where, "Cursor reads ${env:"+tokenEnv+"} from its environment: export "+tokenEnv+" (a token from `guarded-exchange admin token issue`) before starting it.")
		}
		return clientSnippet{Text: mcpServers(entry), Where: where}, nil
	case "vscode":
		doc := map[string]any{}
		if remote {
			doc["inputs"] = []map[string]any{{"type": "promptString", "id": "gx-token", "description": "guarded-exchange bearer token (admin token issue)", "password": true}}
			doc["servers"] = map[string]any{serverName: httpServer{Type: "http", URL: t.URL, Headers: bearer("${input:gx-token}")}}
		} else {
			doc["servers"] = map[string]any{serverName: stdio("stdio")}
		}
		where := []string{"VS Code: save this as .vscode/mcp.json in your workspace, or merge it into your user mcp.json (MCP: Open User Configuration; " + vscodeUserConfig(t.GOOS) + ")."}
		if remote {
			where = append(where, "VS Code asks for the token once and keeps it in its secret storage.")
		}
		return clientSnippet{Text: indentJSON(doc), Where: where}, nil
	case "inspector":
		args := []string{"npx", "@modelcontextprotocol/inspector", "--cli"}
		if remote {
			args = append(args, "--server-url", t.URL, "--transport", "http", "--header", "Authorization: Bearer $"+tokenEnv)
		} else {
			for _, k := range slices.Sorted(maps.Keys(t.Env)) {
				args = append(args, "-e", k+"="+t.Env[k])
			}
			args = append(args, t.Exe, "serve")
		}
		args = append(args, "--method", "tools/list")
		words := make([]string, len(args))
		for i, a := range args {
			words[i] = shellQuote(a)
		}
		if remote {
			// The shell expands the token from the environment.
			words[len(words)-3] = `"Authorization: Bearer $` + tokenEnv + `"`
		}
		where := []string{"MCP Inspector: run this in a shell (it needs Node.js; npx fetches the Inspector). Drop --cli and --method for the web UI."}
		if remote {
			where = append(where, "export "+tokenEnv+" (a token from `guarded-exchange admin token issue`) first.")
		}
		return clientSnippet{Text: strings.Join(words, " "), Where: where}, nil
	}
	return clientSnippet{}, fmt.Errorf("unknown client %q", client)
}

// claudeDesktopConfig is where Claude Desktop keeps its configuration.
func claudeDesktopConfig(goos string) string {
	switch goos {
	case "darwin":
		return "~/Library/Application Support/Claude/claude_desktop_config.json"
	case "windows":
		return `%APPDATA%\Claude\claude_desktop_config.json`
	}
	return "~/.config/Claude/claude_desktop_config.json"
}

// vscodeUserConfig is where VS Code keeps the user mcp.json.
func vscodeUserConfig(goos string) string {
	switch goos {
	case "darwin":
		return "~/Library/Application Support/Code/User/mcp.json"
	case "windows":
		return `%APPDATA%\Code\User\mcp.json`
	}
	return "~/.config/Code/User/mcp.json"
}

func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // maps and structs of strings always encode
	}
	return string(b)
}
