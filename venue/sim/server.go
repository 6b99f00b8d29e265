package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Announcement is what `guarded-exchange sim` prints (docs/simulator.md "Test endpoints"): the base
// URLs of a running simulator and its pre-provisioned key.
type Announcement struct {
	REST           string `json:"rest"`
	WSPrivate      string `json:"ws_private"`
	WSPublicLinear string `json:"ws_public_linear"`
	WSPublicSpot   string `json:"ws_public_spot"`
	APIKey         string `json:"api_key"`
	APISecret      string `json:"api_secret"`
}

// Server is a simulator listening on a loopback address.
type Server struct {
	sim  *Sim
	ln   net.Listener
	srv  *http.Server
	addr string // host:port actually bound
	done chan struct{}
}

// ErrNotLoopback is returned by Start for an address that is not on
// loopback.
var ErrNotLoopback = errors.New("sim: refusing to listen on a non-loopback address")

// Start builds a simulator and serves it in the background on addr, which
// must name a loopback host ("127.0.0.1:0", "[::1]:8080", "localhost:0");
// any other host, including an empty one (all interfaces), is refused with
// an error wrapping ErrNotLoopback.
func Start(cfg Config, addr string) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sim: bad listen address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, addr)
	}
	if strings.EqualFold(host, "localhost") {
		// Resolve ourselves so we never bind whatever else "localhost"
		// might name on this machine.
		_, port, _ := net.SplitHostPort(addr)
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listen %s: %w", addr, err)
	}
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("%w: bound %s", ErrNotLoopback, ln.Addr())
	}
	s := New(cfg)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	server := &Server{sim: s, ln: ln, srv: srv, addr: tcp.String(), done: make(chan struct{})}
	go func() {
		defer close(server.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("sim: serve", "err", err)
		}
	}()
	s.log.Info("sim: listening", "addr", server.addr)
	return server, nil
}

// isLoopbackHost accepts "localhost" and loopback IP literals.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Sim returns the simulator the server serves.
func (s *Server) Sim() *Sim { return s.sim }

// Announcement returns the server's URLs and the default key.
func (s *Server) Announcement() Announcement {
	k := s.sim.DefaultKey()
	return Announcement{
		REST:           "http://" + s.addr,
		WSPrivate:      "ws://" + s.addr + pathWSPrivate,
		WSPublicLinear: "ws://" + s.addr + pathWSPublicLinear,
		WSPublicSpot:   "ws://" + s.addr + pathWSPublicSpot,
		APIKey:         k.APIKey,
		APISecret:      k.APISecret,
	}
}

// Close stops listening, closes every HTTP and WebSocket connection, and
// waits for the serve goroutine to end.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.sim.shutdown()
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
