package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Environment variables read by this package.
const (
	// EnvSocket places the socket at an explicit path, outside the home,
	// for deployments with approver uids (README, The control socket).
	EnvSocket = "GX_CONTROL_SOCKET"
	// EnvApprovers lists the uids besides the server's own that may use
	// the socket (comma-separated).
	EnvApprovers = "GX_APPROVER_UIDS"
)

// RunDirName and SocketName place the default socket: <home>/run/control.sock.
const (
	RunDirName = "run"
	SocketName = "control.sock"
)

// maxSocketPath is the longest path a Unix socket may have on Linux.
const maxSocketPath = 107

// SocketPath is where the control socket of the installation at home lives:
// GX_CONTROL_SOCKET when set (an absolute path), else <home>/run/control.sock.
// serve, the CLI client and doctor all resolve the path here.
func SocketPath(home string, getenv func(string) string) (string, error) {
	p := strings.TrimSpace(getenv(EnvSocket))
	if p == "" {
		return filepath.Join(home, RunDirName, SocketName), nil
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s must be an absolute path", EnvSocket)
	}
	p = filepath.Clean(p)
	// sockaddr_un holds 108 bytes including the terminating NUL; serve
	// also binds a temporary name of up to 10 bytes in the directory.
	if len(p) > maxSocketPath || len(filepath.Dir(p))+11 > maxSocketPath {
		return "", fmt.Errorf("%s is too long for a Unix socket path (at most %d bytes, and the directory at most %d)", EnvSocket, maxSocketPath, maxSocketPath-11)
	}
	return p, nil
}

// ParseApproverUIDs reads GX_APPROVER_UIDS (comma-separated uids). A bad
// entry fails closed: the server refuses to start.
func ParseApproverUIDs(s string) ([]uint32, error) {
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a uid", EnvApprovers, f)
		}
		if !slices.Contains(out, uint32(n)) {
			out = append(out, uint32(n))
		}
	}
	return out, nil
}

// Layout is where serve puts the control socket and the modes it gives
// the socket and its directory. serve builds it and doctor checks it, from
// the same environment, through ResolveLayout.
type Layout struct {
	// Path is the socket; Dir its directory.
	Path, Dir string
	// Explicit: the path came from GX_CONTROL_SOCKET.
	Explicit bool
	// Self is the server's uid; Approvers the other uids of
	// GX_APPROVER_UIDS (the server's own uid removed).
	Self      uint32
	Approvers []uint32
}

// Shared reports whether uids other than the server's may use the socket,
// so that they must be able to reach it.
func (l Layout) Shared() bool { return len(l.Approvers) > 0 }

// SocketMode is the mode serve gives the socket: 0600, or 0666 when other
// uids must connect (the SO_PEERCRED check is then the gate).
func (l Layout) SocketMode() os.FileMode {
	if l.Shared() {
		return 0o666
	}
	return 0o600
}

// ResolveLayout reads GX_CONTROL_SOCKET and GX_APPROVER_UIDS for the
// installation at home. Approver uids other than the server's need the
// socket outside the home (GX_CONTROL_SOCKET): the home stays 0700, so they
// could not reach <home>/run. Every refusal here is a reason not to start.
func ResolveLayout(home string, self uint32, getenv func(string) string) (Layout, error) {
	approvers, err := ParseApproverUIDs(getenv(EnvApprovers))
	if err != nil {
		return Layout{}, err
	}
	approvers = slices.DeleteFunc(approvers, func(u uint32) bool { return u == self })
	path, err := SocketPath(home, getenv)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{Path: path, Dir: filepath.Dir(path), Explicit: strings.TrimSpace(getenv(EnvSocket)) != "", Self: self, Approvers: approvers}
	if l.Shared() {
		if !l.Explicit {
			return Layout{}, fmt.Errorf("%s names uids other than the server's, which cannot reach a socket inside the home (mode 0700): set %s to a path in a directory of its own (mode 0711, see README, The control socket)", EnvApprovers, EnvSocket)
		}
		if within(l.Dir, home) {
			return Layout{}, fmt.Errorf("%s must be outside the home when %s names other uids: the home stays 0700", EnvSocket, EnvApprovers)
		}
	}
	return l, nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// CheckDir checks the socket's directory as serve needs it: in the home,
// run/ is 0700; an explicit directory belongs to the server's uid or root,
// nobody else may write it (or they could swap the socket for their own),
// and when other uids must connect it is searchable by them (0711 or 0755).
// A missing directory is fs.ErrNotExist.
func (l Layout) CheckDir() error {
	st, err := os.Stat(l.Dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", l.Dir)
	}
	mode := st.Mode().Perm()
	if !l.Explicit {
		if mode != 0o700 {
			return fmt.Errorf("%s must be mode 0700 (it is %04o): run chmod 700 %s", l.Dir, mode, l.Dir)
		}
		return nil
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != l.Self && sys.Uid != 0 {
		return fmt.Errorf("%s belongs to uid %d; it must belong to the server's uid %d or root", l.Dir, sys.Uid, l.Self)
	}
	if mode&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (mode %04o): run chmod go-w %s", l.Dir, mode, l.Dir)
	}
	if l.Shared() && mode&0o001 == 0 {
		return fmt.Errorf("approver uids cannot reach %s (mode %04o): run chmod 711 %s", l.Dir, mode, l.Dir)
	}
	return nil
}

// CheckSocket checks a socket file left at Path (a running server's, or a
// stale one): it must be a socket with the mode serve gives it. No file is
// fs.ErrNotExist.
func (l Layout) CheckSocket() error {
	st, err := os.Lstat(l.Path)
	if err != nil {
		return err
	}
	if st.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket", l.Path)
	}
	if st.Mode().Perm() != l.SocketMode() {
		return fmt.Errorf("socket %s has mode %04o, but serve with this environment gives it %04o: run doctor with serve's environment, or restart serve", l.Path, st.Mode().Perm(), l.SocketMode())
	}
	return nil
}

// prepareDir creates or fixes the socket's directory: run/ inside the home
// is created and set to 0700; an explicit directory is created if missing
// (0711 when other uids must connect, else 0700) and otherwise must pass
// CheckDir as it is: serve does not change a directory the admin made.
func (l Layout) prepareDir() error {
	if !l.Explicit {
		if err := os.MkdirAll(l.Dir, 0o700); err != nil {
			return err
		}
		return os.Chmod(l.Dir, 0o700)
	}
	if _, err := os.Stat(l.Dir); errors.Is(err, fs.ErrNotExist) {
		mode := os.FileMode(0o700)
		if l.Shared() {
			mode = 0o711
		}
		if err := os.MkdirAll(l.Dir, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(l.Dir, mode); err != nil {
			return err
		}
	}
	return l.CheckDir()
}
