package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// cliScript is a sequence of commands with the exit code each must give.
var cliScript = []struct {
	args []string
	code int
}{
	{[]string{"admin", "user", "create", "bob"}, 0},
	{[]string{"admin", "policy", "set-ceiling", "--user", "bob", "--profile", "trade", "--allow", "linear:BTCUSDT,spot:ETHUSDT", "--max-leverage", "5", "--max-order-notional", "500"}, 0},
	{[]string{"policy", "tighten", "--user", "bob", "--max-leverage", "3", "--allow", "linear:BTCUSDT"}, 0},
	{[]string{"policy", "tighten", "--user", "bob", "--max-leverage", "8"}, 1},
	{[]string{"policy", "tighten", "--user", "bob", "--max-leverage", "3.0"}, 0},
	{[]string{"policy", "show", "--user", "bob"}, 0},
	{[]string{"admin", "policy", "set-ceiling", "--user", "bob", "--max-leverage", "2"}, 0},
	{[]string{"admin", "policy", "reset-overrides", "--user", "bob", "--field", "max_leverage", "--yes"}, 0},
	{[]string{"admin", "policy", "reset-overrides", "--user", "bob"}, 1}, // stdin closed, no --yes
	{[]string{"kill-switch", "on", "--user", "bob"}, 0},
	{[]string{"admin", "kill-switch", "on", "--user", "bob"}, 0},
	{[]string{"kill-switch", "off", "--user", "bob", "--yes"}, 1},
	{[]string{"admin", "kill-switch", "off", "--user", "bob", "--yes"}, 0},
	{[]string{"admin", "user", "list"}, 0},
	{[]string{"admin", "user", "disable", "bob", "--yes"}, 0},
	{[]string{"policy", "tighten", "--user", "bob", "--max-pending", "1"}, 1},
}

// userRecords are the journal's records that change user state, without
// time and hashes: what two runs of the same commands must agree on.
func userRecords(t *testing.T, in install) []string {
	t.Helper()
	r := run(t, in.env(), "", "journal", "dump")
	if r.code != 0 {
		t.Fatalf("dump: %q", r.stderr)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		switch rec["type"] {
		case "server_started", "tool_call", "credential_added", "credential_checked":
			continue // not user commands; a key is sealed with a fresh salt each time
		}
		p, _ := json.Marshal(rec["payload"])
		out = append(out, rec["type"].(string)+" "+rec["user"].(string)+" "+rec["actor"].(string)+" "+string(p))
	}
	return out
}

// Every command gives the same answer and the same journal whether a
// server hosts the actors (over the socket) or the CLI does (in-process).
func TestCLICommandsBothWays(t *testing.T) {
	inProc := newInstall(t)
	for _, c := range cliScript {
		if r := run(t, inProc.env(), "", c.args...); r.code != c.code {
			t.Fatalf("in-process %v: exit %d, want %d\n%s%s", c.args, r.code, c.code, r.stdout, r.stderr)
		}
	}

	viaSocket := newInstall(t)
	cs, _ := connectStdio(t, viaSocket, "")
	defer cs.Close()
	for _, c := range cliScript {
		r := run(t, viaSocket.env(), "", c.args...)
		if r.code != c.code {
			t.Fatalf("via socket %v: exit %d, want %d\n%s%s", c.args, r.code, c.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "holds the lock") {
			t.Fatalf("%v did not use the socket: %s", c.args, r.stderr)
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	a, b := userRecords(t, inProc), userRecords(t, viaSocket)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("journals differ:\nin-process:\n%s\nvia socket:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if len(a) != 10 {
		t.Fatalf("%d user records, want 10:\n%s", len(a), strings.Join(a, "\n"))
	}
	for _, want := range []string{"policy_ceiling_set bob cli:admin", "policy_tightened bob cli:user", "policy_overrides_reset bob cli:admin",
		"kill_switch_on bob cli:user", "kill_switch_off bob cli:admin", "user_disabled bob cli:admin"} {
		if !strings.Contains(strings.Join(a, "\n"), want) {
			t.Errorf("journal lacks %q", want)
		}
	}
}

// The agent sees a policy change made over the socket at once, and the
// change is journaled with before and after.
func TestPolicyChangeReachesRunningServer(t *testing.T) {
	in := newInstall(t)
	cs, _ := connectStdio(t, in, "")
	defer cs.Close()
	r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--max-leverage", "4")
	if r.code != 0 {
		t.Fatalf("set-ceiling: %q", r.stderr)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_my_policy", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_my_policy: %v %+v", err, res)
	}
	var pol struct {
		Effective struct {
			Profile     string `json:"profile"`
			MaxLeverage string `json:"max_leverage"`
		} `json:"effective"`
	}
	json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &pol)
	if pol.Effective.Profile != "trade" || pol.Effective.MaxLeverage != "4" {
		t.Fatalf("agent sees %+v", pol.Effective)
	}
	if res, _ := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "activate_kill_switch", Arguments: map[string]any{}}); res.IsError {
		t.Fatal("activate_kill_switch failed")
	}
	r = run(t, in.env(), "", "policy", "show", "--json")
	if !strings.Contains(r.stdout, `"kill_switch":"user"`) {
		t.Fatalf("the CLI does not see the agent's kill switch: %s", r.stdout)
	}
	// The change made over the socket names the peer in the journal.
	dump := run(t, in.env(), "", "journal", "dump", "--type", "policy_ceiling_set")
	if !regexp.MustCompile(`"channel":"socket uid=\d+ pid=\d+"`).MatchString(dump.stdout) {
		t.Fatalf("policy_ceiling_set without the socket peer: %s", dump.stdout)
	}
}

func TestServeRefusesUnknownUser(t *testing.T) {
	in := newInstall(t)
	r := run(t, in.env("GX_USER=ghost"), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot start: user \"ghost\"") {
		t.Fatalf("unknown user: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env("GX_APPROVER_UIDS=root"), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "GX_APPROVER_UIDS") {
		t.Fatalf("bad approver list: %d %q", r.code, r.stderr)
	}
}

func controlLine(t *testing.T, conn net.Conn, r *bufio.Reader, line string) map[string]any {
	t.Helper()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	raw, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer to %.60q: %v", line, err)
	}
	var resp map[string]any
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("answer is not JSON: %q", raw)
	}
	return resp
}

func errField(resp map[string]any) (code, field string) {
	e, _ := resp["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	c, _ := e["code"].(string)
	f, _ := d["field"].(string)
	return c, f
}

// Malformed, unknown and oversize lines get clear errors and never disturb
// the server.
func TestControlSocketRobustness(t *testing.T) {
	in := newInstall(t)
	cs, _ := connectStdio(t, in, "")
	defer cs.Close()
	sock := filepath.Join(in.home, "run", "control.sock")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Join(in.home, "run"), 0o700}, {sock, 0o600}} {
		st, err := os.Stat(c.path)
		if err != nil || st.Mode().Perm() != c.mode {
			t.Fatalf("%s: %v mode %v, want %v", c.path, err, st.Mode().Perm(), c.mode)
		}
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	cases := []struct{ line, code, field string }{
		{`this is not json`, "invalid_params", "line"},
		{`{"type":"policy.show","body":{"user":"local"},"extra":1}`, "invalid_params", "line"},
		{`{"type":"confirm.approve_everything","body":{}}`, "invalid_params", "type"},
		{`{"type":"policy.show","body":{"user":"local","sudo":true}}`, "invalid_params", "body"},
		{`{"type":"policy.show","body":{"user":"nobody"}}`, "not_found", ""},
		{`{"type":"action.decide","body":{"user":"local"}}`, "invalid_params", "type"},
	}
	for _, c := range cases {
		resp := controlLine(t, conn, r, c.line)
		code, field := errField(resp)
		if resp["ok"] != false || code != c.code || field != c.field {
			t.Fatalf("%.50q: %v", c.line, resp)
		}
	}
	ok := controlLine(t, conn, r, `{"id":"7","type":"policy.show","body":{"user":"local"}}`)
	if ok["ok"] != true || ok["id"] != "7" {
		t.Fatalf("a good line after bad ones: %v", ok)
	}
	huge := `{"type":"policy.show","body":{"user":"` + strings.Repeat("a", 70<<10) + `"}}`
	resp := controlLine(t, conn, r, huge)
	if code, field := errField(resp); code != "invalid_params" || field != "line" {
		t.Fatalf("oversize line: %v", resp)
	}
	conn.Close()

	// The server still serves the socket and MCP.
	if r := run(t, in.env(), "", "policy", "show"); r.code != 0 {
		t.Fatalf("socket after abuse: %q", r.stderr)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("MCP after socket abuse: %v", err)
	}
}

// A peer whose uid is neither the server's nor in GX_APPROVER_UIDS is
// refused, and the refusal is journaled. The server runs as another uid
// (nobody) so that this test, as root, is the foreign peer.
func TestControlSocketRefusesOtherUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the server as another uid (SysProcAttr.Credential); CI runs as root")
	}
	const nobody = 65534
	root, err := os.MkdirTemp("", "gx-peercred-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	binCopy := filepath.Join(root, "guarded-exchange")
	data, _ := os.ReadFile(bin)
	os.WriteFile(binCopy, data, 0o755)
	os.Chmod(root, 0o755)
	in := install{home: filepath.Join(root, "home"), key: filepath.Join(root, "cfg", "master.key")}

	asNobody := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binCopy, args...)
		cmd.Env = in.env("HOME=" + root)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		return cmd
	}
	for _, d := range []string{"cfg", "home"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
		os.Chown(filepath.Join(root, d), nobody, nobody)
	}
	if out, err := asNobody("init").CombinedOutput(); err != nil {
		t.Fatalf("init as nobody: %v\n%s", err, out)
	}
	for _, approvers := range []string{"", "0"} {
		serve := asNobody("serve")
		serve.Env = append(serve.Env, "GX_APPROVER_UIDS="+approvers)
		stdin, _ := serve.StdinPipe()
		serve.Stdout, serve.Stderr = nil, nil
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(in.home, "run", "control.sock")
		var conn net.Conn
		for range 200 {
			if conn, err = net.Dial("unix", sock); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if conn == nil {
			t.Fatalf("socket never came up: %v", err)
		}
		br := bufio.NewReader(conn)
		resp := controlLine(t, conn, br, `{"type":"policy.show","body":{"user":"local"}}`)
		var admin map[string]any
		if approvers == "0" {
			admin = controlLine(t, conn, br, `{"type":"admin.policy.set_ceiling","body":{"user":"local","settings":{"profile":"trade"}}}`)
			st, _ := os.Stat(sock)
			dir, _ := os.Stat(filepath.Dir(sock))
			if st.Mode().Perm() != 0o666 || dir.Mode().Perm() != 0o711 {
				t.Fatalf("with other approver uids the socket must be reachable: %v %v", st.Mode().Perm(), dir.Mode().Perm())
			}
		}
		conn.Close()
		stdin.Close()
		serve.Wait()
		if c, _ := errField(admin); approvers == "0" && c != "permission_denied" {
			t.Fatalf("an approver ran an admin command: %v", admin)
		}
		code, _ := errField(resp)
		if approvers == "" && code != "permission_denied" {
			t.Fatalf("root was not refused: %v", resp)
		}
		if approvers == "0" && resp["ok"] != true {
			t.Fatalf("root listed in GX_APPROVER_UIDS was refused: %v", resp)
		}
	}
	dump := asNobody("journal", "dump", "--type", "control_refused")
	out, err := dump.Output()
	if err != nil || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), `"peer_uid":0`) {
		t.Fatalf("control_refused records: %v %q", err, out)
	}
}
