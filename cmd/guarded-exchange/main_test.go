package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bin is the binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	if sock := os.Getenv(floodEnv); sock != "" {
		os.Exit(floodPeer(sock))
	}
	if sock := os.Getenv(impostorEnv); sock != "" {
		os.Exit(impostor(sock, os.Getenv(impostorCaptureEnv)))
	}
	dir, err := os.MkdirTemp("", "gx-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "guarded-exchange")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build failed: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// install is one home and master key in a temp dir.
type install struct {
	home, key string
}

func (in install) env(extra ...string) []string {
	env := []string{"HOME=" + filepath.Dir(in.home), "PATH=" + os.Getenv("PATH"),
		"GX_HOME=" + in.home, "GX_MASTER_KEY_FILE=" + in.key, "GX_LOG_LEVEL=debug"}
	if v := os.Getenv("GORACE"); v != "" {
		env = append(env, "GORACE="+v)
	}
	return append(env, extra...)
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t testing.TB, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func newInstall(t testing.TB) install {
	t.Helper()
	root := t.TempDir()
	in := install{home: filepath.Join(root, "home"), key: filepath.Join(root, "config", "master.key")}
	if r := run(t, in.env(), "", "init"); r.code != 0 {
		t.Fatalf("init: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return in
}

func connectStdio(t testing.TB, in install, era string, extraEnv ...string) (*sdk.ClientSession, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env(extraEnv...)
	stderr := &bytes.Buffer{} // read only after the process exits
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, nil).Connect(ctx,
		&sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs, stderr
}

func TestStdioBothEras(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	for _, era := range []string{"", "2025-11-25"} {
		t.Run("era="+era, func(t *testing.T) {
			cs, _ := connectStdio(t, in, era)
			defer cs.Close()
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 17 { // the read_only profile: reads, posture, the journal, the kill switch, the confirmation tools
				t.Fatalf("%d tools", len(tools.Tools))
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear"}})
			if err != nil || res.IsError {
				t.Fatalf("get_ticker: %v %+v", err, res)
			}
			var tk map[string]any
			if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &tk); err != nil || tk["venue"] != "paper" {
				t.Fatalf("ticker %v (%v)", tk, err)
			}
			if err := cs.Close(); err != nil {
				t.Fatalf("serve did not exit cleanly: %v", err)
			}
		})
	}
}

var jsonrpcLine = regexp.MustCompile(`^\{.*\}$`)

// serve writes nothing but JSON-RPC messages to stdout, and its logs go to
// stderr as JSON. Lines that are not one JSON-RPC request (garbage, a
// batch, deep nesting) get an error answer without ending the session.
func TestServeStdoutIsOnlyJSONRPC(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env()
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	requests := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`this line is not JSON at all`,
		`[{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}]`,
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_ticker","arguments":` + strings.Repeat(`{"a":`, 12000) + `1` + strings.Repeat(`}`, 12000) + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_ticker","arguments":{"symbol":"ETHUSDT","category":"spot"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_orderbook","arguments":{"symbol":"ETHUSDT","category":"spot","limit":1e9}}}`,
	}
	for _, r := range requests {
		if _, err := io.WriteString(stdin, r+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Keep stdin open until the answers are in (go-sdk #1061).
	sc := bufio.NewScanner(stdoutPipe)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	var lines []string
	ids := map[float64]bool{}
	for len(ids) < 5 && sc.Scan() {
		lines = append(lines, sc.Text())
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			if id, ok := m["id"].(float64); ok {
				ids[id] = true
			}
		}
	}
	stdin.Close()
	rest, _ := io.ReadAll(stdoutPipe)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(ids) != 5 || !ids[1] || !ids[2] || !ids[3] || !ids[4] || !ids[8] {
		t.Fatalf("got answers for %v", ids)
	}
	for _, l := range lines {
		var m map[string]any
		if !jsonrpcLine.MatchString(l) || json.Unmarshal([]byte(l), &m) != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", l)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			t.Fatalf("stderr line is not JSON: %q", l)
		}
	}
}

func TestServeCannotStart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	missing := install{home: filepath.Join(root, "nohome"), key: filepath.Join(root, "k", "master.key")}
	r := run(t, missing.env(), "", "serve")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "guarded-exchange: cannot start: ") || !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("missing home: %d %q", r.code, r.stderr)
	}

	in := newInstall(t)
	other := install{home: in.home, key: filepath.Join(root, "other.key")}
	if err := os.WriteFile(other.key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, other.env(), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot start: master key file") {
		t.Fatalf("wrong key: %d %q", r.code, r.stderr)
	}
	absent := install{home: in.home, key: filepath.Join(root, "absent.key")}
	r = run(t, absent.env(), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "missing") {
		t.Fatalf("absent key: %d %q", r.code, r.stderr)
	}
	if err := os.Chmod(in.key, 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, in.env(), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "readable by others") {
		t.Fatalf("open key: %d %q", r.code, r.stderr)
	}
	os.Chmod(in.key, 0o600)

	r = run(t, in.env("GX_HTTP_ALLOWED_ORIGINS=evil.example/path"), "", "serve", "--transport", "http", "--listen", "127.0.0.1:0")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot start: GX_HTTP_ALLOWED_ORIGINS: entry 1 is not valid") || strings.Contains(r.stderr, "evil.example") {
		t.Fatalf("http transport, bad origins: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env(), "", "serve", "--transport", "http", "--listen", "127.0.0.1:99999")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot start: listen on") {
		t.Fatalf("http transport, bad address: %d %q", r.code, r.stderr)
	}

	// A serve on a home locked by a process that is not an engine (no
	// relay socket answers) names the holder's pid.
	lf, err := os.OpenFile(filepath.Join(in.home, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	lf.Truncate(0)
	lf.WriteAt([]byte("4242\n"), 0)
	r = run(t, in.env(), "", "serve")
	if r.code != 2 || !regexp.MustCompile(`cannot start: another process \(pid 4242\) holds the lock`).MatchString(r.stderr) {
		t.Fatalf("second serve: %d %q", r.code, r.stderr)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	r := run(t, []string{"PATH=" + os.Getenv("PATH")}, "", "no-such-command")
	if r.code != 2 {
		t.Fatalf("unknown command: exit %d", r.code)
	}
	r = run(t, []string{"PATH=" + os.Getenv("PATH")}, "", "serve", "--venue", "moon")
	if r.code != 2 {
		t.Fatalf("bad venue: exit %d", r.code)
	}
	r = run(t, []string{"PATH=" + os.Getenv("PATH")}, "", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "guarded-exchange ") {
		t.Fatalf("version: %d %q", r.code, r.stdout)
	}
}

func TestInitIsSafeToRerun(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	st, err := os.Stat(in.key)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode: %v %v", st.Mode(), err)
	}
	for _, d := range []string{"", "journal", "run"} {
		st, err := os.Stat(filepath.Join(in.home, d))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", d, err, st.Mode())
		}
	}
	// State is rebuilt from the journal alone: no snapshots directory.
	if _, err := os.Stat(filepath.Join(in.home, "snapshots")); !os.IsNotExist(err) {
		t.Fatalf("init created a snapshots directory: %v", err)
	}
	key1, _ := os.ReadFile(in.key)
	r := run(t, in.env(), "", "init")
	if r.code != 0 || !strings.Contains(r.stdout, "already exists") {
		t.Fatalf("re-run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	key2, _ := os.ReadFile(in.key)
	if !bytes.Equal(key1, key2) {
		t.Fatal("re-running init replaced the master key")
	}
	dump := run(t, in.env(), "", "journal", "dump", "--type", "user_created")
	if strings.Count(dump.stdout, "\n") != 1 {
		t.Fatalf("user_created records after two inits: %q", dump.stdout)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(dump.stdout), &rec); err != nil {
		t.Fatal(err)
	}
	p := rec["payload"].(map[string]any)["ceiling"].(map[string]any)
	if rec["user"] != "local" || rec["actor"] != "cli:admin" || p["profile"] != "read_only" || p["venue_ceiling"] != "demo" || len(p["allow"].([]any)) != 0 {
		t.Fatalf("local user record %v", rec)
	}

	os.Remove(in.key)
	r = run(t, in.env(), "", "init")
	if r.code != 2 || !strings.Contains(r.stderr, "master key file") || !strings.Contains(r.stderr, "gone") {
		t.Fatalf("init with the key gone: %d %q", r.code, r.stderr)
	}

	inside := install{home: in.home, key: filepath.Join(in.home, "master.key")}
	r = run(t, inside.env(), "", "init")
	if r.code != 2 || !strings.Contains(r.stderr, "outside") {
		t.Fatalf("key inside home: %d %q", r.code, r.stderr)
	}
}

func TestSimCommandPrintsOneLine(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "sim", "--listen", "127.0.0.1:0", "--seed", "5")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ann map[string]string
	if err := json.Unmarshal([]byte(line), &ann); err != nil {
		t.Fatalf("not one JSON line: %q", line)
	}
	for _, k := range []string{"rest", "ws_private", "ws_public_linear", "ws_public_spot", "api_key", "api_secret"} {
		if ann[k] == "" {
			t.Errorf("announcement lacks %s", k)
		}
	}
	if !strings.HasPrefix(ann["rest"], "http://127.0.0.1:") || !strings.HasPrefix(ann["ws_private"], "ws://127.0.0.1:") {
		t.Fatalf("not loopback: %v", ann)
	}
	resp, err := http.Get(ann["rest"] + "/v5/market/time")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("market/time: %d", resp.StatusCode)
	}
}

func TestBybitURLOverrideIsLoopbackOnly(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	r := run(t, in.env("GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=http://10.1.2.3:80", "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true"), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "loopback") {
		t.Fatalf("non-loopback override: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env("GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=http://127.0.0.1:9"), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL") {
		t.Fatalf("override without the test switch: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env("GX_VENUE=bybit-live"), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "GX_LIVE_ACK") {
		t.Fatalf("live without ack: %d %q", r.code, r.stderr)
	}

	// Against a standalone simulator, the demo venue path works end to end.
	simCmd := exec.Command(bin, "sim", "--listen", "127.0.0.1:0")
	simCmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, _ := simCmd.StdoutPipe()
	simCmd.Stderr = io.Discard
	if err := simCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { simCmd.Process.Kill(); simCmd.Wait() }()
	line, _ := bufio.NewReader(out).ReadString('\n')
	var ann map[string]string
	if err := json.Unmarshal([]byte(line), &ann); err != nil {
		t.Fatal(err)
	}
	cs, _ := connectStdio(t, in, "", "GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL="+ann["rest"], "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true")
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": "SOLUSDT", "category": "spot"}})
	if err != nil || res.IsError {
		t.Fatalf("get_ticker via bybit-demo: %v %+v", err, res)
	}
	if !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"venue":"bybit-demo"`) {
		t.Fatalf("venue not named: %s", res.Content[0].(*sdk.TextContent).Text)
	}
}

func TestJournalCommandsAndTamperDetection(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	cs, _ := connectStdio(t, in, "")
	cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "spot"}})
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	r := run(t, in.env(), "", "journal", "verify")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Fatalf("verify: %d %q %q", r.code, r.stdout, r.stderr)
	}
	head := run(t, in.env(), "", "journal", "head")
	if head.code != 0 || !regexp.MustCompile(`^\d+:[0-9a-f]{64}\n$`).MatchString(head.stdout) {
		t.Fatalf("head: %d %q", head.code, head.stdout)
	}
	dump := run(t, in.env(), "", "journal", "dump", "--format", "jsonl")
	lines := strings.Split(strings.TrimSpace(dump.stdout), "\n")
	types := []string{}
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("dump line %q: %v", l, err)
		}
		for _, f := range []string{"seq", "time", "type", "actor", "payload", "prev_hash", "hash"} {
			if _, ok := rec[f]; !ok {
				t.Fatalf("dump line lacks %s: %q", f, l)
			}
		}
		types = append(types, rec["type"].(string))
	}
	// The key re-check at start runs in the background (nothing on the
	// start-up path waits on the network), so its credential_checked and
	// the first tool_call may come in either order.
	if len(types) == 5 {
		slices.Sort(types[3:])
	}
	got := strings.Join(types, ",")
	if got != "user_created,credential_added,server_started,credential_checked,tool_call" {
		t.Fatalf("journal types %s", got)
	}
	mine := run(t, in.env(), "", "journal", "dump", "--user", "local")
	if n := strings.Count(mine.stdout, "\n"); n != 4 || strings.Contains(mine.stdout, `"type":"server_started"`) {
		t.Fatalf("dump --user local: %d lines: %s", n, mine.stdout)
	}
	if r := run(t, in.env(), "", "journal", "dump", "--user", "nobody"); r.code != 0 || r.stdout != "" {
		t.Fatalf("dump --user nobody: %d %q", r.code, r.stdout)
	}
	table := run(t, in.env(), "", "journal", "dump", "--format", "table", "--type", "tool_call")
	if table.code != 0 || !strings.Contains(table.stdout, "tool_call") || strings.Contains(table.stdout, "server_started") {
		t.Fatalf("table dump: %q", table.stdout)
	}

	// Tamper with a byte in the middle of the journal: verify fails with
	// the seq, and serve refuses to start.
	segs, _ := filepath.Glob(filepath.Join(in.home, "journal", "0*"))
	data, _ := os.ReadFile(segs[0])
	i := bytes.Index(data, []byte("read_only"))
	if i < 0 {
		t.Fatal("user_created payload not found in the segment")
	}
	data[i] = 'R'
	os.WriteFile(segs[0], data, 0o600)
	r = run(t, in.env(), "", "journal", "verify", "--expect-head", strings.TrimSpace(head.stdout))
	if r.code != 1 || !strings.Contains(r.stderr, "seq 1") {
		t.Fatalf("verify after tamper: %d %q", r.code, r.stderr)
	}
	r = run(t, in.env(), "", "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot start: journal") || !strings.Contains(r.stderr, "seq 1") || !strings.Contains(r.stderr, "00000000000000000001") {
		t.Fatalf("serve on a damaged journal must name the segment and seq: %d %q", r.code, r.stderr)
	}
}

// A torn last record (a crash mid-write) is cut at start, and the cut is
// journaled.
func TestServeRepairsTornTail(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	if r := run(t, in.env(), "", "admin", "user", "create", "torn"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	segs, _ := filepath.Glob(filepath.Join(in.home, "journal", "0*"))
	last := segs[len(segs)-1]
	st, _ := os.Stat(last)
	if err := os.Truncate(last, st.Size()-7); err != nil {
		t.Fatal(err)
	}
	cs, _ := connectStdio(t, in, "")
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	dump := run(t, in.env(), "", "journal", "dump", "--type", "recovered_torn_tail")
	if strings.Count(dump.stdout, "\n") != 1 || !strings.Contains(dump.stdout, "dropped_bytes") {
		t.Fatalf("recovered_torn_tail: %q", dump.stdout)
	}
	// The torn record (the second user's creation) is gone; the first is kept.
	list := run(t, in.env(), "", "admin", "user", "list")
	if !strings.Contains(list.stdout, "local") || strings.Contains(list.stdout, "torn") {
		t.Fatalf("users after repair: %q", list.stdout)
	}
	if r := run(t, in.env(), "", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify after repair: %d %q", r.code, r.stderr)
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	r := run(t, in.env(), "", "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "all checks passed") {
		t.Fatalf("doctor on a good home: %d %q", r.code, r.stdout)
	}
	os.Chmod(in.key, 0o640)
	r = run(t, in.env(), "", "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "FIX") || !strings.Contains(r.stdout, "chmod 600") {
		t.Fatalf("doctor on an open key: %d %q", r.code, r.stdout)
	}
}

func TestDemo(t *testing.T) {
	t.Parallel()
	r := run(t, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}, "", "demo")
	if r.code != 0 || !strings.Contains(r.stdout, "demo finished") {
		t.Fatalf("demo: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"get_ticker", "invalid_params", "journal verify", "ok: ",
		"resting as Limit GTC (order_status New)", "amended: price", "cancelled (order_status Cancelled)", "order_status Filled, filled 0.001",
		"status pending, confirmation cf_", "the human sees the server's plan: Buy", "client order id gx-cf-", "kill_switch_active", "confirmation_executed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// BenchmarkServeSpawnToToolsList measures process start to the tools/list
// answer over a real stdio pipe; it reports the median.
func BenchmarkServeSpawnToToolsList(b *testing.B) {
	in := newInstall(b)
	var durations []time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "serve")
		cmd.Env = in.env("GX_LOG_LEVEL=warn")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"0"}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`+"\n")
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"id":2`)) {
				break
			}
		}
		durations = append(durations, time.Since(start))
		stdin.Close()
		io.Copy(io.Discard, stdout)
		cmd.Wait()
	}
	b.ReportMetric(float64(median(durations).Microseconds())/1000, "median-ms")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
