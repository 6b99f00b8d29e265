package app

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
)

// Layout under --home (docs/commands.md "The home").
const (
	journalDirName     = "journal"
	runDirName         = control.RunDirName
	lockFileName       = "lock"
	installFileName    = "installation.json"
	paperDirName       = "paper"
	paperStateFileName = "state.json"
)

// paths are the resolved locations of one installation.
type paths struct {
	Home      string
	MasterKey string
}

func (p paths) journal() string { return filepath.Join(p.Home, journalDirName) }
func (p paths) run() string     { return filepath.Join(p.Home, runDirName) }
func (p paths) lock() string    { return filepath.Join(p.Home, lockFileName) }
func (p paths) install() string { return filepath.Join(p.Home, installFileName) }

// paperState is the embedded simulator's state file: every paper account
// (docs/simulator.md "Durable state").
func (p paths) paperState() string { return filepath.Join(p.Home, paperDirName, paperStateFileName) }

// resolvePaths applies the XDG defaults of docs/commands.md "Global flags" and checks that the master
// key lies outside the home.
func resolvePaths(g *cli.Globals) (paths, error) {
	home := g.Home
	if home == "" {
		base := os.Getenv("XDG_DATA_HOME")
		if base == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return paths{}, fmt.Errorf("no --home and no home directory: %w", err)
			}
			base = filepath.Join(h, ".local", "share")
		}
		home = filepath.Join(base, "guarded-exchange")
	}
	key := g.MasterKeyFile
	if key == "" {
		base := os.Getenv("XDG_CONFIG_HOME")
		if base == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return paths{}, fmt.Errorf("no --master-key-file and no home directory: %w", err)
			}
			base = filepath.Join(h, ".config")
		}
		key = filepath.Join(base, "guarded-exchange", "master.key")
	}
	var err error
	if home, err = filepath.Abs(home); err != nil {
		return paths{}, err
	}
	if key, err = filepath.Abs(key); err != nil {
		return paths{}, err
	}
	if within(realPath(key), realPath(home)) {
		return paths{}, errors.New("the master key file must be outside --home")
	}
	return paths{Home: home, MasterKey: key}, nil
}

// realPath resolves symlinks of the longest existing prefix of p.
func realPath(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// masterKeySize is 256 bits.
const masterKeySize = 32

// installation is home/installation.json: proof that init finished, and the
// id of the master key this home belongs to (never the key itself).
type installation struct {
	Format      int       `json:"format"`
	CreatedAt   time.Time `json:"created_at"`
	MasterKeyID string    `json:"master_key_id"`
}

// masterKeyID derives a public identifier of the master key with HKDF, so a
// wrong key file is detected without storing anything secret in the home.
func masterKeyID(key []byte) string {
	id, err := hkdf.Key(sha256.New, key, nil, "guarded-exchange master key id v1", 16)
	if err != nil {
		panic(err) // only on an impossible length
	}
	return hex.EncodeToString(id)
}

// Limits on reading the master key file: it holds 64 hex digits and a
// newline, so anything bigger is not a key file, and a read that has not
// finished in a few seconds never will.
const (
	maxMasterKeyFile     = 4096
	masterKeyReadTimeout = 3 * time.Second
)

// readMasterKey reads the hex master key. Only a private regular file is
// accepted: not a symlink, a FIFO, a socket or a device (a FIFO would block
// the process forever, a device could be read without end), not readable
// or writable by group or others, owned by the effective uid (a key
// someone else wrote is theirs, not ours), in a directory others cannot
// replace it in (see checkMasterKeyDir). The file is opened without following a
// symlink and without blocking, checked again on the open descriptor (so a
// file swapped in between is caught), and read with a size limit and a
// deadline. Every refusal names the file and says how to fix it; none
// echoes the file's contents.
func readMasterKey(path string) ([]byte, error) { return readMasterKeyAs(path, os.Geteuid()) }

// readMasterKeyAs is readMasterKey for the user uid.
func readMasterKeyAs(path string, uid int) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("master key file %s is missing", path)
		}
		return nil, fmt.Errorf("master key file: %w", err)
	}
	if err := checkMasterKeyFile(path, st, uid); err != nil {
		return nil, err
	}
	if err := checkMasterKeyDir(path, uid); err != nil {
		return nil, err
	}
	// O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer.
	// O_NOFOLLOW: a symlink swapped in after the Lstat fails (ELOOP).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("master key file %s became a symbolic link while it was opened; give the key file itself", path)
		}
		return nil, fmt.Errorf("master key file: %w", err)
	}
	defer f.Close()
	fst, err := f.Stat() // fstat: what was actually opened
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	if err := checkMasterKeyFile(path, fst, uid); err != nil {
		return nil, err
	}
	if !os.SameFile(st, fst) {
		return nil, fmt.Errorf("master key file %s was replaced while it was opened; try again", path)
	}
	raw, err := readWithin(f, maxMasterKeyFile, masterKeyReadTimeout)
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != masterKeySize {
		return nil, fmt.Errorf("master key file %s is not a 256-bit hex key", path)
	}
	return key, nil
}

// checkMasterKeyFile refuses anything but a private regular file of a
// plausible size owned by uid.
func checkMasterKeyFile(path string, st fs.FileInfo, uid int) error {
	m := st.Mode()
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("master key file %s: cannot tell its owner", path)
	case m&fs.ModeSymlink != 0:
		target := "the file it points to"
		if t, err := filepath.EvalSymlinks(path); err == nil {
			target = t
		}
		return fmt.Errorf("master key file %s is a symbolic link; point --master-key-file (GX_MASTER_KEY_FILE) at the key file itself (%s)", path, target)
	case !m.IsRegular():
		return fmt.Errorf("master key file %s is not a regular file but a %s; the master key must be a plain file of mode 0600: point --master-key-file (GX_MASTER_KEY_FILE) at the key file itself", path, fileKind(m))
	case m.Perm()&0o044 != 0:
		return fmt.Errorf("master key file %s is readable by others (mode %04o); run chmod 600 %s", path, m.Perm(), shellQuote(path))
	case m.Perm()&0o033 != 0:
		return fmt.Errorf("master key file %s is writable or executable by others (mode %04o); run chmod 600 %s", path, m.Perm(), shellQuote(path))
	case int64(sys.Uid) != int64(uid):
		return fmt.Errorf("master key file %s belongs to uid %d, not to uid %d that runs guarded-exchange; a key another user wrote is not yours to trust: if the file is yours, run chown %d %s", path, sys.Uid, uid, uid, shellQuote(path))
	case st.Size() > maxMasterKeyFile:
		return fmt.Errorf("master key file %s is %d bytes, too large for a key file (64 hex digits); check --master-key-file", path, st.Size())
	}
	return nil
}

// checkMasterKeyDir refuses a master key whose directory lets someone else
// put a file of their choosing in its place: a directory that belongs to
// anyone but uid or root, or that its group or others may write, unless
// its sticky bit is set (as on /tmp): there only the owner of a file may
// rename or remove it, and the file's owner is checked to be uid. The
// directory is followed through symlinks: what counts is where the file
// is.
func checkMasterKeyDir(path string, uid int) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory of the master key file %s: %w", path, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch perm := st.Mode().Perm(); {
	case !ok:
		return fmt.Errorf("directory %s of the master key file: cannot tell its owner", dir)
	case int64(sys.Uid) != int64(uid) && sys.Uid != 0:
		return fmt.Errorf("directory %s of the master key file belongs to uid %d, who can replace the key; keep the key in a directory of your own (uid %d) or of root", dir, sys.Uid, uid)
	case perm&0o022 != 0 && st.Mode()&fs.ModeSticky == 0:
		who := "others"
		if perm&0o002 == 0 {
			who = "its group"
		}
		return fmt.Errorf("directory %s of the master key file is writable by %s (mode %04o), who can replace the key; run chmod 700 %s", dir, who, perm, shellQuote(dir))
	}
	return nil
}

// fileKind names a non-regular file type for an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// readWithin reads f to its end, at most limit bytes, and gives up after
// d. f is a regular file, whose reads the runtime poller cannot time out,
// so the read runs in a goroutine; on a timeout it is left behind (the
// caller is about to exit with the error) and the close waits for it.
func readWithin(f *os.File, limit int64, d time.Duration) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		done <- result{b, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		if int64(len(r.b)) > limit {
			return nil, fmt.Errorf("more than %d bytes, too large for a key file", limit)
		}
		return r.b, nil
	case <-t.C:
		return nil, fmt.Errorf("no answer within %s; the master key must be a plain local file", d)
	}
}

// shellQuote returns p as one word for a POSIX shell, so a fix printed in
// an error message can be pasted as it is.
func shellQuote(p string) string {
	safe := p != ""
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r)) {
			safe = false
			break
		}
	}
	if safe {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// checkHomeDirs refuses a home, or a directory of it (journal, run), that is not private to the user running the server: one that
// group or others can write (they could plant or alter records, sockets or
// the lock) or that belongs to another user. Each refusal gives the
// command that fixes it. Directories not created yet are skipped; init
// creates them with mode 0700.
func checkHomeDirs(p paths) error { return checkHomeDirsOf(p, os.Getuid()) }

// checkHomeDirsOf is checkHomeDirs for the user uid.
func checkHomeDirsOf(p paths, uid int) error {
	for _, d := range []struct{ name, path string }{
		{"home", p.Home},
		{"journal directory", p.journal()},
		{"run directory", p.run()},
	} {
		st, err := os.Stat(d.path)
		if errors.Is(err, fs.ErrNotExist) && d.path != p.Home {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", d.name, d.path, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s %s is not a directory", d.name, d.path)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid {
			return fmt.Errorf("%s %s belongs to uid %d, not to uid %d that runs guarded-exchange; use a home of your own, or run chown -R %d %s", d.name, d.path, sys.Uid, uid, uid, shellQuote(p.Home))
		}
		if perm := st.Mode().Perm(); perm&0o022 != 0 {
			who := "others"
			if perm&0o002 == 0 {
				who = "its group"
			}
			return fmt.Errorf("%s %s is writable by %s (mode %04o); run chmod 700 %s", d.name, d.path, who, perm, shellQuote(d.path))
		}
	}
	return nil
}

// createMasterKey writes a new random key with mode 0600, refusing to
// overwrite an existing file.
func createMasterKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := checkMasterKeyDir(path, os.Geteuid()); err != nil {
		return nil, err
	}
	key := make([]byte, masterKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

func readInstallation(p paths) (*installation, error) {
	raw, err := os.ReadFile(p.install())
	if err != nil {
		return nil, err
	}
	var inst installation
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", p.install(), err)
	}
	return &inst, nil
}

func writeInstallation(p paths, inst installation) error {
	raw, err := json.MarshalIndent(inst, "", "  ")
	if err != nil {
		return err
	}
	tmp := p.install() + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p.install()); err != nil {
		return err
	}
	return syncFile(p.Home)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// checkInstallation is what serve and the other state commands require:
// the home exists, is private (checkHomeDirs) and was initialised, and the
// master key is present, a private regular file (readMasterKey) and the
// one this home was made with. It returns the key.
func checkInstallation(p paths) ([]byte, error) {
	st, err := os.Stat(p.Home)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("home %s does not exist; run `guarded-exchange init`", p.Home)
	}
	if err := checkHomeDirs(p); err != nil {
		return nil, err
	}
	inst, err := readInstallation(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("home %s is not initialised; run `guarded-exchange init`", p.Home)
		}
		return nil, err
	}
	key, err := readMasterKey(p.MasterKey)
	if err != nil {
		return nil, err
	}
	if masterKeyID(key) != inst.MasterKeyID {
		return nil, fmt.Errorf("master key file %s is not the key of home %s", p.MasterKey, p.Home)
	}
	return key, nil
}

// homeLock is the single-process lock of a home (docs/commands.md "The home"): an exclusive
// flock on home/lock, holding the holder's pid for error messages.
type homeLock struct{ f *os.File }

// lockHeldError is lockHome's answer when another process holds the lock.
type lockHeldError struct{ msg string }

func (e *lockHeldError) Error() string { return e.msg }

// lockHome takes the lock or says who holds it.
func lockHome(p paths) (*homeLock, error) {
	f, err := os.OpenFile(p.lock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		raw, _ := os.ReadFile(p.lock())
		f.Close()
		holder := strings.TrimSpace(string(raw))
		if _, perr := strconv.Atoi(holder); perr != nil || holder == "" {
			return nil, &lockHeldError{fmt.Sprintf("another process holds the lock on %s", p.Home)}
		}
		return nil, &lockHeldError{fmt.Sprintf("another process (pid %s) holds the lock on %s", holder, p.Home)}
	}
	// The pid is for the message another process shows; it is not
	// synced (a lock does not outlive a crash, and a stale pid only names
	// a process in that message).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &homeLock{f: f}, nil
}

// release drops the lock.
func (l *homeLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
