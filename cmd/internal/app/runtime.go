package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/mcp"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// Runtime implements cli.Runtime.
type Runtime struct {
	// Release is the version string reported by `version` and to MCP clients.
	Release string
	// Logger writes the log lines (stderr). Configure builds it when
	// LogOutput is set; nil and no LogOutput discards.
	Logger *slog.Logger
	// LogOutput is where Configure points the logger it builds (stderr),
	// in the format of --log-format at the level of GX_LOG_LEVEL.
	LogOutput io.Writer
	// Stdin and Stdout are the MCP stdio stream of serve. main keeps the
	// real stdout here and points os.Stdout at stderr, so a stray print can
	// never corrupt the protocol.
	Stdin  io.Reader
	Stdout io.Writer
	// Getenv reads the environment (os.Getenv by default).
	Getenv func(string) string
	// Environ lists the environment as KEY=VALUE (os.Environ by default),
	// for the unknown GX_ variables.
	Environ func() []string
}

var (
	_ cli.Runtime    = (*Runtime)(nil)
	_ cli.Configurer = (*Runtime)(nil)
)

func (r *Runtime) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

func (r *Runtime) environ() []string {
	if r.Environ != nil {
		return r.Environ()
	}
	return os.Environ()
}

func (r *Runtime) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Init creates the installation (docs/commands.md). Re-running it on a complete
// installation changes nothing; an installation whose key file is gone is
// refused.
func (r *Runtime) Init(ctx context.Context, g *cli.Globals, out cli.IO) error {
	p, err := resolvePaths(g)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	inst, err := readInstallation(p)
	switch {
	case err == nil:
		if _, kerr := os.Lstat(p.MasterKey); errors.Is(kerr, fs.ErrNotExist) {
			return cli.CannotStart("installation %s exists but its master key file %s is gone; restore it (a new key cannot read what the old one encrypted)", p.Home, p.MasterKey)
		}
		if _, err := checkInstallation(p); err != nil {
			return cli.CannotStart("%v", err)
		}
		_ = inst
	case errors.Is(err, fs.ErrNotExist):
	default:
		return cli.CannotStart("%v", err)
	}

	// A home that already exists must be private before init adopts it:
	// whatever others could write into it (a journal, a lock, a socket)
	// would become this installation's. A home others can write is
	// refused with the fix, not silently chmodded.
	if _, serr := os.Stat(p.Home); serr == nil {
		if err := checkHomeDirs(p); err != nil {
			return cli.CannotStart("%v", err)
		}
	}
	for _, d := range []string{p.Home, p.journal(), p.run()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return cli.CannotStart("create %s: %v", d, err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return cli.CannotStart("chmod %s: %v", d, err)
		}
	}
	key, err := readMasterKey(p.MasterKey)
	if err != nil {
		// Only a key file that is not there at all (not even a dangling
		// symlink) is created; anything else is refused as it is.
		if _, serr := os.Lstat(p.MasterKey); !errors.Is(serr, fs.ErrNotExist) {
			return cli.CannotStart("%v", err)
		}
		if key, err = createMasterKey(p.MasterKey); err != nil {
			return cli.CannotStart("create master key: %v", err)
		}
		fmt.Fprintf(out.Out, "created master key %s (mode 0600; keep it outside the home and back it up)\n", p.MasterKey)
	}
	lock, err := lockHome(p)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer lock.release()

	// The paper venue runs embedded during init: the paper key is checked
	// against it exactly like a key a user adds (docs/commands.md).
	st, err := startStack(ctx, p, venueConfig{Name: "paper", Paper: true}, key, r.logger(), r.Release, "init", nil)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer st.close()
	res, err := st.sys.Handle(ctx, &messages.CreateUserRequest{User: g.User}, messages.ActorCLIAdmin)
	if err != nil {
		return cli.Refused("create user %q: %v", g.User, err)
	}
	if view, ok := res.(*messages.PolicyView); ok && view.Changed {
		fmt.Fprintf(out.Out, "created user %q (profile read_only, empty allowlist, venue ceiling demo)\n", g.User)
	} else {
		fmt.Fprintf(out.Out, "user %q already exists\n", g.User)
	}
	if err := provisionPaperKey(ctx, st, g.User, out); err != nil {
		return err
	}
	if err := writeInstallation(p, installation{Format: 1, CreatedAt: time.Now().UTC(), MasterKeyID: masterKeyID(key)}); err != nil {
		return cli.CannotStart("write %s: %v", p.install(), err)
	}
	fmt.Fprintf(out.Out, "home %s is ready\n", p.Home)
	return nil
}

// policyPrincipal is the one principal of a stdio server: the user, with
// the profile of their effective policy as last committed
// (actors.System.CallerProfile: no ask, no wait behind the user's
// writes). A disabled user gets no profile, so every tool is hidden and
// refused.
func policyPrincipal(sys *actors.System, user string) func(context.Context, sdk.Request) (mcp.Principal, error) {
	return func(context.Context, sdk.Request) (mcp.Principal, error) {
		profile, err := sys.CallerProfile(user)
		if err != nil {
			return mcp.Principal{}, err
		}
		return mcp.Principal{User: user, Profile: string(profile)}, nil
	}
}

// Serve runs the MCP server on stdio (docs/commands.md).
func (r *Runtime) Serve(ctx context.Context, g *cli.Globals, o cli.ServeOptions, _ cli.IO) error {
	deny, err := r.denyTools(o.DenyTools)
	if err != nil {
		return err
	}
	o.DenyTools = deny
	switch o.Transport {
	case "stdio":
	case "http":
		if o.Cluster != nil {
			return r.serveCluster(ctx, g, o)
		}
		return r.serveHTTP(ctx, g, o)
	default:
		return cli.CannotStart("the %s transport is not available in this version; use --transport stdio", o.Transport)
	}
	// The actor system and the tool schemas are built while the
	// installation is checked and the journal replayed (D152).
	prepared := actors.Prepare(r.logger())
	defer prepared.Close()
	go mcp.PrepareSchemas()
	p, err := resolvePaths(g)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	key, err := checkInstallation(p)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	vc, err := resolveVenue(g, r.getenv)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	layout, err := control.ResolveLayout(p.Home, uint32(os.Getuid()), r.getenv)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	lock, err := lockHome(p)
	if err != nil {
		// An engine already serves this home: relay this session to it.
		if rerr := r.relayStdio(ctx, p, g.User, o.DenyTools); !errors.Is(rerr, errNoRelay) {
			return rerr
		}
		return cli.CannotStart("%v", err)
	}
	defer lock.release()
	logger := r.logger()
	st, err := startStackOn(ctx, p, vc, key, logger, r.Release, "serve", nil, prepared)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer st.close()
	// The user must exist; its committed state says so without starting
	// its actor (CallerProfile asks no actor).
	if _, err := st.sys.CallerProfile(g.User); err != nil {
		return cli.CannotStart("user %q: %v; create it with `guarded-exchange admin user create %s`", g.User, err, g.User)
	}
	// After the first answers (startupWork, D153): the policy warnings,
	// and the re-check of the stored key's permissions (docs/invariants.md
	// "Keys"), which starts the user's actors, its private stream and their
	// reconciliation. Nothing on the start-up path waits on the network,
	// and the user actor serves the session meanwhile; the user's trading
	// calls wait for the re-check. A key that cannot be checked now is
	// logged, not fatal: every state change re-checks it before it goes
	// through. At the end of the session the work gets startupWorkGrace to
	// finish, then the check ends (its venue call is cancelled) before the
	// stack closes.
	checkCtx, cancelCheck := context.WithCancel(ctx)
	work := newStartupWork(g.User, func() {
		if view, err := st.sys.Handle(ctx, &messages.ShowPolicyRequest{User: g.User}, messages.ActorSystem); err == nil {
			for _, w := range r.PolicyWarnings(view.(*messages.PolicyView).Effective) {
				logger.Warn("the policy lets no order through", "user", g.User, "why", w)
			}
		}
		recheckAtStart(checkCtx, st, g.User, vc.Name, logger)
	})
	begin := time.AfterFunc(startupWorkBound, work.Begin)
	defer func() { begin.Stop(); work.WaitFor(startupWorkGrace); cancelCheck(); work.Wait() }()
	ctl, err := control.Listen(layout, st, logger.With("component", "control"), control.Limits{})
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer ctl.Close()
	// The stdio session and the relayed ones are followed apart: at EOF
	// serve waits for its own session's dead-man cancels, then ends the
	// relayed sessions and waits for theirs.
	presence, relayed := mcp.NewPresence(), mcp.NewPresence()
	relay, err := r.startRelay(p, st, vc.Name, logger, o.DenyTools, relayed, work)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer relay.Close()
	srv, err := mcp.NewServer(mcp.Options{
		Backend:   st.sys,
		Principal: policyPrincipal(st.sys, g.User),
		Venue:     vc.Name,
		Version:   r.Release,
		Logger:    logger.With("component", "mcp"),
		DenyTools: o.DenyTools,
		Presence:  presence,
		StateKey:  st.stateKey,
		Startup:   work,
	})
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	logger.Info("serving MCP on stdio", "venue", vc.Name, "user", g.User)
	// The collector is set back, and the start-up work begins, once the
	// first two answers are out (initialize's and the next one: tools/list
	// for most clients).
	out := &afterAnswers{w: r.Stdout, at: 2, then: func() { ReleaseStartupGC(); work.Begin() }}
	t := mcp.StdioTransport(r.Stdin, out, logger.With("component", "stdio"))
	// server_started becomes durable beside the first answers; if it
	// cannot, the journal is down and serve stops as it would have before
	// answering.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	startErr := make(chan error, 1)
	go func() {
		err := st.started(runCtx)
		if err != nil && runCtx.Err() == nil {
			logger.Error("journal: server_started could not be made durable; stopping", "err", err.Error())
			stopRun()
		}
		startErr <- err
	}()
	runErr := srv.Run(runCtx, t)
	stopRun()
	if err := <-startErr; err != nil && !errors.Is(messages.AsError(err).Err, context.Canceled) && ctx.Err() == nil {
		return cli.CannotStart("%v", err)
	}
	// The session ended (EOF or a signal): the dead-man switch may be
	// cancelling the user's orders; the stack stays up until it is done.
	waitPresence(presence, logger)
	relay.Close()
	waitPresence(relayed, logger)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return cli.Refused("serve: %v", runErr)
	}
	return nil
}

// envDenyTools adds tools to --deny-tool, comma-separated.
const envDenyTools = "GX_DENY_TOOLS"

// denyTools is --deny-tool with GX_DENY_TOOLS added; a name that is not a
// tool refuses to start.
func (r *Runtime) denyTools(flags []string) ([]string, error) {
	var out []string
	for _, n := range flags {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range strings.Split(r.getenv(envDenyTools), ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if err := mcp.CheckDenyTools(out); err != nil {
		return nil, cli.CannotStart("%v (--deny-tool and %s)", err, envDenyTools)
	}
	return out, nil
}

// waitPresence waits, bounded, for the sessions that ended to be reported
// and their dead-man cancels to finish.
func waitPresence(p *mcp.Presence, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		logger.Warn("stopped waiting for the dead-man switch", "err", err.Error())
	}
}

// provisionPaperKey stores a new random paper key for the user, through the
// same path as `keys add` (the embedded venue opens a paper account for it,
// then the key is checked, sealed and journaled), unless one is stored: a
// re-run of init keeps the key.
func provisionPaperKey(ctx context.Context, st *stack, user string, out cli.IO) error {
	res, err := st.sys.Handle(ctx, &messages.ShowCredentialRequest{User: user, Environment: "paper"}, messages.ActorCLIAdmin)
	if err != nil {
		return cli.Refused("paper key: %v", err)
	}
	if res.(*messages.CredentialView).Present {
		fmt.Fprintf(out.Out, "paper key already stored\n")
		return nil
	}
	k, err := newPaperKey()
	if err != nil {
		return cli.CannotStart("paper key: %v", err)
	}
	res, err = st.sys.Handle(ctx, &messages.AddCredentialRequest{
		User: user, Environment: "paper", APIKey: k.APIKey, APISecret: messages.NewSecret(k.APISecret),
	}, messages.ActorCLIAdmin)
	if err != nil {
		return cli.Refused("paper key: %v", err)
	}
	v := res.(*messages.CredentialView)
	fmt.Fprintf(out.Out, "stored the paper key %s (permissions %s)\n", v.Fingerprint, strings.Join(v.Permissions, ", "))
	return nil
}

// recheckAtStart checks the serving user's stored key again.
func recheckAtStart(ctx context.Context, st *stack, user, env string, logger *slog.Logger) {
	recheckUser(ctx, st.sys, user, env, logger)
}

// recheckUser checks a user's stored key again, which starts the user's
// actors and private stream.
func recheckUser(ctx context.Context, sys *actors.System, user, env string, logger *slog.Logger) {
	res, err := sys.Handle(ctx, &messages.ShowCredentialRequest{User: user, Environment: env}, messages.ActorSystem)
	if err != nil || !res.(*messages.CredentialView).Present {
		return
	}
	res, err = sys.Handle(ctx, &messages.RecheckCredentialRequest{User: user, Environment: env}, messages.ActorSystem)
	if err != nil {
		logger.Warn("could not re-check the exchange key at start", "user", user, "code", string(messages.CodeOf(err)))
		return
	}
	if v := res.(*messages.CredentialView); v.PermissionsChanged {
		logger.Warn("the exchange key's permissions changed; trading is blocked until it is replaced", "user", user, "offending", v.Offending)
	}
}

// Sim runs the simulator alone and prints its announcement as one JSON line
// (docs/simulator.md "Test endpoints"), then serves until ctx ends. It keeps its accounts in memory;
// its ids mix in a nonce drawn for this run, so --seed fixes prices and
// matching but two runs never hand out the same id.
func (r *Runtime) Sim(ctx context.Context, o cli.SimOptions, out cli.IO) error {
	nonce, err := newIDNonce()
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	srv, err := sim.Start(sim.Config{Seed: o.Seed, IDNonce: nonce, Logger: r.logger().With("component", "sim")}, o.Listen)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer srv.Close()
	line, err := json.Marshal(srv.Announcement())
	if err != nil {
		return cli.Refused("%v", err)
	}
	if _, err := fmt.Fprintf(out.Out, "%s\n", line); err != nil {
		return cli.Refused("%v", err)
	}
	<-ctx.Done()
	return nil
}

// Version prints the version.
func (r *Runtime) Version(out cli.IO) error {
	_, err := fmt.Fprintf(out.Out, "guarded-exchange %s\n", r.Release)
	return err
}
