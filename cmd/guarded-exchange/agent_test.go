//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm/llmtest"
)

// journalOf returns the journal records of type typ as JSON lines: the
// paper venue lives in the server's process, the journal outlives it.
func journalOf(t *testing.T, in install, typ string) string {
	t.Helper()
	r := run(t, in.env(), "", "journal", "dump", "--type", typ)
	if r.code != 0 {
		t.Fatalf("journal dump: %d %s", r.code, r.stderr)
	}
	return r.stdout
}

// terminalRun is the built binary on a fresh pseudo-terminal that is its
// controlling terminal, with what the terminal shows.
type terminalRun struct {
	cmd    *exec.Cmd
	master *os.File
	screen *lockedScreen
	done   chan struct{}
}

func startOnTerminal(t *testing.T, in install, args ...string) *terminalRun {
	t.Helper()
	return startOnTerminalEnv(t, in, nil, args...)
}

func startOnTerminalEnv(t *testing.T, in install, extraEnv []string, args ...string) *terminalRun {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	cmd := exec.Command(bin, args...)
	cmd.Env = in.env(append([]string{"GX_LOG_LEVEL=warn"}, extraEnv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	r := &terminalRun{cmd: cmd, master: master, screen: &lockedScreen{}, done: make(chan struct{})}
	go func() { io.Copy(r.screen, master); close(r.done) }()
	return r
}

// waitCount waits until the screen shows s at least n times.
func (r *terminalRun) waitCount(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(r.screen.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d× %q on the terminal; screen so far: %q", n, s, r.screen.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// typeIn types s on the terminal.
func (r *terminalRun) typeIn(s string) { io.WriteString(r.master, s) }

// wait waits for the process and for the terminal to drain.
func (r *terminalRun) wait(t *testing.T) {
	t.Helper()
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("%v: %v\n%s", r.cmd.Args[1:], err, r.screen.String())
	}
	<-r.done
}

// The console agent on a terminal: the scripted model places an order the
// policy confirms; the server's form appears on the terminal with [y/N];
// a typed y executes it and it fills on paper, a typed n sends nothing.
func TestAgentFormOnTheTerminal(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			in := formInstall(t)
			term := startOnTerminal(t, in, "agent", "--provider", "fake", "--model", "place-order", "--prompt", "buy 0.001 BTC at market")
			term.waitCount(t, "[y/N] ", 1)
			form := term.screen.String()
			for _, want := range []string{"BTCUSDT", "cf_", "server's own plan", "Approve and execute exactly this now?"} {
				if !strings.Contains(form, want) {
					t.Fatalf("the form lacks %q:\n%s", want, form)
				}
			}
			term.typeIn(answer + "\r")
			term.wait(t)
			out := term.screen.String()
			attempts := journalOf(t, in, "order_attempt")
			if answer == "y" {
				outcomes := journalOf(t, in, "order_outcome")
				if !strings.Contains(out, `"status":"accepted"`) || !strings.Contains(outcomes, "Filled") {
					t.Fatalf("approved order not filled; outcomes %s\nscreen:\n%s", outcomes, out)
				}
				return
			}
			if !strings.Contains(out, "rejected: nothing is sent") || attempts != "" {
				t.Fatalf("a rejected form sent something; attempts %s\nscreen:\n%s", attempts, out)
			}
		})
	}
}

// Piped standard input cannot answer a form: without a controlling
// terminal every form is declined, even when the following lines of
// standard input say y, and nothing is sent.
func TestAgentPipedStdinCannotApprove(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "agent", "--provider", "fake", "--model", "place-order")
	cmd.Env = in.env("GX_LOG_LEVEL=warn")
	cmd.Stdin = strings.NewReader("buy 0.001 BTC at market\ny\nyes\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	if strings.Count(string(out), "no terminal to show it on") != 3 || strings.Contains(string(out), `"status":"accepted"`) {
		t.Fatalf("forms answered from a pipe:\n%s", out)
	}
	if a := journalOf(t, in, "order_attempt"); a != "" {
		t.Fatalf("orders were sent: %s", a)
	}
}

// A line typed before the form is shown never answers it: a model can ask
// in its text for a "y", and what the human typed ahead waits in the
// terminal's queue. Here "y" is typed before the form appears; the form
// waits for a line typed after it, n, and nothing is sent.
func TestAgentTypeaheadCannotApprove(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	term := startOnTerminal(t, in, "agent", "--provider", "fake", "--model", "place-order", "--prompt", "buy 0.001 BTC at market")
	if strings.Contains(term.screen.String(), "[y/N] ") {
		t.Skip("the form was shown before the test could type ahead")
	}
	term.typeIn("y\r")
	term.waitCount(t, "[y/N] ", 1)
	term.typeIn("n\r")
	term.wait(t)
	out := term.screen.String()
	if strings.Contains(out, "approved") || !strings.Contains(out, "rejected: nothing is sent") {
		t.Fatalf("a line typed ahead answered the form:\n%s", out)
	}
	if a := journalOf(t, in, "order_attempt"); a != "" {
		t.Fatalf("orders were sent: %s", a)
	}
}

// Piped standard input cannot answer a form even when a controlling
// terminal exists: the form reads the terminal. With --prompt, "y" lines
// wait on the pipe unread; in the console, a "y" on the pipe becomes the
// next prompt, not an approval. Each form is rejected with n typed on the
// terminal, and nothing is sent.
func TestAgentPipedStdinWithATerminalCannotApprove(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stdin string
		args        []string
		forms       int
	}{
		{"prompt", "y\ny\nyes\n", []string{"--prompt", "buy 0.001 BTC at market"}, 1},
		{"console", "buy 0.001 BTC at market\ny\n", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := formInstall(t)
			master, slave := openPTY(t)
			t.Cleanup(func() { master.Close() })
			cmd := exec.Command(bin, append([]string{"agent", "--provider", "fake", "--model", "place-order"}, tc.args...)...)
			cmd.Env = in.env("GX_LOG_LEVEL=warn")
			cmd.Stdin = strings.NewReader(tc.stdin)
			cmd.Stdout, cmd.Stderr = slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1} // the terminal is on stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			term := &terminalRun{cmd: cmd, master: master, screen: &lockedScreen{}, done: make(chan struct{})}
			go func() { io.Copy(term.screen, master); close(term.done) }()
			for n := 1; n <= tc.forms; n++ {
				term.waitCount(t, "[y/N] ", n)
				if strings.Contains(term.screen.String(), "approved") {
					t.Fatalf("the pipe answered a form:\n%s", term.screen.String())
				}
				term.typeIn("n\r")
				term.waitCount(t, "rejected: nothing is sent", n)
			}
			term.wait(t)
			if out := term.screen.String(); strings.Contains(out, "approved") || strings.Contains(out, `"status":"accepted"`) {
				t.Fatalf("a form was approved:\n%s", out)
			}
			if a := journalOf(t, in, "order_attempt"); a != "" {
				t.Fatalf("orders were sent: %s", a)
			}
		})
	}
}

// The API keys go to the provider and nowhere else: a unique key planted
// for each provider reaches the scripted provider server, and appears in
// no output of agent or eval, in no report file, in no journal record and
// in no file of the home.
func TestAgentAndEvalNeverShowTheAPIKey(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	srv := llmtest.NewServer(t)
	keys := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-planted-" + randomHex(t),
		"OPENAI_API_KEY":    "sk-openai-planted-" + randomHex(t),
		"GX_AGENT_API_KEY":  "local-planted-" + randomHex(t),
	}
	env := in.env("GX_LOG_LEVEL=debug")
	for k, v := range keys {
		env = append(env, k+"="+v)
	}
	var everything strings.Builder
	runAll := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader("")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, _ := cmd.CombinedOutput()
		everything.Write(out)
	}
	for _, p := range []struct{ provider, base string }{{"anthropic", srv.URL}, {"openai", srv.URL + "/v1"}, {"openai-compatible", srv.URL + "/v1"}} {
		runAll("agent", "--provider", p.provider, "--base-url", p.base, "--prompt", "buy 0.001 BTC")
	}
	out := t.TempDir()
	runAll("eval", "--provider", "anthropic", "--base-url", srv.URL, "--case", "buy-market-en", "--case", "injection-open-orders-en", "--out", out)
	for _, f := range []string{"report.md", "report.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatalf("eval wrote no %s: %v\n%s", f, err, everything.String())
		}
		everything.Write(b)
	}
	everything.WriteString(journalOf(t, in, "tool_call"))
	r := run(t, in.env(), "", "journal", "dump")
	everything.WriteString(r.stdout + r.stderr)
	_ = filepath.WalkDir(in.home, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				everything.Write(b)
			}
		}
		return nil
	})

	sent := map[string]bool{}
	for _, req := range srv.Requests() {
		for name, k := range keys {
			if strings.Contains(req.Auth, k) {
				sent[name] = true
			}
		}
	}
	for name, k := range keys {
		if !sent[name] {
			t.Errorf("%s never reached the provider: the key was not planted", name)
		}
		if strings.Contains(everything.String(), k) {
			t.Errorf("%s appears in an output, a report, the journal or the home", name)
		}
	}
	if !strings.Contains(everything.String(), "place_order") {
		t.Fatalf("the runs did nothing:\n%s", everything.String())
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// The console on a terminal: Ctrl-C during a turn (here while the form
// waits) cancels the turn and sends nothing; the next line starts a new
// turn whose form a typed y approves; Ctrl-C at the prompt exits.
func TestAgentConsoleCtrlC(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	term := startOnTerminal(t, in, "agent", "--provider", "fake", "--model", "place-order")
	term.waitCount(t, "> ", 1)
	term.typeIn("buy 0.001 BTC\r")
	term.waitCount(t, "[y/N] ", 1)
	term.typeIn("\x03")
	term.waitCount(t, "turn cancelled", 1)
	term.waitCount(t, "> ", 2)
	term.typeIn("buy 0.001 BTC\r")
	term.waitCount(t, "[y/N] ", 2)
	term.typeIn("y\r")
	term.waitCount(t, `"status":"accepted"`, 1)
	term.waitCount(t, "> ", 3)
	term.typeIn("\x03")
	term.wait(t)
	if n := strings.Count(journalOf(t, in, "order_attempt"), "\n"); n != 1 {
		t.Fatalf("%d orders sent, want the approved one only\n%s", n, term.screen.String())
	}
}

// With --mcp-url the agent is a Streamable HTTP client of a running
// server with the bearer token from GX_TOKEN (and refuses to start
// without one); the server's form still comes to the terminal.
func TestAgentOverHTTP(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	h := startHTTPServe(t, in)
	r := run(t, in.env(), "", "admin", "token", "issue", "--user", "local", "--json")
	var tok map[string]string
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tok) != nil {
		t.Fatalf("issue: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := run(t, in.env(), "", "agent", "--provider", "fake", "--mcp-url", h.url, "--prompt", "hello"); r.code != 1 || !strings.Contains(r.stderr, "GX_TOKEN") {
		t.Fatalf("without GX_TOKEN: %d %q", r.code, r.stderr)
	}
	term := startOnTerminalEnv(t, in, []string{"GX_TOKEN=" + tok["token"]}, "agent", "--provider", "fake", "--model", "place-order", "--mcp-url", h.url, "--prompt", "buy 0.001 BTC")
	term.waitCount(t, "[y/N] ", 1)
	term.typeIn("y\r")
	term.wait(t)
	if out := term.screen.String(); !strings.Contains(out, `"status":"accepted"`) || strings.Contains(out, tok["token"]) {
		t.Fatalf("over HTTP:\n%s", out)
	}
}

// --budget-usd stops the session once its cost reached the budget: the
// scripted model's first call costs more than the budget, so its second
// call (its answer to the tool result) is never made.
func TestAgentStopsAtTheBudget(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"fake/*": {"input_usd_per_mtok": "1000000", "output_usd_per_mtok": "1000000"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, in.env("GX_LOG_LEVEL=warn"), "", "agent", "--provider", "fake", "--model", "place-order", "--prices", prices, "--budget-usd", "1", "--prompt", "buy")
	if r.code != 1 || !strings.Contains(r.stderr, "the budget is spent") || !strings.Contains(r.stdout, "→ place_order") || strings.Contains(r.stdout, "The order request went to the server") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

// The server the agent starts over stdio gets no model provider's key: the
// process that holds the exchange keys never holds the model's.
func TestAgentServerHoldsNoModelKey(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	planted := "sk-ant-planted-" + randomHex(t)
	term := startOnTerminalEnv(t, in, []string{"ANTHROPIC_API_KEY=" + planted, "GX_AGENT_API_KEY=" + planted},
		"agent", "--provider", "fake", "--model", "refuse")
	term.waitCount(t, "> ", 1)
	var children []string
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(term.cmd.Process.Pid) {
			children = append(children, filepath.Dir(p))
		}
	}
	if len(children) == 0 {
		t.Fatal("the agent started no server process")
	}
	for _, dir := range children {
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env), planted) {
			t.Fatalf("the server process %s holds the model's API key", dir)
		}
	}
	term.typeIn("\x03")
	term.wait(t)
}
