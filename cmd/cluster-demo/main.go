package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

const (
	// clusterName is the demo cluster's --cluster.
	clusterName = "demo"
	// demoUser is the user the demo creates and issues the token for.
	demoUser = "alice"
	// readyTimeout bounds the wait for the members to serve.
	readyTimeout = 2 * time.Minute
	// stopTimeout is how long a member gets to stop after SIGTERM.
	stopTimeout = 20 * time.Second
)

type options struct {
	bin            string
	members        int
	shards         int
	exitAfterReady bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/guarded-exchange", "the guarded-exchange binary (make cluster-demo builds it)")
	flag.IntVar(&o.members, "members", 3, "how many members to start")
	flag.IntVar(&o.shards, "shards", 6, "the cluster's number of shards (serve --cluster-shards)")
	flag.BoolVar(&o.exitAfterReady, "exit-after-ready", false, "stop everything and exit once the cluster is up and printed")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, o, os.Stdout, os.Stderr)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil // Ctrl-C during start-up: everything is stopped
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster-demo: %v\n", err)
		os.Exit(1)
	}
}

// proc is one child process: the simulator or a member.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // its stderr (and stdout) file
	done chan struct{}
	err  error
}

// memberProc is a member and its addresses.
type memberProc struct {
	*proc
	home      string
	listen    string // HOST:PORT of its MCP front
	advertise string // HOST:PORT of its cluster remoting
}

// demo is the running cluster; stop undoes whatever was started.
type demo struct {
	o       options
	root    string
	bin     string
	logw    io.Writer
	etcd    *embed.Etcd
	etcdURL string
	sim     *proc
	ann     sim.Announcement
	env     []string
	members []*memberProc

	stopping atomic.Bool
	exited   chan *proc
}

func run(ctx context.Context, o options, out, logw io.Writer) error {
	if o.members < 1 || o.shards < 1 {
		return errors.New("--members and --shards must be at least 1")
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("the binary %s: %v (make cluster-demo builds it; or pass --bin)", o.bin, err)
	}
	// Short names: a member's control and relay sockets live under its
	// home, and a Unix socket path is limited to about 104 bytes (macOS's
	// temporary directory alone is about 50).
	root, err := os.MkdirTemp("", "gxcd-")
	if err != nil {
		return err
	}
	d := &demo{o: o, root: root, bin: bin, logw: logw, exited: make(chan *proc, o.members+1)}
	defer d.stop()

	d.say("starting etcd")
	if err := d.startEtcd(); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	d.say("starting the simulator")
	if err := d.startSim(ctx); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	d.env = childEnv(
		"GX_MASTER_KEY_FILE="+filepath.Join(root, "master.key"),
		"GX_VENUE=bybit-demo",
		"GX_BYBIT_BASE_URL="+d.ann.REST,
		"GX_BYBIT_WS_PRIVATE_URL="+d.ann.WSPrivate,
		"GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true",
	)
	// Every home is initialised with the one master key file: the first
	// init creates it, the others use it.
	for i := range o.members {
		m, err := d.newMember(i)
		if err != nil {
			return err
		}
		d.say("init " + m.name)
		if _, _, err := d.cli(ctx, m.home, "", "init"); err != nil {
			return fmt.Errorf("init %s: %w", m.name, err)
		}
	}
	// The shared data directory must exist before a member starts (the
	// operator's shared volume).
	if err := os.MkdirAll(d.dataDir(), 0o700); err != nil {
		return err
	}
	for _, m := range d.members {
		d.say("starting " + m.name + " (MCP on " + m.listen + ", cluster on " + m.advertise + ")")
		if err := d.startMember(m); err != nil {
			return err
		}
	}
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	token, err := d.createUser(ctx)
	if err != nil {
		return err
	}
	status := d.status(ctx)
	d.print(out, token, status)
	if o.exitAfterReady {
		return nil
	}
	select {
	case <-ctx.Done():
		d.say("stopping")
		return nil
	case p := <-d.exited:
		return fmt.Errorf("%s exited (%v); its log:\n%s", p.name, p.err, tail(p.log))
	}
}

func (d *demo) say(msg string) { fmt.Fprintf(d.logw, "cluster-demo: %s\n", msg) }

// childEnv is this process's environment without any GX_ variable (a
// GX_HOME of the caller must not leak into a member), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GX_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// freeAddr returns 127.0.0.1:PORT for a port free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startEtcd starts a single-member etcd on loopback, its data under the
// demo's directory (the settings of internal/etcdtest).
func (d *demo) startEtcd() error {
	var lastErr error
	for range 5 { // a port picked free may be taken before etcd binds it
		client, err1 := freeAddr()
		peer, err2 := freeAddr()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		cu, _ := url.Parse("http://" + client)
		pu, _ := url.Parse("http://" + peer)
		cfg := embed.NewConfig()
		cfg.Name = "cluster-demo"
		cfg.Dir = filepath.Join(d.root, "etcd")
		cfg.ListenClientUrls = []url.URL{*cu}
		cfg.AdvertiseClientUrls = []url.URL{*cu}
		cfg.ListenPeerUrls = []url.URL{*pu}
		cfg.AdvertisePeerUrls = []url.URL{*pu}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		cfg.ListenMetricsUrls = nil
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err
			os.RemoveAll(cfg.Dir)
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
			d.etcd, d.etcdURL = e, "http://"+client
			return nil
		case err := <-e.Err():
			lastErr = err
		case <-time.After(30 * time.Second):
			lastErr = errors.New("not ready within 30 s")
		}
		e.Close()
		os.RemoveAll(cfg.Dir)
	}
	return lastErr
}

// start starts a child with its output in a log file under the demo's
// directory, in its own process group (the terminal's Ctrl-C reaches
// only the demo, which stops the children in order).
func (d *demo) start(name string, stdout io.Writer, args ...string) (*proc, error) {
	logPath := filepath.Join(d.root, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(d.bin, args...)
	cmd.Env = d.env
	cmd.Stderr = f
	cmd.Stdout = f
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		if c, ok := stdout.(io.Closer); ok {
			c.Close()
		}
		close(p.done)
		if !d.stopping.Load() {
			d.exited <- p
		}
	}()
	return p, nil
}

// startSim runs `guarded-exchange sim` and reads its announcement line,
// then gives the simulator account a balance to trade with.
func (d *demo) startSim(ctx context.Context) error {
	d.env = childEnv()
	r, w := io.Pipe()
	p, err := d.start("sim", w, "sim", "--listen", "127.0.0.1:0")
	if err != nil {
		return err
	}
	d.sim = p
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
		io.Copy(io.Discard, r)
	}()
	select {
	case s := <-line:
		if err := json.Unmarshal([]byte(s), &d.ann); err != nil || d.ann.REST == "" {
			return fmt.Errorf("no announcement line (%q); its log:\n%s", s, tail(p.log))
		}
	case <-time.After(30 * time.Second):
		return errors.New("no announcement within 30 s")
	case <-ctx.Done():
		return ctx.Err()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.ann.REST+"/sim/accounts/"+d.ann.APIKey+"/balances", strings.NewReader(`{"USDT":"100000"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fund the account: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fund the account: HTTP %d", resp.StatusCode)
	}
	return nil
}

func (d *demo) newMember(i int) (*memberProc, error) {
	listen, err1 := freeAddr()
	advertise, err2 := freeAddr()
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	name := "member-" + strconv.Itoa(i+1)
	m := &memberProc{proc: &proc{name: name}, home: filepath.Join(d.root, "m"+strconv.Itoa(i+1)), listen: listen, advertise: advertise}
	d.members = append(d.members, m)
	return m, nil
}

func (d *demo) dataDir() string { return filepath.Join(d.root, "data") }

func (d *demo) startMember(m *memberProc) error {
	p, err := d.start(m.name, nil, "--home", m.home, "serve",
		"--transport", "http", "--listen", m.listen,
		"--cluster", clusterName, "--cluster-etcd", d.etcdURL,
		"--cluster-advertise", m.advertise, "--cluster-data", d.dataDir(),
		"--cluster-shards", strconv.Itoa(d.o.shards))
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

// cli runs one guarded-exchange command with home (or none) and returns
// its stdout and stderr; a non-zero exit is an error carrying stderr.
func (d *demo) cli(ctx context.Context, home, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if home != "" {
		args = append([]string{"--home", home}, args...)
	}
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(se.String()))
	}
	return so.String(), se.String(), err
}

// waitReady waits until every member's MCP front answers (401 without a
// token) and every member is registered in etcd.
func (d *demo) waitReady(ctx context.Context) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{d.etcdURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	d.say("waiting for the members to serve and join")
	for {
		up := 0
		for _, m := range d.members {
			select {
			case <-m.done:
				return fmt.Errorf("%s exited (%v); its log:\n%s", m.name, m.err, tail(m.log))
			default:
			}
			resp, err := hc.Post("http://"+m.listen+"/mcp", "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusUnauthorized {
					up++
				}
			}
		}
		joined := int64(0)
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := c.Get(gctx, member.KeyPrefix+"members/"+clusterName+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err == nil {
			joined = res.Count
		}
		if up == len(d.members) && joined >= int64(len(d.members)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the members did not all serve within %s (%d of %d answer, %d registered in etcd); logs in %s", readyTimeout, up, len(d.members), joined, d.root)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// createUser makes the demo user through the first member's CLI (the
// member routes each command to the user's shard): the user, the
// simulator's key, a ceiling that lets it trade BTCUSDT perpetuals
// without confirmations, and a bearer token. A step that fails while the
// cluster still settles is tried again; a repeat that finds its work done
// counts as done.
func (d *demo) createUser(ctx context.Context) (string, error) {
	home := d.members[0].home
	step := func(what, stdin string, done func(stderr string) bool, args ...string) (string, error) {
		deadline := time.Now().Add(time.Minute)
		for {
			so, se, err := d.cli(ctx, home, stdin, args...)
			if err == nil || (done != nil && done(se)) {
				return so, nil
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return "", fmt.Errorf("%s: %w", what, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	d.say("creating user " + demoUser + " with the simulator's key and a token")
	if _, err := step("create the user", "", func(se string) bool { return strings.Contains(se, "exists") },
		"admin", "user", "create", demoUser); err != nil {
		return "", err
	}
	if _, err := step("add the simulator's key", d.ann.APIKey+"\n"+d.ann.APISecret+"\n", func(se string) bool { return strings.Contains(se, "already") },
		"--user", demoUser, "keys", "add"); err != nil {
		return "", err
	}
	if _, err := step("set the ceiling", "", nil,
		"admin", "policy", "set-ceiling", "--user", demoUser, "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "demo"); err != nil {
		return "", err
	}
	so, err := step("issue a token", "", nil, "admin", "token", "issue", "--user", demoUser, "--json")
	if err != nil {
		return "", err
	}
	var tok struct{ Token string }
	if err := json.Unmarshal([]byte(so), &tok); err != nil || tok.Token == "" {
		return "", fmt.Errorf("issue a token: no token in %q", so)
	}
	return tok.Token, nil
}

// statusArgs is the cluster status command line for this cluster.
func (d *demo) statusArgs() []string {
	return []string{"cluster", "status", "--cluster", clusterName, "--cluster-etcd", d.etcdURL, "--cluster-data", d.dataDir()}
}

// status runs cluster status once, for the printout.
func (d *demo) status(ctx context.Context) string {
	so, _, err := d.cli(ctx, "", "", d.statusArgs()...)
	if err != nil {
		return "(cluster status failed: " + err.Error() + ")\n"
	}
	return so
}

// curlLine is a get_my_policy call over Streamable HTTP (protocol
// 2026-07-28, stateless) with the token.
func curlLine(mcpURL, token string) string {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_my_policy","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}}}}`
	return "curl -sS " + mcpURL +
		` -H "Authorization: Bearer ` + token + `"` +
		` -H "Content-Type: application/json" -H "Accept: application/json, text/event-stream"` +
		` -H "Mcp-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/call" -H "Mcp-Name: get_my_policy"` +
		` -d '` + body + `'`
}

func (d *demo) print(out io.Writer, token, status string) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nguarded-exchange cluster %q: %d members, %d shards\n", clusterName, len(d.members), d.o.shards)
	fmt.Fprintf(&b, "  etcd: %s\n", d.etcdURL)
	fmt.Fprintf(&b, "  simulator: %s\n", d.ann.REST)
	fmt.Fprintf(&b, "  data: %s\n", d.dataDir())
	fmt.Fprintf(&b, "  logs: %s/member-N.log, sim.log\n\n", d.root)
	b.WriteString("MCP URLs (any member takes any token):\n")
	for _, m := range d.members {
		fmt.Fprintf(&b, "  mcp: http://%s/mcp  (%s, home %s)\n", m.listen, m.name, m.home)
	}
	fmt.Fprintf(&b, "\nuser %s on bybit-demo (the simulator, 100000 USDT; profile trade, linear:BTCUSDT, no confirmations)\n", demoUser)
	fmt.Fprintf(&b, "  token: %s\n\n", token)
	first := "http://" + d.members[0].listen + "/mcp"
	b.WriteString("Claude Code:\n")
	fmt.Fprintf(&b, "  claude mcp add --transport http guarded-exchange-demo %s --header \"Authorization: Bearer %s\"\n", first, token)
	b.WriteString("curl (get_my_policy through the last member):\n")
	fmt.Fprintf(&b, "  %s\n\n", curlLine("http://"+d.members[len(d.members)-1].listen+"/mcp", token))
	fmt.Fprintf(&b, "%s %s\n", d.bin, strings.Join(d.statusArgs(), " "))
	b.WriteString(status)
	fmt.Fprintf(&b, "\nReady. Ctrl-C stops the members, the simulator and etcd and removes %s.\n", d.root)
	io.WriteString(out, b.String())
}

// stop stops the members (SIGTERM, then SIGKILL after stopTimeout), the
// simulator and etcd, and removes the demo's directory.
func (d *demo) stop() {
	d.stopping.Store(true)
	var wg sync.WaitGroup
	for _, m := range d.members {
		if m.cmd == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			terminate(m.proc, stopTimeout)
		}()
	}
	wg.Wait()
	if d.sim != nil {
		terminate(d.sim, 5*time.Second)
	}
	if d.etcd != nil {
		d.etcd.Close()
	}
	if err := os.RemoveAll(d.root); err != nil {
		d.say("could not remove " + d.root + ": " + err.Error())
		return
	}
	d.say("stopped; removed " + d.root)
}

func terminate(p *proc, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last lines of a log file.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
