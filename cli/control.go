package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// ErrNoServer means no server answers on the control socket; the caller may
// host the actors in-process instead.
var ErrNoServer = errors.New("no server is listening on the control socket")

// ControlClient sends typed commands to a running server over its control
// socket, one JSON line each way (docs/commands.md "The control socket").
type ControlClient struct {
	conn net.Conn
	r    *bufio.Reader
	seq  atomic.Int64
	// path is the socket; peer the uid the kernel reports for the
	// listening process; self this process's uid.
	path       string
	peer, self uint32
}

// dialRetry bounds how long DialControl keeps retrying a server whose
// accept queue is full (EAGAIN), e.g. while another process floods it.
const dialRetry = 5 * time.Second

// DialControl connects to the socket at path, where the caller expects
// the server to run as uid server (derived from the socket's directory
// before dialing, see control.Layout.ServerUID). The listening process's
// uid (the kernel's peer credentials, PeerCredOf) must be server or this process's own; anything else
// is refused before a byte is written, and is not ErrNoServer, so the
// caller does not fall back to running in-process either. A missing
// socket or a refused connection is ErrNoServer. A full accept queue is
// retried for a few seconds.
func DialControl(ctx context.Context, path string, server uint32) (*ControlClient, error) {
	var d net.Dialer
	deadline := time.Now().Add(dialRetry)
	wait := 5 * time.Millisecond
	self := uint32(os.Getuid())
	for {
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			peer, err := peerUID(conn)
			if err != nil {
				conn.Close()
				return nil, fmt.Errorf("control socket %s: cannot tell who listens: %w", path, err)
			}
			if peer != self && peer != server {
				conn.Close()
				return nil, fmt.Errorf("control socket %s: the process listening there runs as uid %d, but the server runs as uid %d (or yours, %d): nothing was sent", path, peer, server, self)
			}
			return &ControlClient{conn: conn, r: bufio.NewReaderSize(conn, messages.MaxControlLine+1), path: path, peer: peer, self: self}, nil
		}
		switch {
		case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
		case errors.Is(err, syscall.EACCES):
			return nil, fmt.Errorf("control socket: %w (an approver uid reaches the server through GX_CONTROL_SOCKET)", err)
		case errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline) && ctx.Err() == nil:
			time.Sleep(wait)
			wait = min(2*wait, 200*time.Millisecond)
		default:
			return nil, fmt.Errorf("control socket: %w", err)
		}
	}
}

// peerUID is the uid of the process that listens on conn's other end, as
// the kernel recorded it when that process called listen.
func peerUID(conn net.Conn) (uint32, error) {
	cred, err := PeerCredOf(conn)
	return cred.UID, err
}

// ownerOnly reports whether cmd may go only to a server of the caller's
// own uid: the key commands, one of which carries the exchange secret.
func ownerOnly(cmd messages.Command) bool {
	return strings.HasPrefix(cmd.CommandName(), "keys.")
}

// Close closes the connection.
func (c *ControlClient) Close() error { return c.conn.Close() }

// ServerConn is one connection to the running server's control socket:
// the commands sent over it are answered in turn, each before the next is
// read (docs/commands.md "The control socket"). *ControlClient is one.
type ServerConn interface {
	// Send delivers cmd and returns the server's typed answer.
	Send(ctx context.Context, cmd messages.Command) (any, error)
	// Hold keeps the connection open while the caller waits for a human,
	// until the returned function is called; that function reports an
	// error when the connection broke meanwhile (nothing was sent on it,
	// so the caller may dial again).
	Hold() (release func() error)
	// Close closes the connection.
	Close() error
}

var _ ServerConn = (*ControlClient)(nil)

// holdEvery is how often Hold writes its blank line: well inside the
// server's idle limit (control.DefaultIdle, 5 s).
const holdEvery = time.Second

// holdMax bounds how long Hold keeps the connection for a human: an open
// prompt must not keep one of the uid's few connection slots (which a
// `kill-switch on` from another terminal needs) for as long as the
// terminal stays open. A human slower than this costs a second
// connection (decisions D133).
var holdMax = 20 * time.Second

// errHoldEnded is what release reports when Hold gave the connection up
// after holdMax: nothing was sent on it, so the caller dials again.
var errHoldEnded = errors.New("control socket: the connection was released while the human read the plan")

// Hold writes a blank line every holdEvery until release is called, for at
// most holdMax; then it closes the connection, and release reports it. The
// server ignores blank lines but counts them as activity, so a
// connection whose human takes a few seconds to read the plan is not
// closed as idle. release stops the writes before it returns, so Send may
// follow.
func (c *ControlClient) Hold() (release func() error) {
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		t := time.NewTicker(holdEvery)
		defer t.Stop()
		expire := time.NewTimer(holdMax)
		defer expire.Stop()
		for {
			select {
			case <-stop:
				done <- nil
				return
			case <-expire.C:
				c.conn.Close()
				done <- errHoldEnded
				return
			case <-t.C:
				_ = c.conn.SetWriteDeadline(time.Now().Add(holdEvery))
				if _, err := c.conn.Write([]byte{'\n'}); err != nil {
					done <- fmt.Errorf("control socket: %w", err)
					return
				}
			}
		}
	}()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			close(stop)
			err = <-done
		})
		return err
	}
}

// Send delivers cmd and returns the server's typed answer, or its refusal
// as a *messages.Error.
func (c *ControlClient) Send(ctx context.Context, cmd messages.Command) (any, error) {
	if ownerOnly(cmd) && c.peer != c.self {
		return nil, fmt.Errorf("control socket %s: the server runs as uid %d, not yours (%d); key commands go only to a server of your own uid: nothing was sent", c.path, c.peer, c.self)
	}
	body, err := messages.EncodeCommand(cmd)
	if err != nil {
		return nil, err
	}
	id := strconv.FormatInt(c.seq.Add(1), 10)
	line, err := json.Marshal(messages.ControlRequest{V: messages.ControlVersion, ID: id, Type: cmd.CommandName(), Body: body})
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
	} else {
		_ = c.conn.SetDeadline(time.Now().Add(60 * time.Second))
	}
	var resp messages.ControlResponse
	if _, werr := c.conn.Write(append(line, '\n')); werr != nil {
		// The server refuses a peer (a uid it does not allow, or one
		// holding all its slots) with one line and closes before reading:
		// that answer may be waiting even though the write failed.
		_ = c.conn.SetReadDeadline(time.Now().Add(time.Second))
		raw, err := c.r.ReadBytes('\n')
		if err != nil || json.Unmarshal(raw, &resp) != nil || resp.OK {
			return nil, fmt.Errorf("control socket: %w", werr)
		}
	} else {
		raw, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("control socket: %w", err)
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			return nil, fmt.Errorf("control socket: bad answer: %w", err)
		}
	}
	if resp.V != messages.ControlVersion {
		return nil, fmt.Errorf("control socket: the server speaks protocol version %d, this CLI version %d; use the CLI of the server's release", resp.V, messages.ControlVersion)
	}
	if !resp.OK {
		if resp.Error == nil {
			return nil, errors.New("control socket: refusal without an error")
		}
		return nil, resp.Error
	}
	out := messages.NewResult(cmd.CommandName())
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return nil, fmt.Errorf("control socket: bad result: %w", err)
	}
	return out, nil
}
