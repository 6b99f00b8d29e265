package hostile

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// writeTimeout bounds one frame written to either side.
const writeTimeout = 10 * time.Second

// sendBuffer is how many frames wait for one client's writer. A full
// buffer makes Inject and Flood wait, as TCP would make a real venue wait.
const sendBuffer = 1024

// Proxy is the hostile stream. The zero value is not usable; call New.
type Proxy struct {
	upstream string
	ln       net.Listener
	srv      *http.Server
	upgrader websocket.Upgrader

	mu     sync.Mutex
	conns  map[*clientConn]struct{}
	filter func(msg []byte) [][]byte
	cond   *sync.Cond

	accepted   atomic.Int64
	subscribed atomic.Int64
	injected   atomic.Int64
}

// clientConn is one client connection and its upstream twin.
type clientConn struct {
	client     *websocket.Conn
	upstream   *websocket.Conn
	send       chan []byte
	done       chan struct{}
	once       sync.Once
	subscribed atomic.Bool
}

// New starts a proxy on 127.0.0.1 for the private stream at upstream (a
// ws:// URL of the simulator, path included).
func New(upstream string) (*Proxy, error) {
	if !strings.HasPrefix(upstream, "ws://127.") && !strings.HasPrefix(upstream, "ws://localhost") && !strings.HasPrefix(upstream, "ws://[::1]") {
		return nil, errors.New("hostile: the upstream must be a ws:// URL on loopback")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, ln: ln, conns: map[*clientConn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.upgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's WebSocket URL, to give the client in place of the
// simulator's private stream URL.
func (p *Proxy) URL() string {
	path := "/"
	if i := strings.Index(strings.TrimPrefix(p.upstream, "ws://"), "/"); i >= 0 {
		path = strings.TrimPrefix(p.upstream, "ws://")[i:]
	}
	return "ws://" + p.ln.Addr().String() + path
}

// Close stops the proxy and cuts every connection.
func (p *Proxy) Close() {
	_ = p.srv.Close()
	p.Cut()
}

// Accepted is how many client connections the proxy has accepted so far.
func (p *Proxy) Accepted() int { return int(p.accepted.Load()) }

// Subscriptions is how many client connections have been subscribed so
// far (the simulator acknowledged their subscribe).
func (p *Proxy) Subscriptions() int { return int(p.subscribed.Load()) }

// Injected is how many forged frames reached a client's writer.
func (p *Proxy) Injected() int { return int(p.injected.Load()) }

// SetFilter sets what happens to each frame the simulator sends the
// client: the filter returns the frames to send instead (nil drops it).
// Nil restores plain relaying.
func (p *Proxy) SetFilter(f func(msg []byte) [][]byte) {
	p.mu.Lock()
	p.filter = f
	p.mu.Unlock()
}

// WaitSubscribed waits until at least n client connections have been
// subscribed since the proxy started, and one of them is open.
func (p *Proxy) WaitSubscribed(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if int(p.subscribed.Load()) >= n && p.openSubscribedLocked() > 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		p.cond.Wait()
	}
}

func (p *Proxy) openSubscribedLocked() int {
	n := 0
	for c := range p.conns {
		if c.subscribed.Load() {
			n++
		}
	}
	return n
}

// Inject sends msg to every open, subscribed client connection, as if the
// venue had pushed it, and answers how many got it.
func (p *Proxy) Inject(msg []byte) int {
	n := 0
	for _, c := range p.subscribedConns() {
		if c.enqueue(msg) {
			p.injected.Add(1)
			n++
		}
	}
	return n
}

// Flood injects gen(0), gen(1), … at perSecond frames a second for d,
// perSecond × d frames in all unless ctx ends first, and answers how many
// it generated (a frame generated while no client is connected is lost,
// as a push to a cut connection is). It paces by the millisecond, so
// short bursts reach the rate without a timer per frame; a client that
// reads slowly slows it down, as TCP would.
func (p *Proxy) Flood(ctx context.Context, perSecond int, d time.Duration, gen func(i int) []byte) int {
	if perSecond <= 0 || d <= 0 {
		return 0
	}
	total := int(float64(perSecond) * d.Seconds())
	start := time.Now()
	sent := 0
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent < total {
		due := min(total, int(float64(perSecond)*time.Since(start).Seconds())+1)
		for ; sent < due && ctx.Err() == nil; sent++ {
			p.Inject(gen(sent))
		}
		if sent >= total {
			return sent
		}
		select {
		case <-ctx.Done():
			return sent
		case <-tick.C:
		}
	}
	return sent
}

// Cut closes every client connection now (and their upstream twins), as
// a venue that drops the stream does. The client is free to reconnect.
func (p *Proxy) Cut() {
	p.mu.Lock()
	list := make([]*clientConn, 0, len(p.conns))
	for c := range p.conns {
		list = append(list, c)
	}
	p.mu.Unlock()
	for _, c := range list {
		c.close()
	}
}

// Flap cuts the client's connections every period until the returned stop
// is called.
func (p *Proxy) Flap(period time.Duration) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.Cut()
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

func (p *Proxy) subscribedConns() []*clientConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := make([]*clientConn, 0, len(p.conns))
	for c := range p.conns {
		if c.subscribed.Load() {
			list = append(list, c)
		}
	}
	return list
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	up, resp, err := websocket.DefaultDialer.DialContext(r.Context(), p.upstream+queryOf(r), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		http.Error(w, "502 upstream refused", http.StatusBadGateway)
		return
	}
	client, err := p.upgrader.Upgrade(w, r, nil)
	if err != nil {
		_ = up.Close()
		return
	}
	p.accepted.Add(1)
	c := &clientConn{client: client, upstream: up, send: make(chan []byte, sendBuffer), done: make(chan struct{})}
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.cond.Broadcast()
		p.mu.Unlock()
	}()

	go c.writeLoop()
	// Upstream → client, through the filter.
	go func() {
		defer c.close()
		for {
			_, msg, err := up.ReadMessage()
			if err != nil {
				return
			}
			if isSubscribeAck(msg) && !c.subscribed.Swap(true) {
				// Mark subscribed once the ack is on its way, so an
				// injection never overtakes it.
				if !c.enqueue(msg) {
					return
				}
				p.subscribed.Add(1)
				p.mu.Lock()
				p.cond.Broadcast()
				p.mu.Unlock()
				continue
			}
			p.mu.Lock()
			f := p.filter
			p.mu.Unlock()
			out := [][]byte{msg}
			if f != nil {
				out = f(msg)
			}
			for _, m := range out {
				if !c.enqueue(m) {
					return
				}
			}
		}
	}()
	// Client → upstream, unchanged.
	for {
		typ, msg, err := client.ReadMessage()
		if err != nil {
			return
		}
		_ = up.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := up.WriteMessage(typ, msg); err != nil {
			return
		}
	}
}

func queryOf(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

// isSubscribeAck reports whether msg is a successful subscribe answer.
func isSubscribeAck(msg []byte) bool {
	var ack struct {
		Op      string `json:"op"`
		Success bool   `json:"success"`
	}
	return json.Unmarshal(msg, &ack) == nil && ack.Op == "subscribe" && ack.Success
}

// enqueue hands msg to the connection's writer, waiting while its buffer
// is full; false once the connection is closed.
func (c *clientConn) enqueue(msg []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.send <- msg:
		return true
	case <-c.done:
		return false
	}
}

func (c *clientConn) writeLoop() {
	defer c.close()
	for {
		select {
		case <-c.done:
			return
		case msg := <-c.send:
			_ = c.client.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := c.client.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		}
	}
}

func (c *clientConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.client.Close()
		_ = c.upstream.Close()
	})
}
