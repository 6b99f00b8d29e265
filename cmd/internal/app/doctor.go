package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Doctor checks the installation and says what to fix. It exits 1 when
// anything needs fixing.
func (r *Runtime) Doctor(_ context.Context, g *cli.Globals, out cli.IO) error {
	problems := 0
	ok := func(format string, args ...any) { fmt.Fprintf(out.Out, "ok    "+format+"\n", args...) }
	bad := func(format string, args ...any) {
		problems++
		fmt.Fprintf(out.Out, "FIX   "+format+"\n", args...)
	}
	p, err := resolvePaths(g)
	if err != nil {
		bad("paths: %v", err)
		return cli.Refused("doctor found %d problem(s)", problems)
	}
	if st, err := os.Stat(p.Home); err != nil || !st.IsDir() {
		bad("home %s does not exist: run `guarded-exchange init`", p.Home)
	} else if st.Mode().Perm()&0o077 != 0 {
		bad("home %s is open to others (mode %04o): run chmod 700 %s", p.Home, st.Mode().Perm(), p.Home)
	} else {
		ok("home %s", p.Home)
	}
	if _, err := checkInstallation(p); err != nil {
		bad("%v", err)
	} else {
		ok("master key %s matches this home", p.MasterKey)
	}
	r.doctorControl(p, ok, bad)
	if _, err := os.Stat(p.journal()); errors.Is(err, fs.ErrNotExist) {
		bad("journal %s is missing: run `guarded-exchange init`", p.journal())
	} else if cp, cleanup, err := wal.Snapshot(p.journal()); err != nil {
		bad("journal %s cannot be read: %v", p.journal(), err)
	} else {
		res, err := wal.Verify(cp, "")
		cleanup()
		switch {
		case err != nil:
			bad("journal: %v", err)
		case len(res.Problems) > 0:
			bad("journal chain broken at seq %d (%s): run `guarded-exchange journal verify`", res.Problems[0].Seq, res.Problems[0].Reason)
		default:
			ok("journal: %d records, head %s", res.Records, res.Head)
		}
	}
	if l, err := lockHome(p); err != nil {
		ok("server running: %v", err)
	} else {
		l.release()
		ok("no server holds the home lock")
	}
	if vc, err := resolveVenue(g, r.getenv); err != nil {
		bad("venue: %v", err)
	} else {
		ok("venue %s", vc.Name)
	}
	if problems > 0 {
		return cli.Refused("doctor found %d problem(s)", problems)
	}
	fmt.Fprintln(out.Out, "all checks passed")
	return nil
}

// doctorControl checks the control socket's layout as serve would set it
// up from this environment (GX_CONTROL_SOCKET, GX_APPROVER_UIDS): run/ 0700
// in the home, or a directory of its own that approvers can search and
// nobody else can write.
func (r *Runtime) doctorControl(p paths, ok, bad func(string, ...any)) {
	l, err := control.ResolveLayout(p.Home, uint32(os.Getuid()), r.getenv)
	if err != nil {
		bad("control socket: %v", err)
		return
	}
	problems, note := 0, ""
	if err := l.CheckDir(); errors.Is(err, fs.ErrNotExist) {
		note = fmt.Sprintf("; serve will create %s", l.Dir)
	} else if err != nil {
		bad("control socket: %v", err)
		problems++
	}
	if err := l.CheckSocket(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		bad("control socket: %v", err)
		problems++
	}
	if problems == 0 {
		ok("control socket %s (socket mode %04o, %d approver uid(s)%s)", l.Path, l.SocketMode(), len(l.Approvers), note)
	}
}
