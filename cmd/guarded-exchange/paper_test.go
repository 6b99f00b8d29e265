package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two installations get different random paper keys; re-running init keeps
// the stored one.
func TestInitPaperKeysDiffer(t *testing.T) {
	t.Parallel()
	fingerprint := func(in install, extraEnv ...string) string {
		t.Helper()
		r := run(t, in.env(extraEnv...), "", "keys", "show", "--json")
		var v struct {
			Present     bool   `json:"present"`
			Fingerprint string `json:"fingerprint"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !v.Present || !strings.HasPrefix(v.Fingerprint, "fp_") {
			t.Fatalf("keys show: %q (%v)", r.stdout, err)
		}
		return v.Fingerprint
	}
	a, b := newInstall(t), newInstall(t)
	fa, fb := fingerprint(a), fingerprint(b)
	if fa == fb {
		t.Fatalf("two inits stored the same paper key %s", fa)
	}
	if r := run(t, a.env(), "", "init"); r.code != 0 || !strings.Contains(r.stdout, "paper key already stored") {
		t.Fatalf("re-run: %d %q", r.code, r.stdout)
	}
	if got := fingerprint(a); got != fa {
		t.Fatalf("re-running init changed the paper key: %s -> %s", fa, got)
	}
	// init --user gives a user created later a paper key of its own.
	if r := run(t, a.env("GX_USER=bob"), "", "init"); r.code != 0 || !strings.Contains(r.stdout, "stored the paper key") {
		t.Fatalf("init --user bob: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if fbob := fingerprint(a, "GX_USER=bob"); fbob == fa || fbob == fb {
		t.Fatalf("bob got another installation's or user's paper key %s", fbob)
	}
	// The seed no longer decides the key.
	c := install{home: filepath.Join(t.TempDir(), "home"), key: filepath.Join(t.TempDir(), "master.key")}
	if r := run(t, c.env("GX_PAPER_SEED=1"), "", "init"); r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	if fc := fingerprint(c); fc == fa || fc == fb {
		t.Fatal("GX_PAPER_SEED=1 reproduced another installation's paper key")
	}
}

// serve embeds the paper venue without any port: its process holds no
// listening TCP socket (so no other uid has anything to connect to) and
// no listening Unix socket but the control socket, while get_balances
// still reads the paper wallet. The check is shown to see a port by
// running the standalone simulator, which listens on one.
func TestPaperVenueHasNoPort(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/net/tcp"); err != nil {
		t.Skip("needs /proc")
	}
	in := newInstall(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_balances", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_balances: %v %+v", err, res)
	}
	var bal struct {
		Venue string `json:"venue"`
		Coins []struct {
			Coin          string `json:"coin"`
			WalletBalance string `json:"wallet_balance"`
		} `json:"coins"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &bal); err != nil {
		t.Fatal(err)
	}
	if bal.Venue != "paper" || len(bal.Coins) != 1 || bal.Coins[0].Coin != "USDT" || bal.Coins[0].WalletBalance != "10000" {
		t.Fatalf("paper wallet %+v", bal)
	}
	pid := cmd.Process.Pid
	if tcp := listeningSockets(t, pid, "tcp"); len(tcp) != 0 {
		t.Fatalf("serve listens on TCP: %v", tcp)
	}
	unix := listeningSockets(t, pid, "unix")
	// The control socket and the MCP relay socket are bound under
	// temporary names in run/ and renamed into place; /proc shows the
	// names they were bound under.
	if len(unix) != 2 || filepath.Dir(unix[0]) != filepath.Join(in.home, "run") || filepath.Dir(unix[1]) != filepath.Join(in.home, "run") ||
		!slices.ContainsFunc(unix, func(s string) bool { return strings.Contains(filepath.Base(s), "mcp.sock") }) {
		t.Fatalf("serve's listening Unix sockets: %v", unix)
	}

	// The same check sees the standalone simulator's port.
	sim := exec.Command(bin, "sim", "--listen", "127.0.0.1:0", "--seed", "1")
	sim.Env = in.env()
	out, _ := sim.StdoutPipe()
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sim.Process.Kill(); sim.Wait() }()
	var ann struct {
		REST string `json:"rest"`
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := json.Unmarshal([]byte(line), &ann); err != nil {
		t.Fatalf("sim announcement %q: %v", line, err)
	}
	port, _ := strconv.Atoi(ann.REST[strings.LastIndex(ann.REST, ":")+1:])
	if tcp := listeningSockets(t, sim.Process.Pid, "tcp"); len(tcp) != 1 || tcp[0] != "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("the standalone simulator's sockets %v, announced %s", tcp, ann.REST)
	}
}

// listeningSockets lists what process pid listens on: for "tcp" the
// local addresses (IPv4 loopback as a.b.c.d:port, others as /proc shows
// them) from /proc/<pid>/net/tcp and tcp6 in state LISTEN; for "unix" the
// paths from /proc/<pid>/net/unix with the accepting flag. Only sockets
// among the process's open descriptors count.
func listeningSockets(t *testing.T, pid int, kind string) []string {
	t.Helper()
	proc := "/proc/" + strconv.Itoa(pid)
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(proc + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	read := func(file string, each func([]string)) {
		raw, err := os.ReadFile(file)
		if err != nil {
			if os.IsNotExist(err) {
				return
			}
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(raw), "\n")[1:] {
			if f := strings.Fields(l); len(f) > 0 {
				each(f)
			}
		}
	}
	switch kind {
	case "tcp":
		for _, file := range []string{proc + "/net/tcp", proc + "/net/tcp6"} {
			read(file, func(f []string) {
				if len(f) > 9 && f[3] == "0A" && mine[f[9]] {
					out = append(out, procAddr(f[1]))
				}
			})
		}
	case "unix":
		// Num RefCount Protocol Flags Type St Inode [Path]; flag 0x10000
		// is __SO_ACCEPTCON, a listening socket.
		read(proc+"/net/unix", func(f []string) {
			flags, _ := strconv.ParseUint(f[3], 16, 32)
			if len(f) > 6 && flags&0x10000 != 0 && mine[f[6]] {
				path := ""
				if len(f) > 7 {
					path = f[7]
				}
				out = append(out, path)
			}
		})
	}
	return out
}

// procAddr turns /proc's little-endian hex IPv4 "0100007F:1F90" into
// "127.0.0.1:8080"; other forms are returned as they are.
func procAddr(s string) string {
	host, port, ok := strings.Cut(s, ":")
	p, err := strconv.ParseUint(port, 16, 16)
	if !ok || err != nil || len(host) != 8 {
		return s
	}
	v, err := strconv.ParseUint(host, 16, 32)
	if err != nil {
		return s
	}
	return strconv.Itoa(int(v&0xff)) + "." + strconv.Itoa(int(v>>8&0xff)) + "." + strconv.Itoa(int(v>>16&0xff)) + "." + strconv.Itoa(int(v>>24)) + ":" + strconv.Itoa(int(p))
}
