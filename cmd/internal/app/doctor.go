package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Doctor checks the installation and says what to fix. It exits 1 when
// anything needs fixing.
func (r *Runtime) Doctor(ctx context.Context, g *cli.Globals, out cli.IO) error {
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
	r.doctorServer(p, ok, bad)
	vc, err := resolveVenue(g, r.getenv)
	if err != nil {
		bad("venue: %v", err)
	} else {
		ok("venue %s", vc.Name)
	}
	if problems > 0 {
		return cli.Refused("doctor found %d problem(s)", problems)
	}
	fmt.Fprintln(out.Out, "all checks passed")
	r.doctorTrade(ctx, g, vc, out)
	return nil
}

// doctorServer says whether a server holds the home: the home lock is
// taken by serve (and briefly by a CLI command run with no server).
func (r *Runtime) doctorServer(p paths, ok, bad func(string, ...any)) {
	if _, err := os.Stat(p.lock()); errors.Is(err, fs.ErrNotExist) {
		ok("server not running")
		return
	}
	l, err := lockHome(p)
	var held *lockHeldError
	switch {
	case errors.As(err, &held):
		ok("server running: %v", err)
	case err != nil:
		bad("home lock: %v", err)
	default:
		l.release()
		ok("server not running")
	}
}

// doctorTrade lists what still stands between the agent and a trade for
// the user, each with the command that removes it. None of these is an
// installation problem (a fresh home is read-only by design), so they do
// not change doctor's exit status. The policy is read the way every CLI
// command reads it: from the running server, or from the journal under
// the home lock when none runs; nothing goes to the network.
func (r *Runtime) doctorTrade(ctx context.Context, g *cli.Globals, vc venueConfig, out cli.IO) {
	ans, err := r.Deliver(ctx, g, &messages.ShowPolicyRequest{User: g.User})
	if err != nil {
		fmt.Fprintf(out.Out, "cannot tell what stands between the agent and a trade: %v\n", err)
		return
	}
	view, isView := ans.(*messages.PolicyView)
	if !isView {
		fmt.Fprintf(out.Out, "cannot tell what stands between the agent and a trade: unexpected answer %T\n", ans)
		return
	}
	for _, line := range tradeBlockers(view, vc, envBool(r.getenv, "GX_CONFIRM_CLI_ENABLED")) {
		fmt.Fprintln(out.Out, line)
	}
}

// tradeBlockers are doctor's lines on what keeps the user's agent from
// trading on vc: one "next" line per blocker with the exact command that
// removes it, "note" lines for what doctor cannot settle alone, or one
// line saying nothing stands in the way. cliChannel: serve's environment
// enables the CLI confirmation channel (GX_CONFIRM_CLI_ENABLED).
func tradeBlockers(view *messages.PolicyView, vc venueConfig, cliChannel bool) []string {
	u, pol := view.User, view.Effective
	admin := "guarded-exchange admin policy set-ceiling --user " + u
	var lines []string
	blocked := false
	next := func(format string, args ...any) {
		blocked = true
		lines = append(lines, "next  "+fmt.Sprintf(format, args...))
	}
	note := func(format string, args ...any) { lines = append(lines, "note  "+fmt.Sprintf(format, args...)) }
	if view.Disabled {
		next("user %s is disabled: every tool call is refused. Create another user: guarded-exchange admin user create NAME", u)
	}
	switch view.KillSwitch {
	case messages.KillSwitchUser:
		next("the kill switch is on: no new orders. Run: guarded-exchange kill-switch off --user %s", u)
	case messages.KillSwitchAdmin:
		next("the admin kill switch is on: no new orders. Run: guarded-exchange admin kill-switch off --user %s", u)
	}
	if pol.Profile == messages.ProfileReadOnly {
		next("profile is read_only: the agent can only read. Run: %s --profile trade", admin)
	}
	if len(pol.Allow) == 0 {
		next("the allowlist is empty: no symbol may be traded. Run: %s --allow linear:BTCUSDT", admin)
	}
	if level := vc.level(); level.Rank() > pol.VenueCeiling.Rank() {
		next("venue %s is above the venue ceiling %s: every order is refused. Run: %s --venue-ceiling %s (live also needs explicit caps, see README)", vc.Name, pol.VenueCeiling, admin, level)
	}
	if len(pol.ConfirmActions) > 0 {
		tools := strings.Join(pol.ConfirmActions, ", ")
		switch {
		case cliChannel:
			note("%s wait for a human: approve with guarded-exchange confirm approve ID (GX_CONFIRM_CLI_ENABLED=true)", tools)
		case pol.TrustClientUI:
			note("%s wait for a human on the MCP client's own form: a client without forms (elicitation) gets them refused. To approve from a terminal instead, start serve with GX_CONFIRM_CLI_ENABLED=true", tools)
		default:
			next("%s need a human but no confirmation channel is open (trust_client_ui is false). Start serve with GX_CONFIRM_CLI_ENABLED=true, or run: %s --confirm none", tools, admin)
		}
	}
	if vc.Paper && pol.MaxLeverage.LessThan(sim.StartingLeverage()) {
		note("paper accounts start every symbol at %sx, above max_leverage %s: an order needs the symbol's leverage at %s or less (set_leverage sets it); doctor cannot read an account's leverage", sim.StartingLeverage(), pol.MaxLeverage, pol.MaxLeverage)
	}
	head := "what still stands between the agent of " + u + " and a trade on " + vc.Name + ":"
	if !blocked {
		head = "nothing in the policy stands between the agent of " + u + " and a trade on " + vc.Name
	}
	return append([]string{head}, lines...)
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
