package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

const controlSocketName = "control.sock"

func (p paths) controlSocket() string { return filepath.Join(p.run(), controlSocketName) }

// controlIdle is how long a control connection may sit without a request.
const controlIdle = 5 * time.Minute

// maxControlConns bounds the open control connections, so a local process
// cannot use up the server's file descriptors.
const maxControlConns = 32

// controlServer serves the control socket (SPEC §7): line-delimited JSON
// carrying typed commands, for peers whose uid is the server's own or in
// GX_APPROVER_UIDS (checked with SO_PEERCRED). A bad line gets an error
// answer; nothing a peer sends can stop the server.
type controlServer struct {
	ln      *net.UnixListener
	sys     *actors.System
	logger  *slog.Logger
	self    uint32   // the server's uid: may run every command
	allowed []uint32 // self and GX_APPROVER_UIDS
	wg      sync.WaitGroup
	mu      sync.Mutex // guards conns
	conns   map[net.Conn]struct{}
}

// parseApproverUIDs reads GX_APPROVER_UIDS (comma-separated uids). A bad
// entry fails closed: the server refuses to start.
func parseApproverUIDs(s string) ([]uint32, error) {
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("GX_APPROVER_UIDS: %q is not a uid", f)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// startControl listens on <home>/run/control.sock: the directory 0700, the
// socket 0600. When GX_APPROVER_UIDS names other uids, they must be able to
// connect, so the directory becomes 0711 and the socket 0666; the peer-uid
// check (SO_PEERCRED) is then the gate (docs/decisions.md D16). The caller
// holds the home lock, so an old socket file is stale and removed.
func startControl(p paths, sys *actors.System, logger *slog.Logger, approvers []uint32) (*controlServer, error) {
	self := uint32(os.Getuid())
	dirMode, sockMode := os.FileMode(0o700), os.FileMode(0o600)
	if slices.ContainsFunc(approvers, func(u uint32) bool { return u != self }) {
		dirMode, sockMode = 0o711, 0o666
	}
	if err := os.MkdirAll(p.run(), 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(p.run(), dirMode); err != nil {
		return nil, err
	}
	path := p.controlSocket()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, sockMode); err != nil {
		ln.Close()
		return nil, err
	}
	cs := &controlServer{ln: ln, sys: sys, logger: logger, self: self, allowed: append([]uint32{self}, approvers...), conns: map[net.Conn]struct{}{}}
	cs.wg.Add(1)
	go cs.accept()
	return cs, nil
}

func (cs *controlServer) accept() {
	defer cs.wg.Done()
	for {
		conn, err := cs.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			cs.logger.Warn("control socket accept", "err", err.Error())
			time.Sleep(50 * time.Millisecond)
			continue
		}
		cs.mu.Lock()
		full := len(cs.conns) >= maxControlConns
		if !full {
			cs.conns[conn] = struct{}{}
		}
		cs.mu.Unlock()
		if full {
			cs.logger.Warn("control socket: too many connections; refusing one")
			b, _ := json.Marshal(messages.ControlResponse{Error: &messages.Error{Code: messages.CodeRateLimited, Message: "too many control connections", NextStep: "retry in a moment", RetryAfterS: 1}})
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = conn.Write(append(b, '\n'))
			conn.Close()
			continue
		}
		cs.wg.Add(1)
		go func() {
			defer cs.wg.Done()
			defer func() {
				cs.mu.Lock()
				delete(cs.conns, conn)
				cs.mu.Unlock()
				conn.Close()
			}()
			cs.serve(conn)
		}()
	}
}

// close stops accepting, closes every connection and waits for them.
func (cs *controlServer) close() {
	cs.ln.Close()
	cs.mu.Lock()
	for c := range cs.conns {
		c.Close()
	}
	cs.mu.Unlock()
	cs.wg.Wait()
}

// peerCred returns the connecting process's credentials from the kernel.
func peerCred(conn *net.UnixConn) (*syscall.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	err = raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err != nil {
		return nil, err
	}
	return cred, cerr
}

func (cs *controlServer) serve(conn *net.UnixConn) {
	ctx := context.Background()
	w := bufio.NewWriter(conn)
	answer := func(resp messages.ControlResponse) bool {
		b, _ := json.Marshal(resp)
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(append(b, '\n')); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	refuse := func(id string, e *messages.Error) bool { return answer(messages.ControlResponse{ID: id, Error: e}) }

	cred, err := peerCred(conn)
	if err != nil || !slices.Contains(cs.allowed, cred.Uid) {
		uid := int64(-1)
		pid := int32(0)
		if cred != nil {
			uid, pid = int64(cred.Uid), cred.Pid
		}
		cs.logger.Warn("control socket: peer refused", "uid", uid, "pid", pid)
		_, _ = cs.sys.JournalJSON(ctx, messages.RecordControlRefused, "", messages.ActorSystem, map[string]any{
			"reason": "peer uid not allowed", "peer_uid": uid, "peer_pid": pid,
		})
		refuse("", &messages.Error{
			Code:     messages.CodePermissionDenied,
			Message:  "this uid may not use the control socket",
			NextStep: "run the command as the server's user, or have the operator add your uid to GX_APPROVER_UIDS",
		})
		return
	}
	peer := peerOf{uid: cred.Uid, pid: cred.Pid, approverOnly: cred.Uid != cs.self}
	r := bufio.NewReaderSize(conn, messages.MaxControlLine+1)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(controlIdle))
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			cs.logger.Warn("control socket: oversize line", "uid", cred.Uid)
			refuse("", messages.InvalidParams("line", fmt.Sprintf("longer than %d bytes", messages.MaxControlLine)))
			return // the rest of the line cannot be framed; drop the connection
		}
		if err != nil && len(bytes.TrimSpace(line)) == 0 {
			return // EOF or idle
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !answer(cs.handle(ctx, line, peer)) {
			return
		}
		if err != nil {
			return
		}
	}
}

// peerOf is who is on a control connection.
type peerOf struct {
	uid uint32
	pid int32
	// approverOnly: a uid from GX_APPROVER_UIDS, not the server's own. It
	// gets the approver role, which may read and turn a kill switch on
	// (messages.Permit; docs/decisions.md D16).
	approverOnly bool
}

// handle decodes one request line and runs it through the one code path.
func (cs *controlServer) handle(ctx context.Context, line []byte, peer peerOf) messages.ControlResponse {
	var req messages.ControlRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return messages.ControlResponse{Error: messages.InvalidParams("line", "must be one JSON object {id, type, body}")}
	}
	id := sanitizeID(req.ID)
	cmd, ok := messages.NewCommand(req.Type)
	if !ok {
		return messages.ControlResponse{ID: id, Error: messages.InvalidParams("type", "unknown message type")}
	}
	if len(req.Body) > 0 {
		bd := json.NewDecoder(bytes.NewReader(req.Body))
		bd.DisallowUnknownFields()
		if err := bd.Decode(cmd); err != nil {
			return messages.ControlResponse{ID: id, Error: messages.InvalidParams("body", "does not match the message type")}
		}
	}
	origin := messages.CLIOrigin(cmd, messages.ChannelSocket, int64(peer.uid), int64(peer.pid), peer.approverOnly)
	res, err := cs.sys.Submit(ctx, cmd, origin)
	if err != nil {
		return messages.ControlResponse{ID: id, Error: messages.AsError(err)}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return messages.ControlResponse{ID: id, Error: messages.Internal(err)}
	}
	return messages.ControlResponse{ID: id, OK: true, Result: raw}
}

// sanitizeID keeps a request id only if it is short and plain.
func sanitizeID(id string) string {
	if len(id) > 64 {
		return ""
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return ""
		}
	}
	return id
}

// Deliver sends cmd over the control socket when a server runs; otherwise
// it hosts the same actors in-process under the home lock, applies the
// command, waits for the journal, and stops. One code path either way:
// actors.System.Handle.
func (r *Runtime) Deliver(ctx context.Context, g *cli.Globals, cmd messages.Command) (any, error) {
	p, err := resolvePaths(g)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	key, err := checkInstallation(p)
	if err != nil {
		return nil, cli.CannotStart("%v", err)
	}
	client, err := cli.DialControl(ctx, p.controlSocket())
	if err == nil {
		defer client.Close()
		return client.Send(ctx, cmd)
	}
	if !errors.Is(err, cli.ErrNoServer) {
		return nil, cli.Refused("%v", err)
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
