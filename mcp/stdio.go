package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStdioLine bounds one JSON-RPC message read from stdin.
const MaxStdioLine = 4 << 20

// droppedLine replaces an input line the server will not hand to the SDK:
// a notification no one handles. The SDK would otherwise end the whole
// session on a line that is not one JSON-RPC object (garbage, a batch,
// nesting deeper than the decoder allows), and with it the server.
var droppedLine = []byte(`{"jsonrpc":"2.0","method":"notifications/guarded_exchange/dropped_line"}` + "\n")

// StdioTransport is the stdio transport of serve: newline-delimited JSON-RPC
// on in and out, where a malformed or oversize input line is logged and
// dropped instead of ending the session (SPEC §5: never a dead session).
// out is never closed.
func StdioTransport(in io.Reader, out io.Writer, logger *slog.Logger) sdk.Transport {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &sdk.IOTransport{
		Reader: &lineFilter{r: bufio.NewReaderSize(in, 64<<10), logger: logger},
		Writer: nopWriteCloser{out},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// lineFilter passes through lines that are single JSON objects and
// replaces every other line with droppedLine.
type lineFilter struct {
	r      *bufio.Reader
	logger *slog.Logger
	mu     sync.Mutex // Read may be called from the transport's goroutine only; the lock documents it
	buf    []byte     // the rest of the current output line
	err    error
}

func (f *lineFilter) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.buf, f.err = f.nextLine()
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// nextLine reads one input line and returns what the SDK should see.
func (f *lineFilter) nextLine() ([]byte, error) {
	var line []byte
	oversize := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !oversize {
			if len(line)+len(chunk) > MaxStdioLine {
				oversize, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(line) == 0 && !oversize {
			return nil, err
		}
		trimmed := bytes.TrimSpace(line)
		switch {
		case oversize:
			f.logger.Warn("stdin: dropped an oversize line", "limit_bytes", MaxStdioLine)
			return droppedLine, err
		case len(trimmed) == 0:
			return nil, err
		case trimmed[0] != '{' || !json.Valid(trimmed):
			f.logger.Warn("stdin: dropped a line that is not one JSON-RPC object", "bytes", len(trimmed))
			return droppedLine, err
		}
		return append(trimmed, '\n'), err
	}
}

// Close implements io.Closer; the process's stdin is not closed.
func (f *lineFilter) Close() error { return nil }
