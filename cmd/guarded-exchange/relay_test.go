package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func myPolicy(t *testing.T, cs *sdk.ClientSession) (user, killSwitch string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_my_policy: %v %+v", err, res)
	}
	var p struct {
		User       string `json:"user"`
		KillSwitch string `json:"kill_switch"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &p); err != nil {
		t.Fatal(err)
	}
	return p.User, p.KillSwitch
}

// Two stdio clients on one home trade through one engine: the second
// serve relays its session to the first over the local socket (same user,
// same actors, same journal, one set of limits), in both eras.
func TestTwoStdioClientsOneEngine(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	if r := run(t, in.env(), "", "admin", "user", "create", "bob"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	first, _ := connectStdio(t, in, "")
	defer first.Close()
	second, secondLog := connectStdio(t, in, "2025-11-25")
	third, _ := connectStdio(t, in, "", "GX_USER=bob")
	defer third.Close()
	if u, ks := myPolicy(t, second); u != "local" || ks != "none" {
		t.Fatalf("relayed session: %s %s", u, ks)
	}
	if u, _ := myPolicy(t, third); u != "bob" {
		t.Fatalf("relayed session for bob acts as %s", u)
	}
	res, err := second.CallTool(context.Background(), &sdk.CallToolParams{Name: "activate_kill_switch", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("activate_kill_switch through the relay: %v %+v", err, res)
	}
	if _, ks := myPolicy(t, first); ks != "user" {
		t.Fatalf("the first client does not see the relayed client's kill switch: %s", ks)
	}
	if _, ks := myPolicy(t, third); ks != "none" {
		t.Fatalf("local's kill switch reached bob: %s", ks)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(secondLog.String(), "relaying this MCP session") {
		t.Fatalf("the second serve did not relay:\n%s", secondLog.String())
	}
	if u, _ := myPolicy(t, first); u != "local" {
		t.Fatal("the engine's own session ended with a relayed one")
	}
	third.Close()
	first.Close()
	d := run(t, in.env(), "", "journal", "dump", "--type", "server_started")
	if n := strings.Count(d.stdout, "\n"); n != 1 {
		t.Fatalf("%d server_started records, want 1 (one engine):\n%s", n, d.stdout)
	}
}

// The relay socket carries MCP only: a control command sent over it is an
// invalid JSON-RPC request and changes nothing; a hello for an unknown
// user or of another form is refused.
func TestRelayCarriesOnlyMCP(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	cs, _ := connectStdio(t, in, "")
	defer cs.Close()
	sock := filepath.Join(in.home, "run", "mcp.sock")
	dial := func(hello string) (*bufio.Reader, net.Conn) {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(conn, "%s\n", hello)
		return bufio.NewReader(conn), conn
	}
	for _, hello := range []string{`{"v":1,"user":"nobody"}`, `{"v":2,"user":"local"}`, `{"v":1,"user":"local","role":"admin"}`,
		`{"v":1,"id":"1","type":"admin.policy.set_ceiling","body":{"user":"local","settings":{"profile":"trade"}}}`} {
		br, conn := dial(hello)
		line, err := br.ReadString('\n')
		conn.Close()
		if err != nil || !strings.Contains(line, `"ok":false`) {
			t.Fatalf("hello %s: %q %v", hello, line, err)
		}
	}
	br, conn := dial(`{"v":1,"user":"local"}`)
	defer conn.Close()
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"ok":true`) {
		t.Fatalf("hello: %q %v", line, err)
	}
	fmt.Fprintf(conn, "%s\n", `{"v":1,"id":"1","type":"admin.policy.set_ceiling","body":{"user":"local","settings":{"profile":"trade"}}}`)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, `"jsonrpc":"2.0"`) || !strings.Contains(line, `-32600`) {
		t.Fatalf("a control command over the relay: %q %v", line, err)
	}
	r := run(t, in.env(), "", "policy", "show", "--user", "local", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"profile":"read_only"`) {
		t.Fatalf("the policy changed: %s", r.stdout)
	}
	if d := run(t, in.env(), "", "journal", "dump", "--type", "policy_ceiling_set"); strings.TrimSpace(d.stdout) != "" {
		t.Fatalf("a ceiling record: %s", d.stdout)
	}
}
