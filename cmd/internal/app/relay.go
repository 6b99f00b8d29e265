package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/mcp"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The MCP relay: several local MCP clients on one engine. The process
// that holds the home (serve, either transport) listens on
// <home>/run/mcp.sock (mode 0600, and only its own uid is served). A
// `serve --transport stdio` that finds the home locked connects there,
// names its user in one hello line, and from then on copies its stdin to
// the socket and the socket to its stdout. The engine serves that
// connection with a fresh MCP server for that user, behind the same stdio
// filter: it carries MCP traffic only, never a control command.

const (
	relaySocketName = "mcp.sock"
	relayVersion    = 1
	// relaySlots bounds the relayed sessions open at once.
	relaySlots = 16
	// relayHelloTimeout bounds the wait for the hello line and its answer.
	relayHelloTimeout = 5 * time.Second
)

// relayHello is the first line a relay client sends.
type relayHello struct {
	V    int    `json:"v"`
	User string `json:"user"`
	// Deny are the tools the relay client's --deny-tool withholds, added
	// to the engine's.
	Deny []string `json:"deny,omitempty"`
}

// relayAnswer answers the hello: ok, or the refusal.
type relayAnswer struct {
	V     int             `json:"v"`
	OK    bool            `json:"ok"`
	Error *messages.Error `json:"error,omitempty"`
}

func relayPath(p paths) string { return filepath.Join(p.run(), relaySocketName) }

// relayServer accepts relayed MCP sessions.
type relayServer struct {
	ln     *net.UnixListener
	sys    *actors.System
	opts   func(user string) mcp.Options
	logger *slog.Logger
	slots  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// listenRelay starts the relay listener. opts builds the MCP server
// options of a session for user.
func listenRelay(p paths, sys *actors.System, opts func(user string) mcp.Options, logger *slog.Logger) (*relayServer, error) {
	if err := os.MkdirAll(p.run(), 0o700); err != nil {
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	path := relayPath(p)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	tmp := path + fmt.Sprintf(".%d.tmp", os.Getpid())
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &relayServer{ln: ln, sys: sys, opts: opts, logger: logger, slots: make(chan struct{}, relaySlots),
		ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept(path)
	return s, nil
}

// Close stops accepting, ends every relayed session and waits for them.
func (s *relayServer) Close() {
	s.cancel()
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *relayServer) accept(path string) {
	defer s.wg.Done()
	defer os.Remove(path)
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				conn.Close()
			}()
			s.serve(conn)
		}()
	}
}

func (s *relayServer) refuse(conn net.Conn, e *messages.Error) {
	b, _ := json.Marshal(relayAnswer{V: relayVersion, Error: e})
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(append(b, '\n'))
}

// serve checks the peer and the hello, then runs one MCP session for the
// hello's user on the connection.
func (s *relayServer) serve(conn *net.UnixConn) {
	cred, err := cli.PeerCredOf(conn)
	if err != nil || cred.UID != uint32(os.Getuid()) {
		s.logger.Warn("relay: refused a peer that is not the server's uid")
		s.refuse(conn, &messages.Error{Code: messages.CodePermissionDenied, Message: "only the server's own uid may relay MCP sessions"})
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		s.refuse(conn, &messages.Error{Code: messages.CodeRateLimited, Message: "too many relayed sessions are open"})
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(relayHelloTimeout))
	br := bufio.NewReaderSize(conn, 64<<10)
	line, err := br.ReadSlice('\n')
	if err != nil {
		s.refuse(conn, messages.InvalidParams("hello", "send one hello line first"))
		return
	}
	var hello relayHello
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hello); err != nil || hello.V != relayVersion {
		s.refuse(conn, messages.InvalidParams("hello", "must be {\"v\":1,\"user\":NAME}"))
		return
	}
	if len(hello.Deny) > 64 || mcp.CheckDenyTools(hello.Deny) != nil {
		s.refuse(conn, messages.InvalidParams("deny", "must name tools of this server"))
		return
	}
	if !messages.UserNamePattern.MatchString(hello.User) {
		s.refuse(conn, messages.InvalidParams("user", "must be 1-64 of lowercase letters, digits, '.', '_' or '-'"))
		return
	}
	if _, err := s.sys.Handle(s.ctx, &messages.ShowPolicyRequest{User: hello.User}, messages.ActorSystem); err != nil {
		s.refuse(conn, messages.AsError(err))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	ok, _ := json.Marshal(relayAnswer{V: relayVersion, OK: true})
	if _, err := conn.Write(append(ok, '\n')); err != nil {
		return
	}
	o := s.opts(hello.User)
	for _, n := range hello.Deny {
		if !slices.Contains(o.DenyTools, n) {
			o.DenyTools = append(o.DenyTools, n)
		}
	}
	srv, err := mcp.NewServer(o)
	if err != nil {
		s.logger.Error("relay: cannot build the MCP server", "err", err.Error())
		return
	}
	logger := s.logger.With("user", hello.User)
	logger.Info("relay: MCP session opened")
	err = srv.Run(s.ctx, mcp.StdioTransport(br, conn, logger))
	logger.Info("relay: MCP session closed", "clean", err == nil || errors.Is(err, context.Canceled))
}

// errNoRelay: no engine answers on the relay socket.
var errNoRelay = errors.New("no engine answers on the relay socket")

// relayStdio connects this process's stdio to the running engine's MCP
// relay for user, and copies until either side ends.
func (r *Runtime) relayStdio(ctx context.Context, p paths, user string, deny []string) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "unix", relayPath(p))
	if err != nil {
		return errNoRelay
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	hello, _ := json.Marshal(relayHello{V: relayVersion, User: user, Deny: deny})
	_ = conn.SetDeadline(time.Now().Add(relayHelloTimeout))
	if _, err := conn.Write(append(hello, '\n')); err != nil {
		return errNoRelay
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return errNoRelay
	}
	var ans relayAnswer
	if err := json.Unmarshal(line, &ans); err != nil || ans.V != relayVersion {
		return cli.CannotStart("the running engine answered the relay in a form this version does not read; use the engine's binary")
	}
	if !ans.OK {
		msg := "refused"
		if ans.Error != nil {
			msg = ans.Error.Error()
		}
		return cli.CannotStart("the running engine refused to relay this session: %s", msg)
	}
	_ = conn.SetDeadline(time.Time{})
	r.logger().Info("another process serves this home: relaying this MCP session to it", "user", user)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	go func() {
		_, _ = io.Copy(conn, r.Stdin)
		_ = conn.CloseWrite()
	}()
	if _, err := io.Copy(r.Stdout, br); err != nil && ctx.Err() == nil {
		return cli.Refused("relay: %v", err)
	}
	return nil
}

// startRelay starts the relay listener of a serving process: each relayed
// session is an MCP server for its user, as on stdio.
// The engine's deny list applies to every relayed session, and the tools
// a relay client withholds (its own --deny-tool) are added for its session.
func (r *Runtime) startRelay(p paths, st *stack, venueName string, logger *slog.Logger, deny []string, presence *mcp.Presence, startup mcp.StartupHold) (*relayServer, error) {
	return listenRelay(p, st.sys, func(user string) mcp.Options {
		return mcp.Options{
			Backend: st.sys, Principal: policyPrincipal(st.sys, user), Venue: venueName, Version: r.Release,
			Logger: logger.With("component", "mcp", "user", user), DenyTools: slices.Clone(deny), Presence: presence, StateKey: st.stateKey,
			Startup: startup,
		}
	}, logger.With("component", "relay"))
}
