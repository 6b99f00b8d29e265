package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/mcp"
)

// Environment of remote mode.
const (
	envAllowedHosts   = "GX_HTTP_ALLOWED_HOSTS"
	envAllowedOrigins = "GX_HTTP_ALLOWED_ORIGINS"
)

// serveHTTP runs remote mode: MCP over Streamable HTTP at /mcp on
// o.Listen, every request authenticated by a bearer token, each user in
// their own actors. The control socket runs beside it, as for stdio.
func (r *Runtime) serveHTTP(ctx context.Context, g *cli.Globals, o cli.ServeOptions) error {
	rs, err := r.remoteSettings(g)
	if err != nil {
		return err
	}
	p, key, vc, layout := rs.paths, rs.key, rs.venue, rs.layout
	lock, err := lockHome(p)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer lock.release()
	logger := r.logger()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return cli.CannotStart("listen on %s: %v", o.Listen, err)
	}
	defer ln.Close()
	st, err := startStack(ctx, p, vc, key, logger, r.Release, "serve", nil)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer st.close()
	if err := st.started(ctx); err != nil {
		return cli.CannotStart("%v", err)
	}
	ctl, err := control.Listen(layout, st, logger.With("component", "control"), control.Limits{})
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer ctl.Close()
	presence := mcp.NewPresence()
	relay, err := r.startRelay(p, st, vc.Name, logger, o.DenyTools, presence, nil)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer relay.Close()
	srv, err := mcp.NewServer(mcp.Options{
		Backend:   mcp.HTTPBackend(st.sys, st.sys.Submit),
		Principal: mcp.HTTPPrincipal(userProfile(st.sys)),
		Venue:     vc.Name,
		Version:   r.Release,
		Logger:    logger.With("component", "mcp"),
		DenyTools: o.DenyTools,
		Presence:  presence,
		StateKey:  st.stateKey,
	})
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	return runHTTPFront(ctx, ln, o.Listen, srv, mcp.HTTPOptions{
		Authenticate: st.sys.Authenticate, AllowedHosts: rs.hosts, AllowedOrigins: rs.origins,
		SessionsRefused: st.sys.SessionsRefused,
	}, logger, "serving MCP over HTTP", "venue", vc.Name)
}

// remoteSettings is what both remote modes (local and cluster member) read
// before they start: the home's paths and master key, the venue, the
// control socket's layout and the HTTP front's allowed hosts and origins.
type remoteSettings struct {
	paths          paths
	key            []byte
	venue          venueConfig
	layout         control.Layout
	hosts, origins []string
}

// remoteSettings reads and checks the settings of remote mode; every error
// is a cli.CannotStart.
func (r *Runtime) remoteSettings(g *cli.Globals) (remoteSettings, error) {
	var rs remoteSettings
	var err error
	if rs.paths, err = resolvePaths(g); err != nil {
		return rs, cli.CannotStart("%v", err)
	}
	if rs.key, err = checkInstallation(rs.paths); err != nil {
		return rs, cli.CannotStart("%v", err)
	}
	if rs.venue, err = resolveVenue(g, r.getenv); err != nil {
		return rs, cli.CannotStart("%v", err)
	}
	if rs.layout, err = control.ResolveLayout(rs.paths.Home, uint32(os.Getuid()), r.getenv); err != nil {
		return rs, cli.CannotStart("%v", err)
	}
	if rs.hosts, err = listEnv(r.getenv(envAllowedHosts), validHost); err != nil {
		return rs, cli.CannotStart("%s: %v", envAllowedHosts, err)
	}
	if rs.origins, err = listEnv(r.getenv(envAllowedOrigins), validOrigin); err != nil {
		return rs, cli.CannotStart("%s: %v", envAllowedOrigins, err)
	}
	return rs, nil
}

// runHTTPFront serves srv as MCP over Streamable HTTP at /mcp on ln
// (listen is the address as given, for the warning about a non-loopback
// address) until the server fails or ctx ends, then shuts it down with a
// 10 s grace. msg and attrs make its start line.
func runHTTPFront(ctx context.Context, ln net.Listener, listen string, srv *sdk.Server, ho mcp.HTTPOptions, logger *slog.Logger, msg string, attrs ...any) error {
	httpLog := logger.With("component", "http")
	ho.Logger = httpLog
	h, err := mcp.NewHTTPHandler(srv, ho)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	if !mcp.IsLoopbackListen(listen) {
		logger.Warn("listening on a non-loopback address without TLS: bearer tokens and trading data cross the network in clear; put a TLS-terminating reverse proxy in front and listen on loopback",
			"listen", ln.Addr().String())
	}
	hs := mcp.NewHTTPServer(h, httpLog)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	logger.Info(msg, append([]any{"addr", ln.Addr().String(), "path", "/mcp"}, attrs...)...)
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return cli.Refused("serve: %v", err)
		}
		return nil
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	return nil
}

// userProfile is the profile of a user's effective policy as last
// committed (actors.System.CallerProfile); "" for a disabled user (every
// tool hidden).
func userProfile(sys *actors.System) func(context.Context, string) (string, error) {
	return func(_ context.Context, user string) (string, error) {
		profile, err := sys.CallerProfile(user)
		return string(profile), err
	}
}

// listEnv splits a comma-separated list and checks each entry.
func listEnv(v string, check func(string) bool) ([]string, error) {
	var out []string
	for i, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !check(s) {
			return nil, fmt.Errorf("entry %d is not valid (hosts: a name without scheme or port; origins: scheme://host[:port])", i+1)
		}
		out = append(out, s)
	}
	return out, nil
}

// validHost: a host name or address without port or scheme.
func validHost(s string) bool {
	return !strings.ContainsAny(s, "/:@ *") || net.ParseIP(strings.Trim(s, "[]")) != nil
}

// validOrigin: scheme://host[:port], no path.
func validOrigin(s string) bool {
	scheme, rest, ok := strings.Cut(s, "://")
	return ok && (scheme == "http" || scheme == "https") && rest != "" && !strings.ContainsAny(rest, "/@ *")
}
