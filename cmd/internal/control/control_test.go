package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseApproverUIDs(t *testing.T) {
	if got, err := ParseApproverUIDs(" 1000, 1001 ,1000"); err != nil || len(got) != 2 || got[1] != 1001 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"root", "-1", "1000;1001", "99999999999"} {
		if _, err := ParseApproverUIDs(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestSocketPath(t *testing.T) {
	if p, err := SocketPath("/h", env()); err != nil || p != "/h/run/control.sock" {
		t.Fatalf("default: %q %v", p, err)
	}
	if p, err := SocketPath("/h", env(EnvSocket, "/run/gx//control.sock")); err != nil || p != "/run/gx/control.sock" {
		t.Fatalf("explicit: %q %v", p, err)
	}
	for _, bad := range []string{"run/control.sock", "/" + strings.Repeat("a", 120), "/" + strings.Repeat("a", 97) + "/c.sock"} {
		if _, err := SocketPath("/h", env(EnvSocket, bad)); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestResolveLayout(t *testing.T) {
	// The server's own uid in the list is no approver: the socket may stay
	// in the home.
	l, err := ResolveLayout("/h", 1000, env(EnvApprovers, "1000"))
	if err != nil || l.Shared() || l.Explicit || l.SocketMode() != 0o600 || l.Dir != "/h/run" {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ResolveLayout("/h", 1000, env(EnvApprovers, "1001")); err == nil || !strings.Contains(err.Error(), EnvSocket) {
		t.Fatalf("approvers without %s: %v", EnvSocket, err)
	}
	if _, err := ResolveLayout("/h", 1000, env(EnvApprovers, "1001", EnvSocket, "/h/x/control.sock")); err == nil || !strings.Contains(err.Error(), "outside the home") {
		t.Fatalf("socket in the home with approvers: %v", err)
	}
	l, err = ResolveLayout("/h", 1000, env(EnvApprovers, "1001,1000", EnvSocket, "/run/gx/control.sock"))
	if err != nil || !l.Shared() || !l.Explicit || l.SocketMode() != 0o666 || len(l.Approvers) != 1 || l.Dir != "/run/gx" {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ResolveLayout("/h", 1000, env(EnvApprovers, "x")); err == nil {
		t.Fatal("a bad uid list resolved")
	}
}

func TestCheckDir(t *testing.T) {
	self := uint32(os.Getuid())
	dir := filepath.Join(t.TempDir(), "ctl")
	l := Layout{Path: filepath.Join(dir, SocketName), Dir: dir, Explicit: true, Self: self, Approvers: []uint32{self + 1}}
	if err := l.CheckDir(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	if err := l.prepareDir(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o711 {
		t.Fatalf("created with %v", st.Mode().Perm())
	}
	for mode, want := range map[os.FileMode]string{0o711: "", 0o755: "", 0o700: "chmod 711", 0o733: "writable by others", 0o775: "writable by others"} {
		os.Chmod(dir, mode)
		err := l.CheckDir()
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Fatalf("mode %04o: %v, want %q", mode, err, want)
		}
	}
	// Without approvers a private directory is right.
	os.Chmod(dir, 0o700)
	if err := (Layout{Dir: dir, Explicit: true, Self: self}).CheckDir(); err != nil {
		t.Fatal(err)
	}
	// In the home, run/ is 0700 and nothing else.
	os.Chmod(dir, 0o711)
	if err := (Layout{Dir: dir, Self: self}).CheckDir(); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Fatalf("run/ 0711: %v", err)
	}
}

// TestCheckDirFollowsNoLink: a link as the socket's directory, or above
// it, is refused by CheckDir, by prepareDir (which creates nothing through
// it) and by ServerUID, the CLI's check.
func TestCheckDirFollowsNoLink(t *testing.T) {
	self := uint32(os.Getuid())
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o711)
	os.Symlink(real, filepath.Join(base, "link"))
	os.Symlink(base, filepath.Join(base, "uplink"))
	// The socket's directory is a link; a directory above it is one.
	for dir, link := range map[string]string{filepath.Join(base, "link"): filepath.Join(base, "link"), filepath.Join(base, "uplink", "real"): filepath.Join(base, "uplink")} {
		l := Layout{Path: filepath.Join(dir, SocketName), Dir: dir, Explicit: true, Self: self, Approvers: []uint32{self + 1}}
		for name, check := range map[string]func() error{"CheckDir": l.CheckDir, "prepareDir": l.prepareDir, "ServerUID": func() error { _, err := l.ServerUID(); return err }} {
			if err := check(); err == nil || !strings.Contains(err.Error(), link+" is a symbolic link") {
				t.Fatalf("%s on %s: %v", name, dir, err)
			}
		}
	}
	if ents, _ := os.ReadDir(real); len(ents) != 0 {
		t.Fatalf("prepareDir created %v through a link", ents)
	}
	// run/ in the home may not be a link either.
	home := filepath.Join(base, "home")
	os.Mkdir(home, 0o700)
	os.Symlink(real, filepath.Join(home, RunDirName))
	l := Layout{Dir: filepath.Join(home, RunDirName), Self: self}
	if err := l.prepareDir(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("prepareDir on a linked run/: %v", err)
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o711 {
		t.Fatalf("prepareDir changed the mode through the link to %04o", st.Mode().Perm())
	}
}

// TestCheckDirWalksTheParents: every directory above the socket's belongs
// to root or the server's uid and, unless sticky, nobody else may write
// it. An approver trusts the owner of a directory only root could have
// placed: not one in a sticky directory like /tmp, where anybody may make
// one. Needs root, to hand directories to other uids.
func TestCheckDirWalksTheParents(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give directories to other uids; CI runs as root")
	}
	const srv, other = 65534, 4243
	base, err := os.MkdirTemp("", "gx-walk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	mk := func(dir string, mode os.FileMode, uid int) {
		os.MkdirAll(dir, 0o700)
		os.Chmod(dir, mode)
		os.Chown(dir, uid, uid)
	}
	check := func(name, dir string, l Layout, wantServe, wantClient string, wantUID uint32) {
		t.Helper()
		l.Path, l.Dir, l.Explicit = filepath.Join(dir, SocketName), dir, true
		if err := l.CheckDir(); (wantServe == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), wantServe) {
			t.Errorf("%s: CheckDir: %v, want %q", name, err, wantServe)
		}
		cl := Layout{Path: l.Path, Dir: dir, Explicit: true, Self: other}
		uid, err := cl.ServerUID()
		if (wantClient == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), wantClient) || err == nil && uid != wantUID {
			t.Errorf("%s: ServerUID for uid %d: %d %v, want %d %q", name, other, uid, err, wantUID, wantClient)
		}
	}
	srvLayout := Layout{Self: srv, Approvers: []uint32{other}}

	// The server's directory in a root-owned 0755 one: right for all.
	mk(filepath.Join(base, "a", "ctl"), 0o711, srv)
	check("anchored", filepath.Join(base, "a", "ctl"), srvLayout, "", "", srv)
	// Root's throughout: the server is root.
	mk(filepath.Join(base, "r", "ctl"), 0o711, 0)
	check("root", filepath.Join(base, "r", "ctl"), Layout{Self: 0, Approvers: []uint32{other}}, "", "", 0)
	// In a sticky world-writable directory: the server's own socket is
	// safe there, but an approver cannot tell who made the directory.
	mk(filepath.Join(base, "s"), 0o777|os.ModeSticky, 0)
	mk(filepath.Join(base, "s", "ctl"), 0o711, srv)
	check("sticky, no approvers", filepath.Join(base, "s", "ctl"), Layout{Self: srv}, "", "nothing shows that uid 65534 runs the server", 0)
	check("sticky, approvers", filepath.Join(base, "s", "ctl"), srvLayout, "approvers cannot trust", "lies in "+filepath.Join(base, "s")+", which others may write", 0)
	// A parent others may write, not sticky: anybody could swap the
	// directory.
	mk(filepath.Join(base, "w", "ctl"), 0o711, srv)
	os.Chmod(filepath.Join(base, "w"), 0o777)
	check("open parent", filepath.Join(base, "w", "ctl"), srvLayout, filepath.Join(base, "w")+" is writable by others", "is writable by others", 0)
	// A group-writable parent is as open.
	mk(filepath.Join(base, "g", "ctl"), 0o711, srv)
	os.Chmod(filepath.Join(base, "g"), 0o775)
	check("group-writable parent", filepath.Join(base, "g", "ctl"), srvLayout, "is writable by others", "is writable by others", 0)
	// A third uid's directory on the path.
	mk(filepath.Join(base, "x", "ctl"), 0o711, srv)
	os.Chown(filepath.Join(base, "x"), other, other)
	os.Chmod(filepath.Join(base, "x"), 0o755)
	check("two owners", filepath.Join(base, "x", "ctl"), srvLayout, "may pass from root to one other uid only", "may pass from root to one other uid only", 0)
	// Another uid's directory, however placed, is not the server's.
	mk(filepath.Join(base, "o", "ctl"), 0o711, other)
	check("another owner", filepath.Join(base, "o", "ctl"), srvLayout, "belongs to uid 4243; it must belong to the server's uid 65534 or root", "", other)
}

// TestTally: the first refusal of a uid is reported at once, the rest of
// an interval as one report with their count; a uid quiet for an interval
// starts over; close reports what is left.
func TestTally(t *testing.T) {
	var mu sync.Mutex
	var got []string
	tl := newTally(time.Hour, func(uid int64, pid int32, count int) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%d:%d", uid, count))
		mu.Unlock()
	})
	for range 1000 {
		tl.add(7, 1)
	}
	tl.add(8, 2)
	tl.mu.Lock()
	tl.flush() // an interval ends
	tl.flush() // a quiet interval: both uids are forgotten
	tl.mu.Unlock()
	tl.add(7, 3)
	tl.add(7, 3)
	tl.close()
	tl.add(7, 4) // after close: ignored
	want := []string{"7:1", "8:1", "7:999", "7:1", "7:1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("reports %v, want %v", got, want)
	}
}

// TestTallyBoundsUIDs: beyond maxTrackedUIDs, refusals are counted under
// one more entry, uid -1, so the map cannot grow without bound.
func TestTallyBoundsUIDs(t *testing.T) {
	var n, counted int
	tl := newTally(time.Hour, func(uid int64, _ int32, count int) { n++; counted += count })
	for uid := range int64(maxTrackedUIDs + 500) {
		tl.add(uid, 0)
	}
	tl.mu.Lock()
	tracked := len(tl.counts)
	tl.mu.Unlock()
	tl.close()
	if tracked != maxTrackedUIDs+1 || counted != maxTrackedUIDs+500 {
		t.Fatalf("tracked %d uids, counted %d refusals", tracked, counted)
	}
}

// testServer runs a Server on a real journal and actor system, with one
// user "local".
func testServer(t *testing.T, l Layout, limits Limits) (*Server, func() []wal.Record) {
	t.Helper()
	return testServerTB(t, l, limits)
}

func testServerTB(t testing.TB, l Layout, limits Limits) (*Server, func() []wal.Record) {
	t.Helper()
	dir := t.TempDir()
	stack := testkit.Start(t, testkit.Options{NoVenue: true, Dir: filepath.Join(dir, "journal"), Users: []string{"local"}})
	sys := stack.Sys
	if l.Path == "" {
		l.Dir = filepath.Join(dir, "run")
		l.Path = filepath.Join(l.Dir, SocketName)
	}
	s, err := Listen(l, sys, nil, limits)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() []wal.Record {
		if !stopped {
			stopped = true
			s.Close()
			stack.Stop()
		}
		var recs []wal.Record
		if err := wal.Scan(filepath.Join(dir, "journal"), func(r wal.Record) error {
			if r.Type == uint16(messages.RecordControlRefused) {
				recs = append(recs, r)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return recs
	}
	t.Cleanup(func() { stop() })
	return s, stop
}

func ask(t *testing.T, c net.Conn, r *bufio.Reader, line string) messages.ControlResponse {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	raw, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var resp messages.ControlResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestSlotsAndIdle: a uid holding all its slots is refused at once with
// rate_limited; a slot frees when a connection closes, or when it sat
// idle for Limits.Idle.
func TestSlotsAndIdle(t *testing.T) {
	s, _ := testServer(t, Layout{Self: uint32(os.Getuid())}, Limits{OwnerConns: 2, Idle: 300 * time.Millisecond})
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("unix", s.Path())
		if err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	a, ar := dial()
	b, br := dial()
	if resp := ask(t, a, ar, `{"v":1,"type":"policy.show","body":{"user":"local"}}`); !resp.OK {
		t.Fatalf("%+v", resp.Error)
	}
	c, cr := dial()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := cr.ReadBytes('\n')
	var resp messages.ControlResponse
	json.Unmarshal(raw, &resp)
	if err != nil || resp.Error == nil || resp.Error.Code != messages.CodeRateLimited || resp.V != messages.ControlVersion {
		t.Fatalf("third connection: %q %v", raw, err)
	}
	if _, err := cr.ReadByte(); err != io.EOF {
		t.Fatalf("the refused connection stays open: %v", err)
	}
	c.Close()
	// b never sends: the server closes it after Idle.
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v", err)
	}
	b.Close()
	// a went idle too: wait until the server has closed it (it frees the
	// slot before it closes), so the next dials do not race its release.
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := ar.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection a: %v", err)
	}
	a.Close()
	// Both slots come back.
	for range 2 {
		d, dr := dial()
		if resp := ask(t, d, dr, `{"v":1,"type":"policy.show","body":{"user":"local"}}`); !resp.OK {
			t.Fatalf("after the slots freed: %+v", resp.Error)
		}
		defer d.Close()
	}
}

// TestRefusedPeerTakesNoSlotAndIsCounted: a peer whose uid is not allowed
// (the server here pretends to run as another uid) is answered and closed
// at once; a thousand of them leave no connection behind and become two
// control_refused records that count them all.
func TestRefusedPeerTakesNoSlotAndIsCounted(t *testing.T) {
	s, stop := testServer(t, Layout{Self: uint32(os.Getuid()) + 1}, Limits{OwnerConns: 1})
	const n = 1000
	for i := range n {
		c, err := net.Dial("unix", s.Path())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			raw, _ := bufio.NewReader(c).ReadBytes('\n')
			var resp messages.ControlResponse
			json.Unmarshal(raw, &resp)
			if resp.Error == nil || resp.Error.Code != messages.CodePermissionDenied {
				t.Fatalf("refusal: %q", raw)
			}
		}
		c.Close()
	}
	// The next peer in the queue is accepted only after every refusal
	// before it was counted.
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.mu.Lock()
	held, open := len(s.held), len(s.conns)
	s.mu.Unlock()
	if held != 0 || open != 0 {
		t.Fatalf("refused peers hold %d uids' slots, %d connections", held, open)
	}
	recs := stop()
	total := 0
	for _, r := range recs {
		var p struct {
			PeerUID int64 `json:"peer_uid"`
			Count   int   `json:"count"`
		}
		json.Unmarshal(r.Payload, &p)
		if p.PeerUID != int64(os.Getuid()) {
			t.Fatalf("record for uid %d", p.PeerUID)
		}
		total += p.Count
	}
	if len(recs) != 2 || total != n+1 {
		t.Fatalf("%d records counting %d refusals, want 2 counting %d", len(recs), total, n+1)
	}
}

// TestListenRefusesWhatIsNotItsSocket: a regular file at the path is never
// removed, and a live server's socket is never taken over.
func TestListenRefusesWhatIsNotItsSocket(t *testing.T) {
	s, _ := testServer(t, Layout{Self: uint32(os.Getuid())}, Limits{})
	if _, err := Listen(s.layout, nil, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "another server listens") {
		t.Fatalf("second Listen on a live socket: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "control.sock")
	os.WriteFile(file, []byte("keep"), 0o600)
	l := Layout{Path: file, Dir: dir, Explicit: true, Self: uint32(os.Getuid())}
	os.Chmod(dir, 0o700)
	if _, err := Listen(l, nil, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("the file was touched")
	}
}
