//go:build linux

package main

import (
	"io"
	"os/exec"
	"strings"
	"testing"
)

// On a terminal, paper reset shows what will be lost and asks: "n" keeps
// the account, "y" resets it.
func TestPaperResetAsksOnATerminal(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	paperCeiling(t, in, "none")
	cs, _ := startServe(t, in)
	placeOrder(t, cs, restingBuy)
	cs.Close()
	answer := func(reply string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, "paper", "reset")
		cmd.Env = in.env("GX_LOG_LEVEL=warn")
		master, screen, waitFor, done := startOnPTY(t, cmd)
		waitFor("[y/N]")
		io.WriteString(master, reply+"\r")
		err := cmd.Wait()
		<-done
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return screen.String(), code
	}
	out, code := answer("n")
	if code != 1 || !strings.Contains(out, "open orders: 1") || !strings.Contains(out, "balance USDT") {
		t.Fatalf("answered no: %d %q", code, out)
	}
	if paperResets(t, in) != 0 || freshPaper(t, in) {
		t.Fatal("a reset answered no changed something")
	}
	if out, code = answer("y"); code != 0 || !strings.Contains(out, "reset to 10000 USDT") {
		t.Fatalf("answered yes: %d %q", code, out)
	}
	if paperResets(t, in) != 1 || !freshPaper(t, in) {
		t.Fatal("the reset answered yes did not start the account over")
	}
}
