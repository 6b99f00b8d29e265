package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Backend runs the commands that arrive on the socket and journals the
// refusals; *actors.System is one.
type Backend interface {
	Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error)
	JournalJSON(ctx context.Context, typ messages.RecordType, user, actorName string, v any) (wal.Record, error)
}

// Defaults of Limits.
const (
	DefaultOwnerConns      = 16
	DefaultApproverConns   = 4
	DefaultIdle            = 5 * time.Second
	DefaultRefusalInterval = time.Minute
)

// Limits bound what peers may hold. Zero values mean the defaults.
type Limits struct {
	// OwnerConns is how many connections the server's own uid may hold;
	// no other uid can take them.
	OwnerConns int
	// ApproverConns is how many connections each approver uid may hold.
	// Every allowed uid has slots of its own, so no uid can take another's.
	ApproverConns int
	// Idle is how long a connection may wait for its next request (or the
	// rest of one) before it is closed.
	Idle time.Duration
	// RefusalInterval is how often the refusals of one uid are journaled
	// (one control_refused record with a count) after the first.
	RefusalInterval time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.OwnerConns <= 0 {
		l.OwnerConns = DefaultOwnerConns
	}
	if l.ApproverConns <= 0 {
		l.ApproverConns = DefaultApproverConns
	}
	if l.Idle <= 0 {
		l.Idle = DefaultIdle
	}
	if l.RefusalInterval <= 0 {
		l.RefusalInterval = DefaultRefusalInterval
	}
	return l
}

// Server serves the control socket (docs/commands.md "The control socket"): line-delimited JSON carrying
// typed commands, for peers whose uid is the server's own or an approver's
// (checked with SO_PEERCRED when the connection is accepted). A refused
// peer is answered and closed at once and takes no slot; its refusals are
// journaled at most once per uid per interval. A bad line gets an error
// answer; nothing a peer sends can stop the server.
type Server struct {
	ln      *net.UnixListener
	layout  Layout
	backend Backend
	logger  *slog.Logger
	limits  Limits
	refused *tally // peers whose uid is not allowed: journaled
	busy    *tally // allowed peers over their slots: logged
	wg      sync.WaitGroup
	// accepted counts the connections accepted, refused ones included.
	accepted atomic.Uint64

	mu     sync.Mutex // guards conns, held and closed
	conns  map[net.Conn]struct{}
	held   map[uint32]int // open connections per uid
	closed bool           // Close has run: no connection is admitted
}

// Listen prepares the socket's directory, removes a stale socket and
// serves l.Path. The caller holds the home lock; a socket outside the home
// that still answers belongs to another server, and Listen refuses it.
func Listen(l Layout, backend Backend, logger *slog.Logger, limits Limits) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := l.prepareDir(); err != nil {
		return nil, fmt.Errorf("control socket directory: %w", err)
	}
	if err := removeStale(l.Path); err != nil {
		return nil, err
	}
	// Bind under a temporary name, set the mode, then rename: the socket
	// appears at its path already listening and with its final mode, so a
	// peer never meets it half set up.
	tmp := tempSocketName(l.Dir)
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, l.SocketMode()); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, l.Path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	s := &Server{ln: ln, layout: l, backend: backend, logger: logger, limits: limits.withDefaults(),
		conns: map[net.Conn]struct{}{}, held: map[uint32]int{}}
	s.refused = newTally(s.limits.RefusalInterval, s.journalRefusal)
	s.busy = newTally(s.limits.RefusalInterval, func(uid int64, _ int32, count int) {
		s.logger.Warn("control socket: connections refused, the uid holds all its slots", "uid", uid, "count", count)
	})
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// tempSocketName is where Listen binds before the rename: short, so that
// it fits a Unix socket path whenever the directory leaves room for
// SocketPath's check.
func tempSocketName(dir string) string {
	return filepath.Join(dir, fmt.Sprintf(".gx%d", os.Getpid()%10000000))
}

// removeStale removes an old socket at path. Anything but a socket is
// refused, and so is a socket a live server still answers on.
func removeStale(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("control socket: %s exists and is not a socket; remove it or choose another %s", path, EnvSocket)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("control socket: another server listens on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Path is the socket the server listens on.
func (s *Server) Path() string { return s.layout.Path }

// Accepted is how many connections the server has accepted so far,
// refused peers included.
func (s *Server) Accepted() uint64 { return s.accepted.Load() }

// Close stops accepting, closes every connection, waits for them and
// journals the refusals still counted.
func (s *Server) Close() {
	s.ln.Close()
	_ = os.Remove(s.layout.Path)
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.refused.close()
	s.busy.close()
}

// allowed reports whether uid may use the socket at all.
func (s *Server) allowed(uid uint32) bool {
	return uid == s.layout.Self || slices.Contains(s.layout.Approvers, uid)
}

// take claims a slot for uid: errFull if it holds all of its own,
// net.ErrClosed once the server is closing.
func (s *Server) take(uid uint32, conn net.Conn) error {
	limit := s.limits.ApproverConns
	if uid == s.layout.Self {
		limit = s.limits.OwnerConns
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return net.ErrClosed
	}
	if s.held[uid] >= limit {
		return errFull
	}
	s.held[uid]++
	s.conns[conn] = struct{}{}
	return nil
}

var errFull = errors.New("the uid holds all its slots")

func (s *Server) release(uid uint32, conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, conn)
	if s.held[uid]--; s.held[uid] <= 0 {
		delete(s.held, uid)
	}
}

// accept checks each peer before it gets a goroutine: a refused uid or a
// uid without a free slot is answered in one short write and closed here.
func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.logger.Warn("control socket accept", "err", err.Error())
			time.Sleep(50 * time.Millisecond)
			continue
		}
		s.accepted.Add(1)
		cred, err := cli.PeerCredOf(conn)
		if err != nil || !s.allowed(cred.UID) {
			uid, pid := int64(-1), int32(0)
			if err == nil {
				uid, pid = int64(cred.UID), cred.PID
			}
			s.refused.add(uid, pid)
			refuseConn(conn, &messages.Error{
				Code:     messages.CodePermissionDenied,
				Message:  "this uid may not use the control socket",
				NextStep: "run the command as the server's user, or have the operator add your uid to " + EnvApprovers,
			})
			continue
		}
		if err := s.take(cred.UID, conn); errors.Is(err, net.ErrClosed) {
			conn.Close()
			return
		} else if err != nil {
			s.busy.add(int64(cred.UID), cred.PID)
			refuseConn(conn, &messages.Error{Code: messages.CodeRateLimited, Message: "too many control connections from this uid",
				NextStep: "close idle connections, or retry in a moment", RetryAfterS: 1})
			continue
		}
		p := peer{uid: cred.UID, pid: cred.PID, approverOnly: cred.UID != s.layout.Self}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.release(p.uid, conn)
				conn.Close()
			}()
			s.serve(conn, p)
		}()
	}
}

// refuseConn writes one answer without waiting for the peer and closes.
func refuseConn(conn *net.UnixConn, e *messages.Error) {
	b, _ := json.Marshal(messages.ControlResponse{V: messages.ControlVersion, Error: e})
	_ = conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	_, _ = conn.Write(append(b, '\n'))
	conn.Close()
}

// journalRefusal writes one control_refused record for count refusals of
// uid (the tally calls it at most once per uid per interval, plus once
// for the first refusal).
func (s *Server) journalRefusal(uid int64, pid int32, count int) {
	s.logger.Warn("control socket: peer refused", "uid", uid, "pid", pid, "count", count)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.backend.JournalJSON(ctx, messages.RecordControlRefused, "", messages.ActorSystem, map[string]any{
		"reason": "peer uid not allowed", "peer_uid": uid, "peer_pid": pid, "count": count,
		"interval_s": int(s.limits.RefusalInterval / time.Second),
	}); err != nil {
		s.logger.Warn("control socket: could not journal a refusal", "code", string(messages.CodeOf(err)))
	}
}

// peer is who is on a control connection.
type peer struct {
	uid uint32
	pid int32
	// approverOnly: an approver uid, not the server's own. It gets the
	// approver role, which may read and turn a kill switch on
	// (messages.Permit).
	approverOnly bool
}

func (s *Server) serve(conn *net.UnixConn, p peer) {
	ctx := context.Background()
	w := bufio.NewWriter(conn)
	answer := func(resp messages.ControlResponse) bool {
		resp.V = messages.ControlVersion
		b, _ := json.Marshal(resp)
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(append(b, '\n')); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	r := bufio.NewReaderSize(conn, messages.MaxControlLine+1)
	for {
		_ = conn.SetReadDeadline(time.Now().Add(s.limits.Idle))
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.logger.Warn("control socket: oversize line", "uid", p.uid)
			answer(messages.ControlResponse{Error: messages.InvalidParams("line", fmt.Sprintf("longer than %d bytes", messages.MaxControlLine))})
			return // the rest of the line cannot be framed; drop the connection
		}
		if err != nil && len(bytes.TrimSpace(line)) == 0 {
			return // EOF or idle
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !answer(s.handle(ctx, line, p)) {
			return
		}
		if err != nil {
			return
		}
	}
}

// checkVersion reads the line's protocol version before anything else, so
// that a request of another version gets a version error even if its
// other fields differ too.
func checkVersion(line []byte) *messages.Error {
	var probe struct {
		V json.RawMessage `json:"v"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return messages.InvalidParams("line", "must be one JSON object {v, id, type, body}")
	}
	want := strconv.Itoa(messages.ControlVersion)
	if len(probe.V) == 0 || string(probe.V) == "null" {
		return messages.InvalidParams("v", "missing; every request carries the protocol version, and this server speaks version "+want)
	}
	var v int
	if err := json.Unmarshal(probe.V, &v); err != nil || v != messages.ControlVersion {
		return messages.InvalidParams("v", "unsupported protocol version; this server speaks version "+want)
	}
	return nil
}

// handle decodes one request line and runs it through the one code path.
func (s *Server) handle(ctx context.Context, line []byte, p peer) messages.ControlResponse {
	if e := checkVersion(line); e != nil {
		return messages.ControlResponse{Error: e}
	}
	var req messages.ControlRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return messages.ControlResponse{Error: messages.InvalidParams("line", "must be one JSON object {v, id, type, body}")}
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
	origin := messages.CLIOrigin(cmd, messages.ChannelSocket, int64(p.uid), int64(p.pid), p.approverOnly)
	res, err := s.backend.Submit(ctx, cmd, origin)
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
