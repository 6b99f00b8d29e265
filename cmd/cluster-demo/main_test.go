package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gx and demoBin are the binaries TestMain builds.
var gx, demoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gx-cluster-demo-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gx, demoBin = filepath.Join(dir, "guarded-exchange"), filepath.Join(dir, "cluster-demo")
	for out, pkg := range map[string]string{gx: "../guarded-exchange", demoBin: "."} {
		// The members run protoactor's cluster, whose own data races keep
		// it out of the race detector (docs/decisions.md D160): plain builds.
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, b)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer the child's stderr copier and the test
// may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// printed is what the demo printed, as a client would read it.
type printed struct {
	urls             []string
	token, etcd      string
	data, root, full string
}

func readPrinted(t *testing.T, r io.Reader, stderr *syncBuffer) printed {
	t.Helper()
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var p printed
	timeout := time.After(4 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the demo ended before it was ready:\n%s\n%s", p.full, stderr.String())
			}
			p.full += line + "\n"
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "mcp:":
				p.urls = append(p.urls, f[1])
			case len(f) == 2 && f[0] == "token:":
				p.token = f[1]
			case len(f) == 2 && f[0] == "etcd:":
				p.etcd = f[1]
			case len(f) == 2 && f[0] == "data:":
				p.data = f[1]
			case strings.HasPrefix(line, "Ready."):
				p.root = strings.TrimSuffix(f[len(f)-1], ".")
				go func() {
					for range lines {
					}
				}()
				return p
			}
		case <-timeout:
			t.Fatalf("the demo was not ready within 4 minutes:\n%s\n%s", p.full, stderr.String())
		}
	}
}

// The demo end to end: three members come up on one etcd with the
// simulator; the printed token works through every printed URL (the
// printed curl call: get_my_policy answers for the demo user); cluster
// status sees the three members; Ctrl-C stops every process and removes
// the demo's directory.
func TestClusterDemo(t *testing.T) {
	cmd := exec.Command(demoBin, "--bin", gx)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
		}
	}()
	p := readPrinted(t, stdout, &stderr)
	if len(p.urls) != 3 || p.token == "" || p.etcd == "" || p.data == "" || p.root == "" {
		t.Fatalf("the printout lacks URLs, token, etcd or data:\n%s", p.full)
	}
	if !strings.Contains(p.full, "curl -sS "+p.urls[2]) || !strings.Contains(p.full, "Bearer "+p.token) {
		t.Fatalf("no curl line with the token:\n%s", p.full)
	}
	for _, u := range p.urls {
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_my_policy","arguments":{},"_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
			`"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"Authorization": "Bearer " + p.token, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "get_my_policy"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `\"user\":\"alice\"`) || !strings.Contains(string(body), `\"profile\":\"trade\"`) {
			t.Fatalf("get_my_policy through %s: %d %s", u, resp.StatusCode, body)
		}
	}
	out, err := exec.Command(gx, "cluster", "status", "--cluster", "demo", "--cluster-etcd", p.etcd, "--cluster-data", p.data, "--format", "json").Output()
	if err != nil {
		t.Fatalf("cluster status: %v", err)
	}
	var st struct {
		ShardCount *int `json:"shard_count"`
		Members    []struct {
			Address string `json:"address"`
		} `json:"members"`
		Shards []struct {
			Owned bool `json:"owned"`
			Users *int `json:"users"`
		} `json:"shards"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	users := 0
	for _, s := range st.Shards {
		if s.Users != nil {
			users += *s.Users
		}
	}
	if len(st.Members) != 3 || st.ShardCount == nil || *st.ShardCount != 6 || users < 1 {
		t.Fatalf("cluster status: %d members, count %v, %d users:\n%s", len(st.Members), st.ShardCount, users, out)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("the demo exited with %v after Ctrl-C:\n%s", waitErr, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the demo did not stop within a minute of Ctrl-C:\n%s", stderr.String())
	}
	if _, err := os.Stat(p.root); !os.IsNotExist(err) {
		t.Fatalf("the demo's directory %s is still there (%v)", p.root, err)
	}
	for _, u := range p.urls {
		if resp, err := http.Post(u, "application/json", strings.NewReader(`{}`)); err == nil {
			resp.Body.Close()
			t.Fatalf("%s still answers after Ctrl-C", u)
		}
	}
}
