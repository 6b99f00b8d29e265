package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
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
	{[]string{"posture", "reduce", "--user", "bob"}, 0},
	{[]string{"posture", "show", "--user", "bob", "--json"}, 0},
	{[]string{"posture", "resume", "--user", "bob"}, 1}, // stdin closed, no --yes
	{[]string{"posture", "resume", "--user", "bob", "--yes"}, 0},
	{[]string{"posture", "reduce", "--user", "bob"}, 0}, // stays through the kill switch below
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
	t.Parallel()
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
	// 10 records of policy, kill switch and users; 3 posture commands; and
	// the posture transitions of the user's switch going on and the
	// admin's going off (the admin's on over the user's changes no state).
	if len(a) != 15 {
		t.Fatalf("%d user records, want 15:\n%s", len(a), strings.Join(a, "\n"))
	}
	for _, want := range []string{"policy_ceiling_set bob cli:admin", "policy_tightened bob cli:user", "policy_overrides_reset bob cli:admin",
		"kill_switch_on bob cli:user", "kill_switch_off bob cli:admin", "user_disabled bob cli:admin",
		`posture_changed bob cli:user {"actor":"cli:user","after":"REDUCING","before":"ACTIVE","causes":["human"],"causes_before":[],"reason":"human_reduce"}`,
		`posture_changed bob cli:user {"actor":"cli:user","after":"ACTIVE","before":"REDUCING","causes":[],"causes_before":["human"],"reason":"human_resume"}`,
		`posture_changed bob cli:admin {"actor":"cli:admin","after":"REDUCING","before":"HALTED","causes":["human"],"causes_before":["human"],"reason":"kill_switch_off"}`} {
		if !strings.Contains(strings.Join(a, "\n"), want) {
			t.Errorf("journal lacks %q", want)
		}
	}
}

// The agent sees a policy change made over the socket at once, and the
// change is journaled with before and after.
func TestPolicyChangeReachesRunningServer(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
		{`{"v":1,"type":"policy.show","body":{"user":"local"},"extra":1}`, "invalid_params", "line"},
		{`{"v":1,"type":"confirm.approve_everything","body":{}}`, "invalid_params", "type"},
		{`{"v":1,"type":"policy.show","body":{"user":"local","sudo":true}}`, "invalid_params", "body"},
		{`{"v":1,"type":"policy.show","body":{"user":"nobody"}}`, "not_found", ""},
		{`{"v":1,"type":"action.decide","body":{"user":"local"}}`, "invalid_params", "type"},
		// The protocol version comes first: missing, unknown, or not a
		// number, even when the rest of the line is of another version.
		{`{"type":"policy.show","body":{"user":"local"}}`, "invalid_params", "v"},
		{`{"v":2,"type":"policy.show","body":{"user":"local"}}`, "invalid_params", "v"},
		{`{"v":2,"type":"policy.show","body":{"user":"local"},"trace":"x"}`, "invalid_params", "v"},
		{`{"v":"1","type":"policy.show","body":{"user":"local"}}`, "invalid_params", "v"},
		{`{"v":null,"type":"policy.show","body":{"user":"local"}}`, "invalid_params", "v"},
	}
	for _, c := range cases {
		resp := controlLine(t, conn, r, c.line)
		code, field := errField(resp)
		if resp["ok"] != false || code != c.code || field != c.field || resp["v"] != 1.0 {
			t.Fatalf("%.50q: %v", c.line, resp)
		}
		if field == "v" && !strings.Contains(resp["error"].(map[string]any)["message"].(string), "version 1") {
			t.Fatalf("the version error does not say which version the server speaks: %v", resp)
		}
	}
	ok := controlLine(t, conn, r, `{"v":1,"id":"7","type":"policy.show","body":{"user":"local"}}`)
	if ok["ok"] != true || ok["id"] != "7" || ok["v"] != 1.0 {
		t.Fatalf("a good line after bad ones: %v", ok)
	}
	huge := `{"v":1,"type":"policy.show","body":{"user":"` + strings.Repeat("a", 70<<10) + `"}}`
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

// foreignInstall is an installation owned by nobody (65534) in a root
// directory every uid can search, with the binary copied where every uid
// can run it: the server runs as nobody, so that the test (root) and other
// uids are foreign peers. Needs root (SysProcAttr.Credential); CI runs as
// root.
type foreignInstall struct {
	root, bin string
	in        install
}

// Uids of the tests that run processes as other uids: the server's
// (nobody), an approver's and one that is not listed.
const (
	nobody   = 65534
	approver = 4242
	stranger = 4243
)

func newForeignInstall(t *testing.T) foreignInstall {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run processes as other uids (SysProcAttr.Credential); CI runs as root")
	}
	root, err := os.MkdirTemp("", "gx-peercred-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	f := foreignInstall{root: root, bin: filepath.Join(root, "guarded-exchange"),
		in: install{home: filepath.Join(root, "home"), key: filepath.Join(root, "cfg", "master.key")}}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	for _, d := range []string{"cfg", "home"} {
		os.MkdirAll(filepath.Join(root, d), 0o700)
		os.Chown(filepath.Join(root, d), nobody, nobody)
	}
	if out, err := f.as(nobody, nil, "init").CombinedOutput(); err != nil {
		t.Fatalf("init as nobody: %v\n%s", err, out)
	}
	return f
}

// as is the binary run as uid with the installation's environment.
func (f foreignInstall) as(uid uint32, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	cmd.Env = f.in.env(append([]string{"HOME=" + f.root}, extraEnv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	return cmd
}

// serve starts serve as nobody and waits until sock answers; stop ends it
// (closing stdin ends the MCP session) and waits for the process.
func (f foreignInstall) serve(t *testing.T, sock string, extraEnv ...string) (stop func()) {
	t.Helper()
	serve := f.as(nobody, extraEnv, "serve")
	stdin, _ := serve.StdinPipe()
	var stderr strings.Builder
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	// The socket appears only once it listens (no probe connection, which
	// would be a refusal of its own).
	var err error
	for range 500 {
		if _, err = os.Stat(sock); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		stdin.Close()
		serve.Wait()
		t.Fatalf("socket never came up: %v\n%s", err, stderr.String())
	}
	return func() {
		stdin.Close()
		if err := serve.Wait(); err != nil {
			t.Errorf("serve: %v\n%s", err, stderr.String())
		}
	}
}

// controlRefusals are the control_refused records' payloads.
func controlRefusals(t *testing.T, f foreignInstall) []map[string]any {
	t.Helper()
	out, err := f.as(nobody, nil, "journal", "dump", "--type", "control_refused").Output()
	if err != nil {
		t.Fatalf("journal dump: %v", err)
	}
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		var rec struct {
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		recs = append(recs, rec.Payload)
	}
	return recs
}

// A peer whose uid is neither the server's nor in GX_APPROVER_UIDS is
// refused, and the refusal is journaled. The server runs as nobody so that
// this test, as root, is the foreign peer. Listed as an approver, root may
// read but not run admin commands, through a socket outside the home.
func TestControlSocketRefusesOtherUID(t *testing.T) {
	t.Parallel()
	f := newForeignInstall(t)
	ctl := filepath.Join(f.root, "ctl")
	os.Mkdir(ctl, 0o711)
	os.Chown(ctl, nobody, nobody)
	for _, approvers := range []string{"", "0"} {
		sock := filepath.Join(f.in.home, "run", "control.sock")
		env := []string{"GX_APPROVER_UIDS=" + approvers}
		if approvers != "" {
			sock = filepath.Join(ctl, "control.sock")
			env = append(env, "GX_CONTROL_SOCKET="+sock)
		}
		stop := f.serve(t, sock, env...)
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		var resp, admin map[string]any
		if approvers == "" {
			// A refused peer gets one line and is closed before the
			// server reads anything.
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			raw, err := br.ReadBytes('\n')
			if err != nil || json.Unmarshal(raw, &resp) != nil {
				t.Fatalf("refusal: %q %v", raw, err)
			}
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("the server kept a refused connection open")
			}
		} else {
			resp = controlLine(t, conn, br, `{"v":1,"type":"policy.show","body":{"user":"local"}}`)
		}
		if approvers == "0" {
			// The CLI of an unlisted uid gets the server's refusal.
			out, err := f.as(stranger, env, "policy", "show").CombinedOutput()
			if err == nil || !strings.Contains(string(out), "permission_denied: this uid may not use the control socket") {
				t.Fatalf("an unlisted uid's CLI: %v\n%s", err, out)
			}
			admin = controlLine(t, conn, br, `{"v":1,"type":"admin.policy.set_ceiling","body":{"user":"local","settings":{"profile":"trade"}}}`)
			st, _ := os.Stat(sock)
			home, _ := os.Stat(f.in.home)
			if st.Mode().Perm() != 0o666 || home.Mode().Perm() != 0o700 {
				t.Fatalf("with other approver uids the socket must be reachable and the home closed: socket %v home %v", st.Mode().Perm(), home.Mode().Perm())
			}
		}
		conn.Close()
		stop()
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
	recs := controlRefusals(t, f)
	if len(recs) != 2 || recs[0]["peer_uid"] != 0.0 || recs[0]["count"] != 1.0 || recs[1]["peer_uid"] != float64(stranger) || recs[1]["count"] != 1.0 {
		t.Fatalf("control_refused records: %v", recs)
	}
}

// With approver uids other than the server's, the socket must live outside
// the home (GX_CONTROL_SOCKET): serve refuses to start without it, and
// doctor says so; with it, doctor checks the directory serve uses.
func TestControlSocketLayoutWithApprovers(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	other := fmt.Sprint(os.Getuid() + 1)
	r := run(t, in.env("GX_APPROVER_UIDS="+other), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "GX_CONTROL_SOCKET") {
		t.Fatalf("serve with approvers and no GX_CONTROL_SOCKET: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env("GX_APPROVER_UIDS="+other), "", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "FIX   control socket: GX_APPROVER_UIDS") {
		t.Fatalf("doctor with approvers and no GX_CONTROL_SOCKET: %d %q", r.code, r.stdout)
	}
	inHome := filepath.Join(in.home, "ctl", "control.sock")
	r = run(t, in.env("GX_APPROVER_UIDS="+other, "GX_CONTROL_SOCKET="+inHome), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "outside the home") {
		t.Fatalf("serve with a socket inside the home: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env("GX_CONTROL_SOCKET=relative/control.sock"), "", "policy", "show")
	if r.code != 2 || !strings.Contains(r.stderr, "absolute") {
		t.Fatalf("relative GX_CONTROL_SOCKET: %d %q", r.code, r.stderr)
	}

	ctl := filepath.Join(t.TempDir(), "ctl")
	sock := filepath.Join(ctl, "control.sock")
	env := in.env("GX_APPROVER_UIDS="+other, "GX_CONTROL_SOCKET="+sock)
	cs, _ := connectStdio(t, in, "", "GX_APPROVER_UIDS="+other, "GX_CONTROL_SOCKET="+sock)
	for path, want := range map[string]os.FileMode{ctl: 0o711, sock: 0o666, in.home: 0o700, filepath.Join(in.home, "run"): 0o700} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Fatalf("%s: %v, want mode %04o", path, err, want)
		}
	}
	if r := run(t, env, "", "doctor"); r.code != 0 || !strings.Contains(r.stdout, "ok    control socket "+sock) {
		t.Fatalf("doctor on the layout serve made: %d %q", r.code, r.stdout)
	}
	// The CLI reaches the server through the same path.
	if r := run(t, env, "", "kill-switch", "on"); r.code != 0 || strings.Contains(r.stderr, "holds the lock") {
		t.Fatalf("kill-switch on through GX_CONTROL_SOCKET: %d %q", r.code, r.stderr)
	}
	// A second server for another home may not take the live socket.
	other2 := newInstall(t)
	if r := run(t, other2.env("GX_CONTROL_SOCKET="+sock), "", "serve"); r.code != 2 || !strings.Contains(r.stderr, "another server listens") {
		t.Fatalf("a second server on a live socket: %d %q", r.code, r.stderr)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ctl, 0o777)
	if r := run(t, env, "", "doctor"); r.code != 1 || !strings.Contains(r.stdout, "writable by others") {
		t.Fatalf("doctor on a directory others can write: %d %q", r.code, r.stdout)
	}
	os.Chmod(ctl, 0o700)
	if r := run(t, env, "", "doctor"); r.code != 1 || !strings.Contains(r.stdout, "chmod 711") {
		t.Fatalf("doctor on a directory approvers cannot search: %d %q", r.code, r.stdout)
	}
	if r := run(t, env, "", "serve"); r.code != 2 || !strings.Contains(r.stderr, "chmod 711") {
		t.Fatalf("serve on a directory approvers cannot search: %d %q", r.code, r.stderr)
	}
}

// floodEnv makes the test binary a flooding peer instead of running tests
// (see TestMain): it connects to the socket and hangs up as fast as it
// can, for at most floodFor or floodMax connections, then prints how
// many connections it made.
const (
	floodEnv = "GX_TEST_FLOOD_SOCKET"
	floodFor = 3 * time.Second
	floodMax = 200000
)

// floodPeer is the flooding process's body.
func floodPeer(sock string) int {
	var n atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(floodFor)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && n.Load() < floodMax {
				c, err := net.Dial("unix", sock)
				if err != nil {
					time.Sleep(time.Millisecond) // accept queue full
					continue
				}
				n.Add(1)
				c.Close()
			}
		}()
	}
	wg.Wait()
	fmt.Println(n.Load())
	return 0
}

// The control socket cannot be flooded (issue 7): a connection flood from
// an unlisted uid adds a handful of control_refused records that count
// every refusal, while the owner's commands keep working; an approver's
// idle connections neither lock out the owner nor another approver, and
// are closed after seconds; the approver reaches the server through
// GX_CONTROL_SOCKET while the home stays 0700.
func TestControlSocketFloodAndSlots(t *testing.T) {
	t.Parallel()
	f := newForeignInstall(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	flooder := filepath.Join(f.root, "flooder.test")
	if err := os.WriteFile(flooder, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctl := filepath.Join(f.root, "ctl")
	os.Mkdir(ctl, 0o711)
	os.Chown(ctl, nobody, nobody)
	sock := filepath.Join(ctl, "control.sock")
	env := []string{"GX_APPROVER_UIDS=0," + fmt.Sprint(approver), "GX_CONTROL_SOCKET=" + sock}
	stop := f.serve(t, sock, env...)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	owner := func(args ...string) {
		t.Helper()
		out, err := f.as(nobody, env, args...).CombinedOutput()
		if err != nil {
			t.Errorf("owner %v: %v\n%s", args, err, out)
		}
	}

	// An approver uid reaches the server while the home stays 0700, may
	// read and turn the kill switch on, and nothing more.
	if out, err := f.as(approver, env, "policy", "show").CombinedOutput(); err != nil {
		t.Fatalf("approver policy show: %v\n%s", err, out)
	}
	if out, err := f.as(approver, env, "kill-switch", "on").CombinedOutput(); err != nil {
		t.Fatalf("approver kill-switch on: %v\n%s", err, out)
	}
	if out, err := f.as(approver, env, "admin", "policy", "set-ceiling", "--profile", "trade").CombinedOutput(); err == nil || !strings.Contains(string(out), "approver uid may only") {
		t.Fatalf("approver ran an admin command: %v\n%s", err, out)
	}
	// Nor the admin's kill switch: that one only the admin clears, so an
	// approver turning it on would lock the user out (hostile review).
	if out, err := f.as(approver, env, "admin", "kill-switch", "on", "--user", "local").CombinedOutput(); err == nil || !strings.Contains(string(out), "permission_denied") {
		t.Fatalf("approver turned the admin's kill switch on: %v\n%s", err, out)
	}

	// Idle connections from an allowed uid (root, an approver) fill only
	// that uid's slots: the rest are refused at once, the owner and the
	// other approver still get in, and the idle ones are closed.
	const idleConns = 32 // the attack of issue 7
	var idle []net.Conn
	for range idleConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	owner("kill-switch", "on")
	owner("policy", "show")
	if out, err := f.as(approver, env, "policy", "show").CombinedOutput(); err != nil {
		t.Errorf("approver policy show while another approver holds its slots: %v\n%s", err, out)
	}
	busy, closed := 0, 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		line, err := bufio.NewReader(c).ReadBytes('\n')
		switch {
		case err == nil && strings.Contains(string(line), `"rate_limited"`):
			busy++
		case err != nil && len(line) == 0 && !errors.Is(err, os.ErrDeadlineExceeded):
			closed++ // the server closed an idle connection
		default:
			t.Errorf("idle connection: %q %v", line, err)
		}
		c.Close()
	}
	if busy != idleConns-control.DefaultApproverConns || closed != control.DefaultApproverConns {
		t.Fatalf("%d connections refused as over the uid's slots, %d closed as idle; want %d and %d", busy, closed, idleConns-control.DefaultApproverConns, control.DefaultApproverConns)
	}

	// A flood from an unlisted uid.
	flood := exec.Command(flooder)
	flood.Env = []string{floodEnv + "=" + sock}
	flood.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: stranger, Gid: stranger}}
	var floodOut strings.Builder
	flood.Stdout = &floodOut
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- flood.Wait() }()
	during := 0
	for flooding := true; flooding; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("flooder: %v", err)
			}
			flooding = false
		default:
			owner("policy", "show")
			owner("kill-switch", "on")
			during++
		}
	}
	owner("policy", "show") // after the flood: every flood connection was accepted before it
	dials, err := strconv.Atoi(strings.TrimSpace(floodOut.String()))
	if err != nil || dials == 0 {
		t.Fatalf("flooder made no connections: %q %v", floodOut.String(), err)
	}
	stop()
	stop = nil

	counted, n := 0, 0
	for _, rec := range controlRefusals(t, f) {
		if rec["peer_uid"] != float64(stranger) {
			t.Errorf("refusal of another uid: %v", rec)
			continue
		}
		n++
		c, _ := rec["count"].(float64)
		counted += int(c)
	}
	t.Logf("flood: %d connections, %d control_refused records, %d owner command pairs during the flood", dials, n, during)
	if n == 0 || n > 5 {
		t.Fatalf("%d control_refused records for %d refused connections, want 1 to 5", n, dials)
	}
	if counted != dials {
		t.Fatalf("the records count %d refusals, the flooder made %d connections", counted, dials)
	}
}

// impostorEnv makes the test binary a fake control server instead of
// running tests (see TestMain): it listens on the socket, appends every
// byte it receives to the file impostorCaptureEnv names and answers each
// line as a server would; it prints "ready" once it listens and exits
// when its stdin closes.
const (
	impostorEnv        = "GX_TEST_IMPOSTOR_SOCKET"
	impostorCaptureEnv = "GX_TEST_IMPOSTOR_CAPTURE"
)

// impostor is the fake server's body.
func impostor(sock, capture string) int {
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Chmod(sock, 0o666)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadBytes('\n')
					if len(line) > 0 {
						f, ferr := os.OpenFile(capture, os.O_WRONLY|os.O_APPEND, 0)
						if ferr == nil {
							f.Write(line)
							f.Close()
						}
					}
					if err != nil {
						return
					}
					var req struct {
						ID string `json:"id"`
					}
					json.Unmarshal(line, &req)
					fmt.Fprintf(c, `{"v":1,"id":%q,"ok":true,"result":{"user":"local","kill_switch":"user"}}`+"\n", req.ID)
				}
			}()
		}
	}()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	ln.Close()
	return 0
}

// hostileBase is a root-owned directory (0755) for the impostor tests,
// holding copies of the CLI and of the test binary that other uids may
// run. It needs root, to run processes as other uids.
func hostileBase(t *testing.T) (base, cliBin string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run processes as other uids (SysProcAttr.Credential); CI runs as root")
	}
	base, err := os.MkdirTemp("", "gx-impostor-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{self: "impostor.test", bin: "guarded-exchange"} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, to), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return base, filepath.Join(base, "guarded-exchange")
}

// startImpostor runs the fake server as nobody on sock and returns what
// it has received so far.
func startImpostor(t *testing.T, base, sock string) (received func() string) {
	t.Helper()
	capture := filepath.Join(base, fmt.Sprintf("captured-%d", time.Now().UnixNano()))
	if err := os.WriteFile(capture, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(capture, nobody, nobody)
	cmd := exec.Command(filepath.Join(base, "impostor.test"))
	cmd.Env = []string{impostorEnv + "=" + sock, impostorCaptureEnv + "=" + capture}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("impostor: %q %v %s", line, err, stderr.String())
	}
	return func() string {
		b, err := os.ReadFile(capture)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// mkdirAs makes dir with mode (sticky when asked) and gives it to uid.
func mkdirAs(t *testing.T, dir string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// killSwitchRecords counts the kill_switch_on records of the install.
func killSwitchRecords(t *testing.T, in install) int {
	t.Helper()
	r := run(t, in.env(), "", "journal", "dump", "--type", "kill_switch_on")
	if r.code != 0 {
		t.Fatalf("journal dump: %q", r.stderr)
	}
	return strings.Count(r.stdout, "\n")
}

// Review finding A: with no server running, another uid (nobody) makes
// the socket's directory in a directory everybody may write (sticky, like
// /tmp) and listens there. The owner's CLI refuses before it connects:
// keys add sends no secret, kill-switch on sends nothing and does not fall
// back to running in-process; the error names the socket and the uid that
// owns its directory; doctor reports the same.
func TestCLIRefusesAnImpostorsDirectory(t *testing.T) {
	t.Parallel()
	base, _ := hostileBase(t)
	in := newInstall(t)
	sh := filepath.Join(base, "sh")
	mkdirAs(t, sh, 0o777|os.ModeSticky, 0)
	gx2 := filepath.Join(sh, "gx2")
	mkdirAs(t, gx2, 0o755, nobody)
	sock := filepath.Join(gx2, "control.sock")
	received := startImpostor(t, base, sock)
	env := in.env("GX_CONTROL_SOCKET="+sock, "GX_VENUE=bybit-demo")

	r := run(t, env, "REALKEY2\nREALSECRET2\n", "keys", "add")
	if r.code != 1 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "uid 65534") || strings.Contains(r.stderr, "REALSECRET2") {
		t.Fatalf("keys add towards an impostor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, env, "", "kill-switch", "on")
	if r.code != 1 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "uid 65534") || strings.Contains(r.stdout, "kill switch") {
		t.Fatalf("kill-switch on towards an impostor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := received(); got != "" {
		t.Fatalf("the impostor received %q", got)
	}
	if n := killSwitchRecords(t, in); n != 0 {
		t.Fatalf("the CLI fell back to running in-process: %d kill_switch_on records", n)
	}
	if r := run(t, env, "", "doctor"); r.code != 1 || !strings.Contains(r.stdout, gx2+" belongs to uid 65534") {
		t.Fatalf("doctor: %d %q", r.code, r.stdout)
	}
}

// A directory check cannot see a path swapped after it: the listener's
// uid decides. Here the directory is root's throughout (so the server
// must be root), and nobody's listening socket is moved into it, as a
// race would. The CLI refuses once connected, before writing a byte.
func TestCLIRefusesAListenerOfAnotherUID(t *testing.T) {
	t.Parallel()
	base, _ := hostileBase(t)
	in := newInstall(t)
	evil := filepath.Join(base, "evil")
	mkdirAs(t, evil, 0o755, nobody)
	ctl := filepath.Join(base, "ctl")
	mkdirAs(t, ctl, 0o711, 0)
	received := startImpostor(t, base, filepath.Join(evil, "control.sock"))
	sock := filepath.Join(ctl, "control.sock")
	if err := os.Rename(filepath.Join(evil, "control.sock"), sock); err != nil {
		t.Fatal(err)
	}
	env := in.env("GX_CONTROL_SOCKET="+sock, "GX_VENUE=bybit-demo")
	for _, c := range []struct {
		stdin string
		args  []string
	}{{"REALKEY2\nREALSECRET2\n", []string{"keys", "add"}}, {"", []string{"kill-switch", "on"}}} {
		r := run(t, env, c.stdin, c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "runs as uid 65534") {
			t.Fatalf("%v towards a listener of uid 65534: exit %d\n%s%s", c.args, r.code, r.stdout, r.stderr)
		}
	}
	if got := received(); got != "" {
		t.Fatalf("the impostor received %q", got)
	}
	if n := killSwitchRecords(t, in); n != 0 {
		t.Fatalf("the CLI fell back to running in-process: %d kill_switch_on records", n)
	}
}

// An approver trusts the owner of a directory that only root could have
// given it (here nobody's directory in a root-owned 0755 one): a kill
// switch goes through. A key command never goes to a server of another
// uid, whoever it is.
func TestApproverTrustsTheServersDirectoryButSendsItNoKeys(t *testing.T) {
	t.Parallel()
	base, cliBin := hostileBase(t)
	ctl := filepath.Join(base, "ctl")
	mkdirAs(t, ctl, 0o711, nobody)
	sock := filepath.Join(ctl, "control.sock")
	received := startImpostor(t, base, sock)
	as := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(cliBin, args...)
		cmd.Env = []string{"HOME=" + base, "GX_HOME=" + filepath.Join(base, "nohome"), "GX_CONTROL_SOCKET=" + sock, "GX_VENUE=bybit-demo"}
		cmd.Stdin = strings.NewReader(stdin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: approver, Gid: approver}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := as("", "kill-switch", "on"); err != nil || !strings.Contains(out, "kill switch: user") {
		t.Fatalf("approver kill-switch on: %v\n%s", err, out)
	}
	if got := received(); !strings.Contains(got, `"type":"kill_switch.set"`) {
		t.Fatalf("the server received %q", got)
	}
	out, err := as("REALKEY2\nREALSECRET2\n", "keys", "add")
	if err == nil || !strings.Contains(out, "key commands go only to a server of your own uid") {
		t.Fatalf("approver keys add: %v\n%s", err, out)
	}
	if got := received(); strings.Contains(got, "keys.") || strings.Contains(got, "REALSECRET2") {
		t.Fatalf("a key command reached a server of another uid: %q", got)
	}
}

// Review finding B: a symbolic link as the socket's directory (nobody's
// link in a sticky directory, pointing at root's 0711 directory) is
// refused by serve, doctor and the CLI, which never follow it: nobody
// could later point it at a directory of their own and take the requests.
func TestSymlinkedSocketDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	base, _ := hostileBase(t)
	in := newInstall(t)
	sh := filepath.Join(base, "sh")
	mkdirAs(t, sh, 0o777|os.ModeSticky, 0)
	ctl := filepath.Join(base, "ctl")
	mkdirAs(t, ctl, 0o711, 0)
	evil := filepath.Join(sh, "evil")
	mkdirAs(t, evil, 0o755, nobody)
	link := filepath.Join(sh, "gx")
	if err := os.Symlink(ctl, link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, nobody, nobody)
	sock := filepath.Join(link, "control.sock")
	env := in.env("GX_APPROVER_UIDS=65533", "GX_CONTROL_SOCKET="+sock)

	if r := run(t, env, "", "serve"); r.code != 2 || !strings.Contains(r.stderr, link+" is a symbolic link") {
		t.Fatalf("serve on a linked directory: %d %q", r.code, r.stderr)
	}
	if ents, _ := os.ReadDir(ctl); len(ents) != 0 {
		t.Fatalf("serve created %v through the link", ents)
	}
	if r := run(t, env, "", "doctor"); r.code != 1 || !strings.Contains(r.stdout, link+" is a symbolic link") {
		t.Fatalf("doctor on a linked directory: %d %q", r.code, r.stdout)
	}
	// nobody points the link at a directory of their own and listens.
	received := startImpostor(t, base, filepath.Join(evil, "control.sock"))
	os.Remove(link)
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, nobody, nobody)
	r := run(t, env, "", "kill-switch", "on")
	if r.code != 1 || !strings.Contains(r.stderr, sock) || !strings.Contains(r.stderr, "symbolic link") || strings.Contains(r.stdout, "kill switch") {
		t.Fatalf("kill-switch on through a link: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := received(); got != "" {
		t.Fatalf("the impostor received %q", got)
	}
	if n := killSwitchRecords(t, in); n != 0 {
		t.Fatalf("the CLI fell back to running in-process: %d kill_switch_on records", n)
	}
}
