//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// openPTY allocates a pseudo-terminal with the Linux ptmx interface (no
// dependency for a test helper).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// On a terminal, keys replace prompts on stderr and reads the key and the
// secret without echo: the secret never shows on the screen.
func TestKeysAddOnATerminalDoesNotEcho(t *testing.T) {
	t.Parallel()
	in := newInstall(t)
	paper := sim.New(sim.Config{Seed: 1}).DefaultKey()
	cmd := exec.Command(bin, "keys", "replace")
	cmd.Env = in.env("GX_LOG_LEVEL=warn")
	master, screen, waitFor, done := startOnPTY(t, cmd)
	waitFor("API key: ")
	io.WriteString(master, paper.APIKey+"\r")
	waitFor("API secret: ")
	io.WriteString(master, paper.APISecret+"\r")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("keys replace: %v\n%s", err, screen.String())
	}
	<-done
	out := screen.String()
	if strings.Contains(out, paper.APISecret) || strings.Contains(out, paper.APIKey) {
		t.Fatalf("the terminal echoed the key or the secret: %q", out)
	}
	if !strings.Contains(out, "stored") {
		t.Fatalf("keys replace did not store the key: %q", out)
	}
}

// startOnPTY starts cmd with a new pseudo-terminal as its controlling
// terminal and stdin, stdout and stderr. It returns the terminal's master
// end (write to type), what the terminal shows, a wait for a text to show
// (failing the test after 20 s) and a channel closed when the terminal
// closed.
func startOnPTY(t *testing.T, cmd *exec.Cmd) (master *os.File, screen *lockedScreen, waitFor func(string), done <-chan struct{}) {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	screen = &lockedScreen{}
	closed := make(chan struct{})
	go func() { io.Copy(screen, master); close(closed) }()
	waitFor = func(s string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(screen.String(), s) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q on the terminal; screen so far: %q", s, screen.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return master, screen, waitFor, closed
}

// lockedScreen is what the terminal shows, written by one goroutine and
// read by the test.
type lockedScreen struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedScreen) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedScreen) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
