package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of the stdio transport. A line over a limit is answered with a
// JSON-RPC error; it never reaches the SDK and never ends the session.
const (
	// MaxStdioLine bounds one JSON-RPC message read from stdin, in bytes.
	// Every request this server understands is a few KiB at most.
	MaxStdioLine = 1 << 20
	// MaxStdioDepth bounds the nesting of objects and arrays in one
	// message, well below the SDK decoder's 1,000 (exceeding that ends
	// the SDK's session).
	MaxStdioDepth = 64
	// MaxStdioIDLength bounds a string request id, in bytes.
	MaxStdioIDLength = 256
	// MaxInFlight bounds the requests of one session read but not yet
	// answered: at the bound the transport stops reading stdin until an
	// answer has been written, so a client that stops reading stdout
	// cannot make the server queue requests without end.
	MaxInFlight = 64
	// MaxStdioNotification bounds one notification line, in bytes. The
	// notifications a client sends (initialized, cancelled, progress,
	// roots/list_changed) are a few hundred bytes.
	MaxStdioNotification = 4 << 10
	// MaxPendingNotifications bounds the notifications handed to the SDK
	// and not known to be handled. The SDK handles notifications one at a
	// time, in order, in an unbounded queue that stops moving while an
	// answer it writes synchronously (initialize's, a refused call's)
	// waits for stdout; at the bound the transport stops reading stdin
	// until the SDK has caught up.
	MaxPendingNotifications = 16
)

// StdioTransport is the stdio transport of serve: newline-delimited
// JSON-RPC 2.0 on in and out. Only messages the SDK accepts reach it; every
// other line gets a JSON-RPC error answer of its own (-32700 for a line
// that is not JSON, -32600 for an invalid request, with its id when it has
// a valid one; a malformed response is logged and dropped, as JSON-RPC
// never answers a response), so no input line can end the session
// (docs/errors.md: never a dead session). At most MaxInFlight requests are read and
// unanswered at any time, and at most MaxPendingNotifications
// notifications of MaxStdioNotification bytes wait in the SDK. Error
// answers carry one fixed text per code and no data: they never repeat the
// request. out is never closed.
func StdioTransport(in io.Reader, out io.Writer, logger *slog.Logger) sdk.Transport {
	return &stdioTransport{in: in, out: out, logger: logger, maxInFlight: MaxInFlight, maxNotes: MaxPendingNotifications}
}

type stdioTransport struct {
	in          io.Reader
	out         io.Writer
	logger      *slog.Logger
	maxInFlight int
	maxNotes    int
	// waiting, when set, is called each time Read starts waiting for an
	// answer to free a slot or for the SDK to catch up on notifications
	// (tests observe the bounds with it).
	waiting func()
}

// Connect implements sdk.Transport. It may be called once.
func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	logger := t.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &stdioConn{
		logger:   logger,
		out:      t.out,
		lines:    make(chan inputLine),
		closed:   make(chan struct{}),
		slots:    make(chan struct{}, t.maxInFlight),
		inFlight: map[jsonrpc.ID]struct{}{},
		waiting:  t.waiting,
		maxNotes: max(t.maxNotes, 1),
	}
	go c.readLines(bufio.NewReaderSize(t.in, 64<<10))
	return c, nil
}

// inputLine is one line of stdin, or the error that ended the input.
type inputLine struct {
	line     []byte
	oversize bool
	err      error
}

// stdioConn is the sdk.Connection of StdioTransport. Read runs on the
// SDK's read goroutine; Write may be called concurrently, and every byte
// on out (the SDK's messages and the connection's own error answers) goes
// through write, one whole line under writeMu.
type stdioConn struct {
	logger *slog.Logger

	writeMu sync.Mutex
	out     io.Writer

	lines     chan inputLine // from readLines, unbuffered: at most one line read ahead
	closed    chan struct{}
	closeOnce sync.Once

	// slots holds one token per request read and not yet answered.
	slots chan struct{}
	// inFlight holds the ids of those requests; the SDK answers each one
	// exactly once, and would not answer a second request with an id in
	// use, so such a request is refused here.
	mu       sync.Mutex
	inFlight map[jsonrpc.ID]struct{}
	waiting  func()

	// notes counts the notifications handed to the SDK since it last
	// showed it had handled all of them; at maxNotes, Read hands it a
	// barrier instead: a ping with an id no client can send. The SDK
	// handles its queue in order, and notifications synchronously, so the
	// ping's answer (swallowed by Write) means every notification before
	// it is handled. Until then, Read keeps the notification in held and
	// reads nothing more. notes, held and heldUntil belong to Read's
	// goroutine; barrier, the channel Write closes on the answer, is
	// under mu.
	notes     int
	maxNotes  int
	held      jsonrpc.Message
	heldUntil chan struct{}
	barrier   chan struct{}
}

// barrierID is the id of the barrier ping: a string longer than
// MaxStdioIDLength, which the filter never admits from the client.
var barrierID, _ = jsonrpc.MakeID(strings.Repeat("barrier/", MaxStdioIDLength/8+1))

// readLines reads stdin line by line, dropping the bytes of a line past
// MaxStdioLine, and hands each line to Read.
func (c *stdioConn) readLines(r *bufio.Reader) {
	send := func(l inputLine) bool {
		select {
		case c.lines <- l:
			return true
		case <-c.closed:
			return false
		}
	}
	for {
		var line []byte
		oversize := false
		for {
			chunk, err := r.ReadSlice('\n')
			if !oversize {
				if len(line)+len(chunk) > MaxStdioLine+2 { // + "\r\n"
					oversize, line = true, nil
				} else {
					line = append(line, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if len(line) > 0 || oversize {
				if !send(inputLine{line: line, oversize: oversize}) {
					return
				}
			}
			if err != nil {
				send(inputLine{err: err})
				return
			}
			break
		}
	}
}

// Read implements sdk.Connection: it returns the next admitted message,
// answering every other line itself.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.held != nil {
		if err := c.awaitBarrier(ctx); err != nil {
			return nil, err
		}
		msg := c.held
		c.held, c.heldUntil, c.notes = nil, nil, 1
		return msg, nil
	}
	for {
		var in inputLine
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case in = <-c.lines:
		}
		if in.err != nil {
			return nil, in.err
		}
		msg, rej := admit(in.line, in.oversize)
		if rej != nil {
			if rej.answer {
				c.logger.Warn("stdin: answered an invalid line with an error", "code", rej.code, "reason", rej.message, "bytes", len(in.line))
				if err := c.write(rej.encode()); err != nil {
					return nil, err
				}
			} else if rej.code != 0 {
				c.logger.Warn("stdin: dropped an invalid response", "reason", rej.message, "bytes", len(in.line))
			}
			continue
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if !req.IsCall() {
			if c.notes < c.maxNotes {
				c.notes++
				return req, nil
			}
			c.held, c.heldUntil = req, make(chan struct{})
			c.mu.Lock()
			c.barrier = c.heldUntil
			c.mu.Unlock()
			return &jsonrpc.Request{ID: barrierID, Method: "ping"}, nil
		}
		c.mu.Lock()
		_, dup := c.inFlight[req.ID]
		c.mu.Unlock()
		if dup {
			rej := &rejection{answer: true, id: req.ID.Raw(), code: jsonrpc.CodeInvalidRequest, message: "invalid request: the id is in use by a request not yet answered"}
			c.logger.Warn("stdin: answered an invalid line with an error", "code", rej.code, "reason", rej.message)
			if err := c.write(rej.encode()); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.acquire(ctx); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.inFlight[req.ID] = struct{}{}
		c.mu.Unlock()
		return req, nil
	}
}

// acquire takes a slot for a request, waiting while MaxInFlight requests
// are unanswered.
func (c *stdioConn) acquire(ctx context.Context) error {
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	if c.waiting != nil {
		c.waiting()
	}
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return io.EOF
	}
}

// awaitBarrier waits until the barrier ping is answered.
func (c *stdioConn) awaitBarrier(ctx context.Context) error {
	done := c.heldUntil
	select {
	case <-done:
		return nil
	default:
	}
	if c.waiting != nil {
		c.waiting()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return io.EOF
	}
}

// Write implements sdk.Connection. An answer frees its request's slot once
// it is written.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == barrierID {
		c.mu.Lock()
		if c.barrier != nil {
			close(c.barrier)
			c.barrier = nil
		}
		c.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	answered := false
	if resp, ok := msg.(*jsonrpc.Response); ok {
		// The id is released before the write: the client may reuse it as
		// soon as it reads the answer.
		c.mu.Lock()
		_, answered = c.inFlight[resp.ID]
		delete(c.inFlight, resp.ID)
		c.mu.Unlock()
		msg = withoutEcho(resp)
	}
	buf := lineBuffers.Get().(*[]byte)
	line, err := appendLine((*buf)[:0], msg)
	if err == nil {
		err = c.write(line)
	}
	if cap(line) <= maxPooledLine {
		*buf = line
		lineBuffers.Put(buf)
	}
	if answered {
		<-c.slots
	}
	return err
}

// lineBuffers hold the bytes of the lines Write sends; a line longer than
// maxPooledLine is left to the collector rather than kept.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledLine = 64 << 10

// appendLine appends msg as the SDK encodes it (jsonrpc.EncodeMessage)
// and a newline. An answer with a result, the common message, is written
// without encoding its result again: the SDK made it compact, and its
// encoder would copy and check every byte of it once more. Anything else,
// and a string id with a character its encoder writes differently from
// encoding/json's defaults, goes through the SDK's encoder.
func appendLine(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil && len(resp.Result) > 0 {
		var idBuf [24]byte
		if id, ok := appendID(idBuf[:0], resp.ID); ok {
			dst = append(dst, `{"jsonrpc":"2.0"`...)
			if resp.ID.IsValid() {
				dst = append(append(dst, `,"id":`...), id...)
			}
			dst = append(append(dst, `,"result":`...), resp.Result...)
			return append(dst, '}', '\n'), nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return dst, err
	}
	return append(append(dst, data...), '\n'), nil
}

// appendID appends the JSON of id as the SDK's encoder writes it (nothing
// for no id), or reports false when it cannot say.
func appendID(dst []byte, id jsonrpc.ID) ([]byte, bool) {
	switch v := id.Raw().(type) {
	case nil:
		return dst, true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case string:
		if strings.ContainsAny(v, "<>&") {
			return nil, false // the SDK does not escape them; encoding/json does
		}
		b, err := json.Marshal(v)
		return append(dst, b...), err == nil
	}
	return nil, false
}

func (c *stdioConn) write(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(line)
	return err
}

// Close implements sdk.Connection: it ends Read. Neither stdin nor out is
// closed.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements sdk.Connection; stdio has no session id.
func (c *stdioConn) SessionID() string { return "" }

// Fixed texts of the SDK's error answers: one per code.
const (
	msgMethodNotFound = "method not found"
	msgInvalidParams  = "invalid params: they do not match the method's parameters"
	msgInvalidRequest = "invalid request: the session cannot serve it now"
	msgInternal       = "internal error"
	msgOther          = "the request failed"
)

// MCP error codes the SDK answers with.
const (
	codeResourceNotFound           = -32002
	codeUnsupportedProtocolVersion = -32022
)

var fixedMessages = map[int64]string{
	jsonrpc.CodeParseError:         "parse error",
	jsonrpc.CodeInvalidRequest:     msgInvalidRequest,
	jsonrpc.CodeMethodNotFound:     msgMethodNotFound,
	jsonrpc.CodeInvalidParams:      msgInvalidParams,
	jsonrpc.CodeInternalError:      msgInternal,
	codeResourceNotFound:           "resource not found",
	codeUnsupportedProtocolVersion: "unsupported protocol version",
}

// ownMessage matches the JSON-RPC error texts this package's middleware
// builds (server.go): they carry no request value, and the request_id ties
// an answer to its log record.
var ownMessage = regexp.MustCompile(`^(internal error \(request_id [0-9a-f]{16}\)|cannot identify the caller)$`)

// withoutEcho returns resp, or a copy whose error repeats nothing of the
// request: the SDK's error texts quote params, arguments, the method, a
// prompt name or a protocol version, and its data the resource URI or the
// version asked for. Every error becomes one fixed text per code, without
// data; the middleware's own texts are kept. An error without a code (the
// SDK's refusals of a request the session's state does not allow) gets
// -32600, or -32602 when params could not be decoded.
func withoutEcho(resp *jsonrpc.Response) *jsonrpc.Response {
	if resp.Error == nil {
		return resp
	}
	var code int64
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) {
		code = we.Code
	}
	msg := resp.Error.Error()
	if code == jsonrpc.CodeInternalError && ownMessage.MatchString(msg) {
		if we.Data == nil && we.Message == msg {
			return resp
		}
	} else {
		if code == 0 {
			code = jsonrpc.CodeInvalidRequest
			if strings.Contains(msg, "unmarshaling") {
				code = jsonrpc.CodeInvalidParams
			}
		}
		var ok bool
		if msg, ok = fixedMessages[code]; !ok {
			msg = msgOther
		}
	}
	out := *resp
	out.Error = &jsonrpc.Error{Code: code, Message: msg}
	return &out
}

// rejection is the filter's verdict on a line it does not hand to the SDK.
type rejection struct {
	answer  bool // false: a malformed response, which JSON-RPC never answers
	id      any  // nil (JSON null), int64 or string
	code    int64
	message string
}

// encode is the JSON-RPC error answer, one line.
func (r *rejection) encode() []byte {
	data, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", r.id, &jsonrpc.Error{Code: r.code, Message: r.message}})
	return append(data, '\n')
}

// numericID is an integer id the SDK keeps exactly: it reads ids as
// float64 and answers int64(id), so a fraction, an exponent or more than
// 15 digits would come back as a different id.
var numericID = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,14})$`)

// errorCode is an error code the SDK's int64 field can hold.
var errorCode = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,17})$`)

// admit decides what happens to one input line: it returns the message to
// hand to the SDK, or a rejection. Admitted messages are built from the validated parts,
// so the SDK's decoder never sees input it would fail on. A blank line
// gets a rejection that is neither answered nor logged.
func admit(line []byte, oversize bool) (jsonrpc.Message, *rejection) {
	invalid := func(id any, reason string) *rejection {
		return &rejection{answer: true, id: id, code: jsonrpc.CodeInvalidRequest, message: "invalid request: " + reason}
	}
	if oversize {
		return nil, invalid(nil, "the message is longer than 1048576 bytes")
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, &rejection{}
	}
	if !json.Valid(line) {
		// encoding/json refuses nesting past 10,000 levels; such a line
		// may still be JSON, and its id is worth answering.
		if id, ok := deepJSON(line); ok {
			return nil, invalid(id, "the message nests deeper than 64 levels")
		}
		return nil, &rejection{answer: true, code: jsonrpc.CodeParseError, message: "parse error: the line is not one JSON value"}
	}
	switch line[0] {
	case '{':
	case '[':
		return nil, invalid(nil, "batches are not supported; send one message per line")
	default:
		return nil, invalid(nil, "a message must be a JSON object")
	}
	m := scanTop(line)
	hasMethod, hasResult, hasError := m.method != nil, m.result != nil, m.error != nil
	if !hasMethod && (hasResult || hasError) {
		return admitResponse(line, &m)
	}

	rawID, hasID := m.id, m.id != nil
	var id jsonrpc.ID
	var answerID any // what an error answer carries: the id if it is valid
	idOK := true
	if hasID {
		id, idOK = parseID(rawID)
		if idOK {
			answerID = id.Raw()
		}
	}
	switch {
	case depth(line) > MaxStdioDepth:
		return nil, invalid(answerID, "the message nests deeper than 64 levels")
	case duplicateMember(line):
		return nil, invalid(answerID, "a member appears more than once")
	case !isVersion(m.jsonrpc):
		return nil, invalid(answerID, `"jsonrpc" must be "2.0"`)
	case !idOK:
		return nil, invalid(nil, `"id" must be a string of at most 256 bytes or an integer of at most 15 digits`)
	case !hasMethod:
		return nil, invalid(answerID, `a request needs a "method"`)
	case hasResult || hasError:
		return nil, invalid(answerID, `a request carries no "result" or "error"`)
	}
	method, ok := jsonString(m.method)
	if !ok {
		return nil, invalid(answerID, `"method" must be a string`)
	}
	params, hasParams := m.params, m.params != nil
	if hasParams && params[0] != '{' && params[0] != '[' {
		return nil, invalid(answerID, `"params" must be an object`)
	}
	if !hasID && len(line) > MaxStdioNotification {
		return nil, invalid(nil, "a notification is longer than 4096 bytes")
	}
	if method == "logging/setLevel" && !validLevel(params) {
		// The SDK logs the level it is given.
		return nil, &rejection{answer: true, id: answerID, code: jsonrpc.CodeInvalidParams, message: msgInvalidParams}
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: params}, nil
}

// admitResponse admits a well-formed response (to a request of this
// server) and drops anything else shaped like one, unanswered.
func admitResponse(line []byte, m *topLevel) (jsonrpc.Message, *rejection) {
	drop := func(reason string) *rejection { return &rejection{code: jsonrpc.CodeInvalidRequest, message: reason} }
	id, ok := parseID(m.id)
	switch {
	case depth(line) > MaxStdioDepth:
		return nil, drop("the message nests deeper than 64 levels")
	case duplicateMember(line):
		return nil, drop("a member appears more than once")
	case !isVersion(m.jsonrpc):
		return nil, drop(`"jsonrpc" is not "2.0"`)
	case !ok:
		return nil, drop("the response has no valid id")
	}
	result, hasResult := m.result, m.result != nil
	rawErr, hasError := m.error, m.error != nil
	if hasResult == hasError {
		return nil, drop(`a response has exactly one of "result" and "error"`)
	}
	if hasResult {
		return &jsonrpc.Response{ID: id, Result: result}, nil
	}
	var werr jsonrpc.Error
	var code, message, data json.RawMessage
	if rawErr[0] == '{' {
		eachMember(rawErr, func(name string, v []byte) {
			switch name {
			case "code":
				code = v
			case "message":
				message = v
			case "data":
				data = v
			}
		})
	}
	if rawErr[0] != '{' || !errorCode.Match(code) ||
		len(message) == 0 || message[0] != '"' ||
		json.Unmarshal(code, &werr.Code) != nil || json.Unmarshal(message, &werr.Message) != nil {
		return nil, drop(`"error" must be an object with an integer "code" and a string "message"`)
	}
	if data != nil {
		werr.Data = data
	}
	return &jsonrpc.Response{ID: id, Error: &werr}, nil
}

// parseID reads a request id: a string of at most MaxStdioIDLength bytes
// or an integer the SDK keeps exactly. JSON null is no valid id.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	switch {
	case len(raw) == 0:
		return jsonrpc.ID{}, false
	case raw[0] == '"':
		if !utf8.Valid(raw) {
			return jsonrpc.ID{}, false
		}
		s, ok := jsonString(raw)
		if !ok || len(s) > MaxStdioIDLength {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	case numericID.Match(raw) && !bytes.Equal(raw, []byte("-0")):
		// At most 16 bytes of digits: ParseFloat reads them as
		// encoding/json would.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(f)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

func isVersion(raw json.RawMessage) bool {
	v, ok := jsonString(raw)
	return ok && v == "2.0"
}

// jsonString decodes raw (valid JSON) when it is a string, as
// encoding/json would. A plain string (printable ASCII, no escape) is cut
// out of raw with one copy and no decoder.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if plainString(raw[1 : len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plainString reports whether b, a string's bytes between its quotes,
// reads as itself: printable ASCII without a backslash.
func plainString(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// topLevel holds the members of a message the filter reads: views into
// the line, nil when absent. A member named twice keeps its last value,
// as decoders do (the line is refused for it anyway).
type topLevel struct {
	jsonrpc, id, method, params, result, error json.RawMessage
}

// scanTop reads the members of the message line (a valid JSON object).
func scanTop(line []byte) topLevel {
	var m topLevel
	eachMember(line, func(name string, v []byte) {
		switch name {
		case "jsonrpc":
			m.jsonrpc = v
		case "id":
			m.id = v
		case "method":
			m.method = v
		case "params":
			m.params = v
		case "result":
			m.result = v
		case "error":
			m.error = v
		}
	})
	return m
}

// eachMember calls fn with each member of the JSON object obj (valid
// JSON), in order: its name as decoded and its value's bytes (a view into
// obj). A plain name costs no allocation: name is then only valid during
// the call. Anything but an object has no members.
func eachMember(obj []byte, fn func(name string, value []byte)) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return // '}' (or, for a valid object, nothing else)
		}
		end := skipString(obj, i)
		rawName := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		var name string
		if inner := rawName[1 : len(rawName)-1]; plainString(inner) {
			name = unsafe.String(unsafe.SliceData(inner), len(inner))
		} else if s, ok := jsonString(rawName); ok {
			name = s
		}
		fn(name, obj[i:vend:vend])
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the JSON value that starts at
// b[i] (valid JSON).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		d := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				d++
			case '}', ']':
				d--
				if d == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// logLevels are the levels logging/setLevel accepts (MCP, RFC 5424).
var logLevels = map[string]bool{"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true}

// validLevel reports whether params is an object whose "level" is one of
// logLevels.
func validLevel(params json.RawMessage) bool {
	var raw []byte
	eachMember(params, func(name string, v []byte) {
		if name == "level" {
			raw = v
		}
	})
	level, ok := jsonString(raw)
	return ok && logLevels[level]
}

// duplicateMember reports whether an object anywhere in data (valid JSON,
// nested at most MaxStdioDepth) names a member twice. Decoders keep the
// last of two such members, and checks that read the first would pass
// what the handler never sees. Names are compared as decoded, so "a" and
// "\u0061" are the same name. The names of the open objects sit in one
// list (views into data, or decoded when escaped); an object's are
// searched in line while it has few, through a set past that.
func duplicateMember(data []byte) bool {
	type frame struct {
		object, wantName bool
		first            int                 // its first name in names
		set              map[string]struct{} // once it has more than smallObject names
	}
	const smallObject = 16
	var stackBuf [16]frame
	var namesBuf [64][]byte
	stack, names := stackBuf[:0], namesBuf[:0]
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true, wantName: true, first: len(names)})
		case '[':
			stack = append(stack, frame{first: len(names)})
		case '}', ']':
			names = names[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantName = true
			}
		case '"':
			end := skipString(data, i) - 1 // the closing quote
			if n := len(stack); n > 0 && stack[n-1].wantName {
				f := &stack[n-1]
				f.wantName = false
				name := data[i+1 : end]
				if !plainString(name) {
					s, _ := jsonString(data[i : end+1])
					name = []byte(s)
				}
				switch {
				case f.set != nil:
					if _, seen := f.set[string(name)]; seen {
						return true
					}
					f.set[string(name)] = struct{}{}
				default:
					for _, prev := range names[f.first:] {
						if bytes.Equal(prev, name) {
							return true
						}
					}
					names = append(names, name)
					if len(names)-f.first > smallObject {
						f.set = make(map[string]struct{}, 2*smallObject)
						for _, prev := range names[f.first:] {
							f.set[string(prev)] = struct{}{}
						}
						names = names[:f.first]
					}
				}
			}
			i = end
		}
	}
	return false
}

// deepJSON reports whether line is one JSON value nested deeper than
// MaxStdioDepth, and the id of the request it is when that id is valid.
func deepJSON(line []byte) (any, bool) {
	if depth(line) <= MaxStdioDepth {
		return nil, false
	}
	// Decoder.Token has no nesting limit.
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var id any
	d, wantKey, key := 0, false, ""
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		if d == 1 && line[0] == '{' { // a member of the top-level object
			if k, ok := tok.(string); ok && wantKey {
				key, wantKey = k, false
				continue
			}
			if !wantKey { // the start of a member's value
				if key == "id" {
					id = tokenID(tok)
				}
				wantKey = true
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			d++
			if d == 1 {
				wantKey = true
			}
		case json.Delim('}'), json.Delim(']'):
			d--
		}
		if d == 0 {
			break
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return id, true
}

// tokenID is tok as an id the SDK answers unchanged, or nil.
func tokenID(tok json.Token) any {
	var raw []byte
	switch v := tok.(type) {
	case string:
		raw, _ = json.Marshal(v)
	case json.Number:
		raw = []byte(v)
	default:
		return nil
	}
	if id, ok := parseID(raw); ok {
		return id.Raw()
	}
	return nil
}

// depth is the deepest nesting of objects and arrays in data (valid JSON).
func depth(data []byte) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}
