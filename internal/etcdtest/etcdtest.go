package etcdtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startTimeout bounds how long Start waits for the server to be ready; a
// single loopback member normally elects itself in well under a second.
const startTimeout = 20 * time.Second

// Server is one running embedded etcd member.
type Server struct {
	etcd     *embed.Etcd
	endpoint string
	stopOnce sync.Once
}

// Start starts a single-member etcd on loopback with random ports and a
// data directory under t.TempDir(), waits until it serves, and stops it
// when the test ends. It fails the test if the server does not come up.
func Start(t testing.TB) *Server {
	t.Helper()
	var lastErr error
	// A port picked free may be taken before etcd binds it: try again.
	for range 5 {
		s, err := start(t.TempDir())
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		lastErr = err
	}
	t.Fatalf("etcdtest: embedded etcd did not start: %v", lastErr)
	return nil
}

func start(dir string) (*Server, error) {
	clientURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// No metrics listener, no logs: a test reads its own output.
	cfg.ListenMetricsUrls = nil
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// The data lives in a temp dir for one test: fsync buys nothing.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(startTimeout):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("etcd was not ready in time")
	}
	return &Server{etcd: e, endpoint: e.Clients[0].Addr().String()}, nil
}

// freeURL returns http://127.0.0.1:PORT for a port free right now.
func freeURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	return url.Parse("http://" + addr)
}

// Endpoint returns the server's client address, HOST:PORT on loopback.
func (s *Server) Endpoint() string { return s.endpoint }

// Stop stops the server and waits for it; a second call does nothing.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { s.etcd.Close() })
}

// Proxy is a loopback TCP proxy in front of one address. Cut closes every
// connection through it and refuses new ones, as a network partition
// between a client and etcd would, while the server keeps running for
// everyone else.
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy on a random loopback port forwarding to target
// (HOST:PORT on loopback) and closes it when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: proxy listen: %v", err)
	}
	p := &Proxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Endpoint returns the proxy's address, HOST:PORT on loopback.
func (p *Proxy) Endpoint() string { return p.l.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil || !p.track(up) {
			c.Close()
			if up != nil {
				up.Close()
			}
			continue
		}
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// track registers c unless the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes every connection through the proxy and refuses new ones
// (they are accepted and closed at once) until the proxy is closed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Close cuts the proxy, stops listening and waits for its goroutines.
func (p *Proxy) Close() {
	p.Cut()
	p.l.Close()
	p.wg.Wait()
}
