package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// The embedded paper venue (docs/commands.md "Venues") is served in-process: it has no
// port and no path, so nothing but the process that started it can reach
// it. Its only ways in are Transport, which serves REST requests by calling
// its handler directly, and InProcessServer.DialContext, which a WebSocket
// client takes as websocket.Dialer.NetDialContext. The test API under /sim/
// does not exist on it, and it holds no key until ProvisionKey registers one.

// InProcessHost is the host name of an in-process simulator's URLs. The
// .invalid top-level domain never resolves (RFC 2606), so a client that
// was not handed the in-process dialer fails instead of reaching anything.
const InProcessHost = "paper.invalid"

// InProcessServer is a simulator served over an in-process listener.
type InProcessServer struct {
	sim       *Sim
	ln        *pipeListener
	srv       *http.Server
	rest      *directTransport
	closed    chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

// StartInProcess builds a simulator from cfg and serves it in the
// background over an in-process listener, with the test API off. The
// pre-provisioned key of New is removed (it derives from the seed, so it is
// public): the simulator accepts only the keys given to ProvisionKey.
// cfg.StartingBalances is ignored; ProvisionKey takes each key's wallet.
// With cfg.StatePath, the accounts stored there come back as their keys
// are provisioned; a state file that cannot be read is an error.
func StartInProcess(cfg Config) (*InProcessServer, error) {
	cfg.StartingBalances = nil
	s := New(cfg)
	s.mu.Lock()
	if k := s.keys[s.defaultKey.APIKey]; k != nil {
		delete(s.keys, k.key)
		s.accounts = slices.DeleteFunc(s.accounts, func(a *account) bool { return a == k.acct })
	}
	s.defaultKey = Key{}
	if cfg.StatePath != "" {
		if err := s.openStateLocked(cfg.StatePath); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	s.mu.Unlock()

	ln := newPipeListener()
	srv := &http.Server{
		Handler:           withoutTestAPI(s.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	closed := make(chan struct{})
	p := &InProcessServer{sim: s, ln: ln, srv: srv, closed: closed, done: make(chan struct{}),
		rest: &directTransport{handler: srv.Handler, log: s.log, closed: closed}}
	go func() {
		defer close(p.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("sim: serve in-process", "err", err)
		}
	}()
	s.log.Info("sim: serving in-process (no port, no test API)")
	return p, nil
}

// withoutTestAPI answers 404 for every /sim path, as if the test API did
// not exist, and hands everything else to h. It matches the same decoded
// path the simulator routes on.
func withoutTestAPI(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/sim" || strings.HasPrefix(p, "/sim/") {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Sim returns the simulator the server serves.
func (p *InProcessServer) Sim() *Sim { return p.sim }

// BaseURL is the REST root to give a client that uses Transport.
func (p *InProcessServer) BaseURL() string { return "http://" + InProcessHost }

// WSPrivateURL is the private stream's URL for a WebSocket dialer whose
// NetDialContext is DialContext.
func (p *InProcessServer) WSPrivateURL() string { return "ws://" + InProcessHost + pathWSPrivate }

// WSPublicURL is a public stream's URL (category linear or spot).
func (p *InProcessServer) WSPublicURL(category string) string {
	if category == "spot" {
		return "ws://" + InProcessHost + pathWSPublicSpot
	}
	return "ws://" + InProcessHost + pathWSPublicLinear
}

// Transport is the REST way in: a round tripper that serves each request
// by calling the simulator's handler in this process, without a connection
// (D211 in docs/decisions.md), and answers only URLs of InProcessHost. It
// never uses a proxy, and fails every request once the server is closed.
func (p *InProcessServer) Transport() http.RoundTripper { return p.rest }

// DialContext opens a connection to the simulator. address must name
// InProcessHost (any port), so a client configured with another URL fails
// instead of silently reaching the paper venue; network must be tcp.
func (p *InProcessServer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	if !strings.HasPrefix(network, "tcp") || !strings.EqualFold(host, InProcessHost) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("the in-process simulator answers only %s, not %q", InProcessHost, address)}
	}
	return p.ln.dial(ctx)
}

// Close stops serving, closes every HTTP and WebSocket connection and waits
// for the serve goroutine to end. Later dials and REST requests fail.
func (p *InProcessServer) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	err := p.srv.Close()
	p.sim.shutdown()
	<-p.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ProvisionKey registers k on a new account with the trading permissions
// of the pre-provisioned key (ContractTrade:[Order,Position],
// Spot:[SpotTrade]) and the wallet balances (coin -> amount). It reports
// false and changes nothing when the API key is already registered: the
// registered secret stays, so a request signed with another secret is
// refused as Bybit refuses it. An empty key or secret is an error. A key
// whose account the state file (Config.StatePath) keeps gets that account
// back, not a new wallet; a new account is written there at once.
func (s *Sim) ProvisionKey(k Key, balances map[string]decimal.Decimal) (bool, error) {
	if k.APIKey == "" || k.APISecret == "" {
		return false, errors.New("sim: a provisioned key needs an API key and a secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[k.APIKey] != nil {
		return false, nil
	}
	key := s.registerKeyLocked(k.APIKey, k.APISecret, false, defaultPermissions(), "provisioned")
	if !s.restoreLocked(key) {
		l := key.acct.ledgerLocked()
		for coin, amount := range balances {
			l.setBalanceLocked(coin, amount)
		}
		s.markChangedLocked()
		s.saveLocked()
	}
	return true, nil
}

// pipeListener is a net.Listener without an address: its connections come
// only from dial, each the server end of an anonymous connected pair whose
// other end dial returns.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next dial.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and later dials fail; connections already handed out
// stay open (http.Server closes its own).
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr names the listener; it is not an address anything can dial.
func (l *pipeListener) Addr() net.Addr { return inProcessAddr{} }

// dial hands one end of a new pair to Accept and returns the other.
func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: inProcessAddr{}, Err: net.ErrClosed}
	default:
	}
	client, server, err := connPair()
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: inProcessAddr{}, Err: err}
	}
	select {
	case l.conns <- inProcessConn{server}:
		return inProcessConn{client}, nil
	case <-l.closed:
		err = net.ErrClosed
	case <-ctx.Done():
		err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: inProcessAddr{}, Err: err}
}

// inProcessAddr is the address of both ends of an in-process connection.
type inProcessAddr struct{}

func (inProcessAddr) Network() string { return "in-process" }
func (inProcessAddr) String() string  { return "in-process" }

// inProcessConn gives an end of a pair the in-process address, so that the
// HTTP server's RemoteAddr says where a request came from.
type inProcessConn struct{ net.Conn }

func (inProcessConn) LocalAddr() net.Addr  { return inProcessAddr{} }
func (inProcessConn) RemoteAddr() net.Addr { return inProcessAddr{} }
