package app

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/guarded-exchange/guarded-exchange/cli"
)

// Layout under --home (SPEC §2).
const (
	journalDirName  = "journal"
	runDirName      = "run"
	lockFileName    = "lock"
	installFileName = "installation.json"
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

// resolvePaths applies the XDG defaults of SPEC §2 and checks that the master
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

// readMasterKey reads the hex master key and checks its mode: it must not
// be readable by group or others.
func readMasterKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("master key file %s is missing", path)
		}
		return nil, fmt.Errorf("master key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("master key file %s is readable by others (mode %04o); run chmod 600", path, st.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != masterKeySize {
		return nil, fmt.Errorf("master key file %s is not a 256-bit hex key", path)
	}
	return key, nil
}

// createMasterKey writes a new random key with mode 0600, refusing to
// overwrite an existing file.
func createMasterKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
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
// the home exists and was initialised, and the master key is present,
// private and the one this home was made with. It returns the key.
func checkInstallation(p paths) ([]byte, error) {
	st, err := os.Stat(p.Home)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("home %s does not exist; run `guarded-exchange init`", p.Home)
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

// homeLock is the single-process lock of a home (SPEC §2): an exclusive
// flock on home/lock, holding the holder's pid for error messages.
type homeLock struct{ f *os.File }

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
			return nil, fmt.Errorf("another process holds the lock on %s", p.Home)
		}
		return nil, fmt.Errorf("another process (pid %s) holds the lock on %s", holder, p.Home)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		_ = f.Sync()
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
