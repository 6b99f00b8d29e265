package mcp

import (
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK copy in mcp/go-sdk decodes a value in place (docs/decisions.md
// D210). Upstream's decoder allocated a read buffer of at least 32 KiB per
// value, so a small message cost more than 32 KiB to decode; the copy must
// stay far below that, and keep what a decoder did: the first value
// decoded, trailing bytes not read, no value an error, the depth limit
// checked.
func TestSDKCopyDecodesWithoutABufferPerValue(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_posture","arguments":{}}}`)
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		t.Fatal(err)
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || req.ID.Raw() != int64(7) {
		t.Fatalf("decoded %#v", msg)
	}

	const n = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Errorf("decoding a %d-byte message allocated %d bytes: a buffer per value is back", len(line), per)
	}

	if m, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":8,"method":"ping"} {"not":"read"}`)); err != nil {
		t.Errorf("trailing bytes after the message: %v", err)
	} else if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
		t.Errorf("with trailing bytes, decoded %#v", m)
	}
	for _, bad := range []string{"", "  \n", `{"jsonrpc":"2.0","id":9,"method":`, strings.Repeat("[", 1001) + strings.Repeat("]", 1001)} {
		if _, err := jsonrpc.DecodeMessage([]byte(bad)); err == nil {
			t.Errorf("DecodeMessage(%.20q…) decoded", bad)
		}
	}
}
