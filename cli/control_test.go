package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A server that refuses a peer answers with one line and closes before
// reading the request: the client's write then fails, and it reports the
// server's refusal, not the broken pipe.
func TestSendReportsARefusalSentBeforeTheRequest(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "control.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := json.Marshal(messages.ControlResponse{V: messages.ControlVersion, Error: &messages.Error{Code: messages.CodePermissionDenied, Message: "this uid may not use the control socket"}})
		c.Write(append(b, '\n'))
		c.Close()
		close(closed)
	}()
	client, err := DialControl(context.Background(), sock, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	<-closed
	_, err = client.Send(context.Background(), &messages.ShowPolicyRequest{User: "local"})
	var e *messages.Error
	if !errors.As(err, &e) || e.Code != messages.CodePermissionDenied {
		t.Fatalf("Send after a refusal: %v", err)
	}
}

// An answer of another protocol version is not trusted.
func TestSendRefusesAnotherVersion(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "control.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.Read(buf)
		c.Write([]byte(`{"v":2,"ok":true,"result":{}}` + "\n"))
	}()
	client, err := DialControl(context.Background(), sock, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Send(context.Background(), &messages.ShowPolicyRequest{User: "local"}); err == nil || !strings.Contains(err.Error(), "protocol version 2") {
		t.Fatalf("an answer of version 2: %v", err)
	}
}

// Key commands go only to a server of the caller's own uid: to a listener
// of another uid (an approver's server) Send writes nothing and says why.
// Other commands do go through.
func TestSendKeepsKeyCommandsForTheOwnUID(t *testing.T) {
	self := uint32(os.Getuid())
	ours, theirs := net.Pipe()
	defer theirs.Close()
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := theirs.Read(buf)
		got <- buf[:n]
		theirs.Write([]byte(`{"v":1,"id":"1","ok":true,"result":{}}` + "\n"))
	}()
	c := &ControlClient{conn: ours, r: bufio.NewReader(ours), path: "/run/gx/control.sock", peer: self + 1, self: self}
	defer c.Close()
	_, err := c.Send(context.Background(), &messages.AddCredentialRequest{User: "local", Environment: "bybit-demo", APIKey: "KEY", APISecret: messages.NewSecret("SECRET")})
	if err == nil || !strings.Contains(err.Error(), "/run/gx/control.sock") || !strings.Contains(err.Error(), "key commands go only to a server of your own uid") {
		t.Fatalf("keys.add to another uid: %v", err)
	}
	if _, err := c.Send(context.Background(), &messages.ShowPolicyRequest{User: "local"}); err != nil {
		t.Fatalf("policy.show to another uid: %v", err)
	}
	if line := <-got; !strings.Contains(string(line), `"type":"policy.show"`) {
		t.Fatalf("the first bytes written were %q", line)
	}
}

// A prompt left open does not keep its connection: after holdMax, Hold
// closes it (the server sees it end, and the uid's slot is free again for
// a `kill-switch on` from another terminal), and release says so, so the
// caller dials again for the decision.
func TestHoldGivesTheConnectionUpAfterHoldMax(t *testing.T) {
	defer func(d time.Duration) { holdMax = d }(holdMax)
	holdMax = 200 * time.Millisecond
	sock := filepath.Join(t.TempDir(), "control.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ended := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(io.Discard, c) // blank lines until the client closes
		close(ended)
	}()
	client, err := DialControl(context.Background(), sock, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	release := client.Hold()
	select {
	case <-ended:
	case <-time.After(15 * time.Second):
		t.Fatal("the held connection was still open long after holdMax")
	}
	if err := release(); !errors.Is(err, errHoldEnded) {
		t.Fatalf("release after holdMax = %v, want errHoldEnded", err)
	}
}
