package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// ErrNoServer means no server answers on the control socket; the caller may
// host the actors in-process instead.
var ErrNoServer = errors.New("no server is listening on the control socket")

// ControlClient sends typed commands to a running server over its control
// socket, one JSON line each way (SPEC §7).
type ControlClient struct {
	conn net.Conn
	r    *bufio.Reader
	seq  atomic.Int64
}

// dialRetry bounds how long DialControl keeps retrying a server whose
// accept queue is full (EAGAIN), e.g. while another process floods it.
const dialRetry = 5 * time.Second

// DialControl connects to the socket at path. A missing socket or a refused
// connection is ErrNoServer. A full accept queue is retried for a few
// seconds.
func DialControl(ctx context.Context, path string) (*ControlClient, error) {
	var d net.Dialer
	deadline := time.Now().Add(dialRetry)
	wait := 5 * time.Millisecond
	for {
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			return &ControlClient{conn: conn, r: bufio.NewReaderSize(conn, messages.MaxControlLine+1)}, nil
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

// Close closes the connection.
func (c *ControlClient) Close() error { return c.conn.Close() }

// Send delivers cmd and returns the server's typed answer, or its refusal
// as a *messages.Error.
func (c *ControlClient) Send(ctx context.Context, cmd messages.Command) (any, error) {
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
