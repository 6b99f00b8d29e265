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
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			// The value is not repeated (settings never are).
			return nil, fmt.Errorf("%s: entry %d is not a uid: write whole numbers separated by commas", EnvApprovers, i+1)
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

// The rule for the socket's directory (docs/decisions.md, D36). Walking
// from / down to the directory with Lstat:
//   - no component is a symbolic link (whoever may write the directory
//     holding a link may point it elsewhere between a check and a connect);
//   - every component belongs to root or to one other uid, the server's
//     (the owner of the non-root part of the path);
//   - a directory above the socket's directory that others may write must
//     be sticky (like /tmp), so nobody can rename or remove an entry they do
//     not own; the socket's directory itself may not be writable by others;
//   - an approver (any uid but the server's) trusts that owner as the
//     server only when the first component it owns lies in a directory only
//     root may write: in /tmp anybody could have made a directory of their
//     own. A path owned by root throughout names root as the server.
// serve and doctor check that the owner is the server's uid (or root), and
// with approvers also that approvers would trust it; the CLI derives the
// server's uid from the same walk (ServerUID) and then accepts only a peer
// whose SO_PEERCRED uid is that uid or its own.

// dirChain is what walking a directory's path from / finds.
type dirChain struct {
	// owner is the uid owning the non-root part of the path; 0 when
	// root owns every component. ownerAt is its first component and
	// above the directory holding it.
	owner          uint32
	ownerAt, above string
	// anchored: above is writable by root only (or owner is root).
	anchored bool
	// mode is the last component's (the socket directory's) mode.
	mode os.FileMode
}

// walkDir checks dir and every directory above it with Lstat, by the rule
// above. A missing component is fs.ErrNotExist.
func walkDir(dir string) (dirChain, error) {
	var prefixes []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		prefixes = append(prefixes, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	slices.Reverse(prefixes)
	c := dirChain{anchored: true}
	parentOpen := false
	for i, p := range prefixes {
		st, err := os.Lstat(p)
		if err != nil {
			return c, err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return c, fmt.Errorf("%s is a symbolic link; the control socket's path may not contain one (use the path it points to)", p)
		}
		if !st.IsDir() {
			return c, fmt.Errorf("%s is not a directory", p)
		}
		uid := ownerOf(st)
		switch {
		case uid == 0:
		case c.owner == 0:
			c.owner, c.ownerAt, c.above, c.anchored = uid, p, filepath.Dir(p), !parentOpen
		case uid != c.owner:
			return c, fmt.Errorf("%s belongs to uid %d, but %s above it belongs to uid %d: the control socket's path may pass from root to one other uid only", p, uid, c.ownerAt, c.owner)
		}
		open := st.Mode().Perm()&0o022 != 0
		last := i == len(prefixes)-1
		if open && (last || st.Mode()&fs.ModeSticky == 0) {
			return c, fmt.Errorf("%s is writable by others (mode %04o): run chmod go-w %s", p, st.Mode().Perm(), p)
		}
		parentOpen = open
		c.mode = st.Mode().Perm()
	}
	return c, nil
}

// ownerOf is the uid owning the file st describes.
func ownerOf(st fs.FileInfo) uint32 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Uid
	}
	return ^uint32(0) // unknown: trusted by nobody
}

// checkRunDir checks run/ in the home: a directory (not a link), mode 0700.
// The home above it is the installation's own and 0700 (checked at start),
// so nobody else made run/; the CLI moreover accepts only a peer of its own
// uid on this layout.
func checkRunDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; it must be a directory: remove it and restart serve", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if mode := st.Mode().Perm(); mode != 0o700 {
		return fmt.Errorf("%s must be mode 0700 (it is %04o): run chmod 700 %s", dir, mode, dir)
	}
	return nil
}

// CheckDir checks the socket's directory as serve needs it: in the home,
// run/ is a directory (not a link) with mode 0700; an explicit
// directory and every directory above it pass the rule above with the
// server's uid (or root) as owner, and when other uids must connect it is
// searchable by them (0711 or 0755) and approvers would trust its owner.
// Nothing is followed through a symbolic link. A missing directory is
// fs.ErrNotExist.
func (l Layout) CheckDir() error {
	if !l.Explicit {
		return checkRunDir(l.Dir)
	}
	c, err := walkDir(l.Dir)
	if err != nil {
		return err
	}
	if c.owner != 0 && c.owner != l.Self {
		return fmt.Errorf("%s belongs to uid %d; it must belong to the server's uid %d or root", c.ownerAt, c.owner, l.Self)
	}
	if l.Shared() && c.mode&0o001 == 0 {
		return fmt.Errorf("approver uids cannot reach %s (mode %04o): run chmod 711 %s", l.Dir, c.mode, l.Dir)
	}
	if l.Shared() && !c.anchored {
		return fmt.Errorf("approvers cannot trust %s: it lies in %s, which others may write, where any uid could have made it; put the socket's directory in a directory only root may write (e.g. /run)", c.ownerAt, c.above)
	}
	return nil
}

// ClientLayout is the socket the CLI of uid self talks to: the path serve
// uses (SocketPath), whatever GX_APPROVER_UIDS says in the CLI's
// environment.
func ClientLayout(home string, self uint32, getenv func(string) string) (Layout, error) {
	path, err := SocketPath(home, getenv)
	if err != nil {
		return Layout{}, err
	}
	return Layout{Path: path, Dir: filepath.Dir(path), Explicit: strings.TrimSpace(getenv(EnvSocket)) != "", Self: self}, nil
}

// ServerUID is the uid the CLI of uid l.Self accepts as the server on
// l.Path, found before anything is sent: in the home, its own (run/ must
// pass CheckDir); for an explicit path, the owner of the path's non-root
// part by the rule above (root when root owns it all), refused when an
// approver could not trust it. A missing directory is fs.ErrNotExist: no
// server listens there.
func (l Layout) ServerUID() (uint32, error) {
	if !l.Explicit {
		if err := l.CheckDir(); err != nil {
			return 0, err
		}
		return l.Self, nil
	}
	c, err := walkDir(l.Dir)
	if err != nil {
		return 0, err
	}
	if c.owner != 0 && c.owner != l.Self && !c.anchored {
		return 0, fmt.Errorf("%s belongs to uid %d, which is neither yours (%d) nor root, and lies in %s, which others may write: nothing shows that uid %d runs the server", c.ownerAt, c.owner, l.Self, c.above, c.owner)
	}
	return c.owner, nil
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
// is created and set to 0700 (a link there is refused, not followed); an explicit directory is created if missing
// (0711 when other uids must connect, else 0700) and otherwise must pass
// CheckDir as it is: serve does not change a directory the admin made.
// The path above is checked before anything is created, so nothing is
// made through a symbolic link.
func (l Layout) prepareDir() error {
	if !l.Explicit {
		if err := os.MkdirAll(l.Dir, 0o700); err != nil {
			return err
		}
		st, err := os.Lstat(l.Dir)
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 || !st.IsDir() {
			return checkRunDir(l.Dir)
		}
		if err := os.Chmod(l.Dir, 0o700); err != nil {
			return err
		}
		return l.CheckDir()
	}
	if _, err := walkDir(l.Dir); errors.Is(err, fs.ErrNotExist) {
		mode := os.FileMode(0o700)
		if l.Shared() {
			mode = 0o711
		}
		if err := os.MkdirAll(filepath.Dir(l.Dir), 0o700); err != nil {
			return err
		}
		// Mkdir, not MkdirAll: it fails on anything planted at the name
		// meanwhile (a link is then refused by CheckDir, never chmod-ed
		// through).
		if err := os.Mkdir(l.Dir, 0o700); err == nil {
			if err := os.Chmod(l.Dir, mode); err != nil {
				return err
			}
		} else if !errors.Is(err, fs.ErrExist) {
			return err
		}
	} else if err != nil {
		return err
	}
	return l.CheckDir()
}
