package app

import (
	"context"
	"errors"
	"os"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Deliver sends cmd over the control socket when a server answers there;
// otherwise it hosts the same actors in-process under the home lock,
// applies the command, waits for the journal, and stops. One code path
// either way: actors.System.Handle. The socket is tried first, so an
// approver uid, which cannot read the home, reaches the server through
// GX_CONTROL_SOCKET alone.
func (r *Runtime) Deliver(ctx context.Context, g *cli.Globals, cmd messages.Command) (any, error) {
	p, err := resolvePaths(g)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	sock, err := control.SocketPath(p.Home, r.getenv)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	client, err := cli.DialControl(ctx, sock)
	if err == nil {
		defer client.Close()
		return client.Send(ctx, cmd)
	}
	if !errors.Is(err, cli.ErrNoServer) {
		return nil, cli.Refused("%v", err)
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
	// Only key commands need the venue (to ask the exchange about the key).
	vc := venueConfig{Name: g.Venue}.withoutMarket()
	switch cmd.(type) {
	case *messages.AddCredentialRequest, *messages.RecheckCredentialRequest:
		if vc, err = resolveVenue(g, r.getenv); err != nil {
			return nil, cli.CannotStart("%v", err)
		}
	}
	st, err := startStack(ctx, p, vc, key, r.logger(), r.Release, "cli", nil)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	defer st.close()
	return st.sys.Submit(ctx, cmd, messages.CLIOrigin(cmd, messages.ChannelInProcess, int64(os.Getuid()), int64(os.Getpid()), false))
}
