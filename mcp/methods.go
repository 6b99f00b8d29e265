package mcp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// unusedMethod reports whether method belongs to a capability the server
// does not declare (prompts, resources, completions). The SDK answers
// prompts/list and resources/list with empty lists even so; the
// specification asks for -32601, so the server gives it for all of them,
// on every transport and era.
func unusedMethod(method string) bool {
	return strings.HasPrefix(method, "prompts/") || strings.HasPrefix(method, "resources/") ||
		method == "completion/complete"
}

// protocolShape is the outermost middleware: it refuses the methods of
// capabilities the server does not declare with -32601, and gives the
// tools/call answers the guard built itself (refusals, which never reach
// the SDK's tool handler) the resultType "complete" that a 2026-07-28
// client requires and the SDK sets only on its handler's results.
func (s *server) protocolShape(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if unusedMethod(method) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
		}
		res, err := next(ctx, method, req)
		if method != "tools/call" || err != nil {
			return res, err
		}
		// Only an error result can have bypassed the SDK's handler: the
		// guard's refusals are all error results.
		if r, ok := res.(*sdk.CallToolResult); ok && r.IsError && !r.NeedsInput() && modernClient(req) {
			return markComplete(r), nil
		}
		return res, nil
	}
}

// modernClient reports whether req comes from a client of the stateless
// era, as the SDK decides it for resultType: the initialized version, or
// the newest one when there was no initialize (stateless requests).
func modernClient(req sdk.Request) bool {
	ss, ok := req.GetSession().(*sdk.ServerSession)
	if !ok || ss == nil {
		return false
	}
	if ip := ss.InitializeParams(); ip != nil {
		return ip.ProtocolVersion >= modernEra
	}
	return true
}

// markComplete returns r with resultType "complete". The field is not
// exported; the SDK's own JSON decoding is the only way to set it.
func markComplete(r *sdk.CallToolResult) *sdk.CallToolResult {
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return r
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	if b, err = json.Marshal(m); err != nil {
		return r
	}
	var out sdk.CallToolResult
	if json.Unmarshal(b, &out) != nil {
		return r
	}
	return &out
}
