package app

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Deliver sends cmd over the control socket when a server answers there;
// otherwise it hosts the same actors in-process under the home lock,
// applies the command, waits for the journal, and stops. One code path
// either way: actors.System.Submit. The socket is tried first, so an
// approver uid, which cannot read the home, reaches the server through
// GX_CONTROL_SOCKET alone.
func (r *Runtime) Deliver(ctx context.Context, g *cli.Globals, cmd messages.Command) (any, error) {
	return r.deliver(ctx, g, cmd, false)
}

// DeliverToServer is Deliver over the control socket only: with no server
// running it refuses and sends nothing (confirm approve|reject: an
// approval executes at once, and only the running server sends).
func (r *Runtime) DeliverToServer(ctx context.Context, g *cli.Globals, cmd messages.Command) (any, error) {
	return r.deliver(ctx, g, cmd, true)
}

// errNeedsServer is the refusal of a decision with no server running.
const errNeedsServer = "no server is running: the server must run to execute an approval (start `guarded-exchange serve` with GX_CONFIRM_CLI_ENABLED=true); nothing was decided"

func (r *Runtime) deliver(ctx context.Context, g *cli.Globals, cmd messages.Command, serverOnly bool) (any, error) {
	p, err := resolvePaths(g)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	// Before anything is sent, the socket's directory says which uid the
	// server runs as (the rule of control.Layout.ServerUID); DialControl
	// then talks only to a listener of that uid or the caller's own. A
	// socket that fails the check is refused, never replaced by the
	// in-process path: something is wrong with the installation.
	l, err := control.ClientLayout(p.Home, uint32(os.Getuid()), r.getenv)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	server, err := l.ServerUID()
	switch {
	case errors.Is(err, fs.ErrNotExist) && serverOnly:
		return nil, cli.Refused(errNeedsServer)
	case errors.Is(err, fs.ErrNotExist):
		// No directory, no server: host the actors here.
	case err != nil:
		return nil, cli.Refused("control socket %s: %v; nothing was sent (run doctor)", l.Path, err)
	default:
		client, err := cli.DialControl(ctx, l.Path, server)
		if err == nil {
			defer client.Close()
			return client.Send(ctx, cmd)
		}
		if !errors.Is(err, cli.ErrNoServer) {
			return nil, cli.Refused("%v", err)
		}
		if serverOnly {
			return nil, cli.Refused(errNeedsServer)
		}
	}
	key, err := checkInstallation(p)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	lock, err := lockHome(p)
	if err != nil {
		return nil, cli.Refused("%v, but its control socket does not answer", err)
	}
	defer lock.release()
	// Only key commands need the venue (to ask the exchange about the key),
	// and paper commands the simulator.
	vc := venueConfig{Name: g.Venue}.withoutMarket()
	switch cmd.(type) {
	case *messages.AddCredentialRequest, *messages.RecheckCredentialRequest:
		if vc, err = resolveVenue(g, r.getenv); err != nil {
			return nil, cli.CannotStart("%v", err)
		}
	case *messages.PaperStatusRequest, *messages.PaperResetRequest:
		// The paper commands need the simulator's stored accounts, whatever
		// --venue says.
		vc = venueConfig{Name: "paper", Paper: true, PaperOnly: true}.withoutMarket()
	}
	st, err := startStack(ctx, p, vc, key, r.logger(), r.Release, "cli", nil)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	defer st.close()
	return st.Submit(ctx, cmd, messages.CLIOrigin(cmd, messages.ChannelInProcess, int64(os.Getuid()), int64(os.Getpid()), false))
}
