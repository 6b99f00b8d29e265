package app

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/cli"
)

// readKeyOrHang runs readMasterKey with a safety net: a key file that
// blocks the read (a FIFO with no writer) must fail the test, not hang it.
func readKeyOrHang(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	type result struct {
		key []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		k, err := readMasterKey(path)
		done <- result{k, err}
	}()
	select {
	case r := <-done:
		return r.key, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("readMasterKey(%s) did not return", path)
		return nil, nil
	}
}

func TestReadMasterKeyAcceptsOnlyAPrivateRegularFile(t *testing.T) {
	dir := t.TempDir()
	keyHex := strings.Repeat("ab", masterKeySize)
	good := filepath.Join(dir, "master.key")
	if err := os.WriteFile(good, []byte(keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := readKeyOrHang(t, good)
	if err != nil || hex.EncodeToString(key) != keyHex {
		t.Fatalf("good key: %x, %v", key, err)
	}

	mk := func(name string, make func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := mk("fifo.key", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	link := mk("link.key", func(p string) error { return os.Symlink(good, p) })
	dangling := mk("dangling.key", func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) })
	subdir := mk("dir.key", func(p string) error { return os.Mkdir(p, 0o700) })
	big := mk("big.key", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat(keyHex+"\n", 100)), 0o600) })
	readable := mk("readable.key", func(p string) error { return writeMode(p, keyHex, 0o640) })
	writable := mk("writable.key", func(p string) error { return writeMode(p, keyHex, 0o620) })
	notHex := mk("nothex.key", func(p string) error { return os.WriteFile(p, []byte("correct horse battery staple\n"), 0o600) })
	sock := filepath.Join(dir, "sock.key")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(sock, 0o600)

	for _, c := range []struct {
		name, path string
		want       []string // all must appear in the error
	}{
		{"FIFO", fifo, []string{fifo, "not a regular file", "FIFO"}},
		{"symlink to a good key", link, []string{link, "symbolic link", good}},
		{"dangling symlink", dangling, []string{dangling, "symbolic link"}},
		{"directory", subdir, []string{subdir, "not a regular file", "directory"}},
		{"socket", sock, []string{sock, "not a regular file", "socket"}},
		{"character device", "/dev/zero", []string{"/dev/zero", "not a regular file", "character device"}},
		{"too large", big, []string{big, "too large"}},
		{"group-readable", readable, []string{readable, "readable by others", "chmod 600 " + readable}},
		{"group-writable", writable, []string{writable, "writable", "chmod 600 " + writable}},
		{"not a hex key", notHex, []string{notHex, "not a 256-bit hex key"}},
		{"missing", filepath.Join(dir, "absent.key"), []string{"absent.key", "missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, err := readKeyOrHang(t, c.path)
			if err == nil {
				t.Fatalf("accepted as a key: %x", key)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "horse") || strings.Contains(err.Error(), keyHex) {
				t.Fatalf("error %q echoes the file's contents", err)
			}
		})
	}
}

func writeMode(p, content string, mode os.FileMode) error {
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

// readWithin gives up on a read that does not finish in time. A pipe
// stands in for a file system that does not answer.
func TestReadWithinGivesUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	if _, err := readWithin(r, 10, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("readWithin on a silent pipe = %v", err)
	}
	r2, w2, _ := os.Pipe()
	defer r2.Close()
	w2.WriteString("0123456789ABC")
	w2.Close()
	if _, err := readWithin(r2, 10, 5*time.Second); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("readWithin over the limit = %v", err)
	}
}

func TestCheckHomeDirs(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "my home") // a space: the fix must quote it
	p := paths{Home: home}
	for _, d := range []string{home, p.journal(), p.run()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkHomeDirs(p); err != nil {
		t.Fatalf("private home refused: %v", err)
	}
	for _, c := range []struct {
		name string
		dir  string
		mode os.FileMode
		want string // "" means accepted
	}{
		{"world-writable home", home, 0o777, "home " + home + " is writable by others (mode 0777); run chmod 700 '" + home + "'"},
		{"group-writable home", home, 0o770, "is writable by its group (mode 0770); run chmod 700 '" + home + "'"},
		{"sticky world-writable home", home, 0o777 | os.ModeSticky, "writable by others"},
		{"readable home", home, 0o755, ""},
		{"world-writable journal", p.journal(), 0o777, "journal directory " + p.journal() + " is writable by others (mode 0777); run chmod 700 '" + p.journal() + "'"},
		{"group-writable run dir", p.run(), 0o730, "run directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Chmod(c.dir, c.mode); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(c.dir, 0o700)
			err := checkHomeDirs(p)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}

	// A home that belongs to someone else is refused, however private.
	err := checkHomeDirsOf(p, os.Getuid()+1)
	if err == nil || !strings.Contains(err.Error(), "belongs to uid") || !strings.Contains(err.Error(), "chown") {
		t.Fatalf("foreign home: %v", err)
	}

	// A file where the journal directory should be.
	os.RemoveAll(p.journal())
	os.WriteFile(p.journal(), nil, 0o600)
	if err := checkHomeDirs(p); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("journal as a file: %v", err)
	}
	// Missing subdirectories are fine (init creates them).
	os.Remove(p.journal())
	if err := checkHomeDirs(p); err != nil {
		t.Fatalf("missing journal directory: %v", err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/home/ann/.local/share/guarded-exchange": "/home/ann/.local/share/guarded-exchange",
		"/tmp/my home":  "'/tmp/my home'",
		"/tmp/it's":     `'/tmp/it'\''s'`,
		"/tmp/$(rm -r)": "'/tmp/$(rm -r)'",
		"":              "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// A master key file someone else wrote is refused, however private: as
// root the file is handed to nobody (65534), the review's repro; as any
// user the check runs for another uid.
func TestMasterKeyMustBeOurs(t *testing.T) {
	dir := t.TempDir()
	keyHex := strings.Repeat("cd", masterKeySize)
	p := filepath.Join(dir, "master.key")
	if err := os.WriteFile(p, []byte(keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if key, err := readKeyOrHang(t, p); err != nil || hex.EncodeToString(key) != keyHex {
		t.Fatalf("own key: %x, %v", key, err)
	}
	uid := os.Geteuid()
	_, err := readMasterKeyAs(p, uid+1)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("belongs to uid %d, not to uid %d", uid, uid+1)) ||
		!strings.Contains(err.Error(), p) || strings.Contains(err.Error(), keyHex) {
		t.Fatalf("key of uid %d read as uid %d: %v", uid, uid+1, err)
	}
	if uid != 0 {
		return // only root can give a file away; the check above covers the rule
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	key, err := readKeyOrHang(t, p)
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to uid 0") || !strings.Contains(err.Error(), "chown 0 "+p) {
		t.Fatalf("key of nobody read by root: %x, %v", key, err)
	}

	// The review's repro end to end: init as root must not adopt a key
	// nobody chose, and must not create another one beside it.
	root := t.TempDir()
	shared := filepath.Join(root, "sh")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(shared, "master.key")
	if err := os.WriteFile(planted, []byte(keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{shared, planted} {
		if err := os.Chown(f, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	g := &cli.Globals{Home: filepath.Join(root, "home"), MasterKeyFile: planted, User: "local", Venue: "paper"}
	r := &Runtime{Getenv: func(string) string { return "" }}
	err = r.Init(context.Background(), g, cli.IO{Out: io.Discard, Err: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("init adopted a key of nobody: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.Home, installFileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("init wrote an installation: %v", err)
	}
}

// The directory of the master key: one others may write lets them put a
// key of their choosing in its place, and is refused (sticky directories
// excepted: there only the file's owner, checked to be us, can replace
// it); so is one that belongs to someone other than us or root.
func TestMasterKeyDirectory(t *testing.T) {
	keyHex := strings.Repeat("ef", masterKeySize)
	uid := os.Geteuid()
	for _, c := range []struct {
		name string
		mode os.FileMode
		want string // "" means accepted
	}{
		{"private", 0o700, ""},
		{"readable", 0o755, ""},
		{"world-writable", 0o777, "is writable by others (mode 0777), who can replace the key; run chmod 700 "},
		{"group-writable", 0o770, "is writable by its group (mode 0770)"},
		{"sticky world-writable", 0o777 | os.ModeSticky, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cfg")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "master.key")
			if err := os.WriteFile(p, []byte(keyHex+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, c.mode); err != nil {
				t.Fatal(err)
			}
			key, err := readKeyOrHang(t, p)
			if c.want == "" {
				if err != nil || hex.EncodeToString(key) != keyHex {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), "directory "+dir+" of the master key file "+c.want) {
				t.Fatalf("read = %x, %v; want an error containing %q", key, err, c.want)
			}

			// init must not create a key there either.
			os.Remove(p)
			key, err = createMasterKey(p)
			if c.want == "" {
				if err != nil || len(key) != masterKeySize {
					t.Fatalf("create refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("create = %v; want an error containing %q", err, c.want)
			}
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a refused create left a file: %v", err)
			}
		})
	}

	// A directory of another user (not root), private or not.
	dir := t.TempDir()
	p := filepath.Join(dir, "master.key")
	if err := os.WriteFile(p, []byte(keyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if uid == 0 {
		// As root: the file is ours, the directory nobody's.
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := readKeyOrHang(t, p)
		if err == nil || !strings.Contains(err.Error(), "directory "+dir+" of the master key file belongs to uid 65534") {
			t.Fatalf("key in a directory of nobody: %v", err)
		}
		return
	}
	// As a user: a directory of root is fine, one of another user is not.
	if err := checkMasterKeyDir("/master.key", uid); err != nil {
		t.Fatalf("root's directory: %v", err)
	}
	if err := checkMasterKeyDir(p, uid+1); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("belongs to uid %d", uid)) {
		t.Fatalf("directory of uid %d checked for uid %d: %v", uid, uid+1, err)
	}
}
