package main

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
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

// The console agent on a terminal: the scripted model places an order the
// policy confirms; the server's form appears on the terminal with [y/N];
// a typed y executes it and it fills on paper, a typed n sends nothing.
func TestAgentFormOnTheTerminal(t *testing.T) {
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			in := formInstall(t)
			master, slave := openPTY(t)
			defer master.Close()
			cmd := exec.Command(bin, "agent", "--provider", "fake", "--model", "place-order", "--prompt", "buy 0.001 BTC at market")
			cmd.Env = in.env("GX_LOG_LEVEL=warn")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			screen := &lockedScreen{}
			done := make(chan struct{})
			go func() { io.Copy(screen, master); close(done) }()
			waitFor := func(s string) {
				t.Helper()
				deadline := time.Now().Add(60 * time.Second)
				for !strings.Contains(screen.String(), s) {
					if time.Now().After(deadline) {
						t.Fatalf("no %q on the terminal; screen so far: %q", s, screen.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			waitFor("[y/N] ")
			form := screen.String()
			for _, want := range []string{"BTCUSDT", "cf_", "server's own plan", "Approve and execute exactly this now?"} {
				if !strings.Contains(form, want) {
					t.Fatalf("the form lacks %q:\n%s", want, form)
				}
			}
			io.WriteString(master, answer+"\r")
			if err := cmd.Wait(); err != nil {
				t.Fatalf("agent: %v\n%s", err, screen.String())
			}
			<-done
			out := screen.String()
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
