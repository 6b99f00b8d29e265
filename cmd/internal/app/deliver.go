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

// DeliverToServer is Deliver over the control socket only: with no server
// running it refuses and sends nothing (an approval executes at once, and
// only the running server sends).
func (r *Runtime) DeliverToServer(ctx context.Context, g *cli.Globals, cmd messages.Command) (any, error) {
	conn, err := r.DialServer(ctx, g)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Send(ctx, cmd)
}

// DialServer opens one connection to the running server's control socket
// (confirm approve|reject): with no server running it refuses.
func (r *Runtime) DialServer(ctx context.Context, g *cli.Globals) (cli.ServerConn, error) {
	p, err := resolvePaths(g)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	client, err := r.dialControl(ctx, p)
	if errors.Is(err, cli.ErrNoServer) {
		return nil, cli.Refused(errNeedsServer)
	}
	if err != nil {
		return nil, err
	}
	return client, nil
}

// errNeedsServer is the refusal of a decision with no server running.
const errNeedsServer = "no server is running: the server must run to execute an approval (start `guarded-exchange serve` with GX_CONFIRM_CLI_ENABLED=true); nothing was decided"

// dialControl connects to the control socket of the server serving the
// home p. Before anything is sent, the socket's directory says which uid
// the server runs as (the rule of control.Layout.ServerUID); DialControl
// then talks only to a listener of that uid or the caller's own. No socket
// directory, or nothing listening, is cli.ErrNoServer; a socket that fails
// the check is refused, never replaced by the in-process path: something
// is wrong with the installation.
func (r *Runtime) dialControl(ctx context.Context, p paths) (*cli.ControlClient, error) {
	l, err := control.ClientLayout(p.Home, uint32(os.Getuid()), r.getenv)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	server, err := l.ServerUID()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, cli.ErrNoServer
	case err != nil:
		return nil, cli.Refused("control socket %s: %v; nothing was sent (run doctor)", l.Path, err)
	}
	client, err := cli.DialControl(ctx, l.Path, server)
	if err != nil && !errors.Is(err, cli.ErrNoServer) {
		return nil, cli.Refused("%v", err)
	}
	return client, err
}

// Deliver sends cmd over the control socket when a server answers there;
// otherwise it hosts the same actors in-process under the home lock,
// applies the command, waits for the journal, and stops. One code path
// either way: actors.System.Submit. The socket is tried first, so an
// approver uid, which cannot read the home, reaches the server through
// GX_CONTROL_SOCKET alone.
func (r *Runtime) Deliver(ctx context.Context, g *cli.Globals, cmd messages.Command) (any, error) {
	p, err := resolvePaths(g)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	// The socket is tried first: with no server there, the actors are
	// hosted here.
	client, err := r.dialControl(ctx, p)
	if err == nil {
		defer client.Close()
		return client.Send(ctx, cmd)
	}
	if !errors.Is(err, cli.ErrNoServer) {
		return nil, err
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
