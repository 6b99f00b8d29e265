package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"regexp"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// toolNamePattern is the tool-name rule of this server: lower snake case,
// at most 64 characters (Claude Desktop rejects the whole list otherwise).
var toolNamePattern = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// newRequestID returns a random id that ties an internal_error answer to
// the server log line that explains it.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// success is the SPEC §5 success shape: structuredContent is the payload and
// one text block holds the same JSON.
func success(payload any) *sdk.CallToolResult {
	b, err := json.Marshal(payload)
	if err != nil {
		return failure(nil, messages.Internal(err), "")
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// errorBody is the SPEC §5 failure payload.
type errorBody struct {
	Code          messages.Code  `json:"code"`
	Message       string         `json:"message"`
	NextStep      string         `json:"next_step"`
	RetryAfterS   int            `json:"retry_after_s,omitempty"`
	Details       map[string]any `json:"details,omitempty"`
	UntrustedText string         `json:"untrusted_text,omitempty"`
}

// failure is the one function from an error to a tool result: isError true,
// with {code, message, next_step, retry_after_s?, details?, untrusted_text?}
// both as structuredContent and as the text block. internal_error is logged
// in detail with the request id; the agent sees only the safe message.
func failure(logger *slog.Logger, err error, requestID string) *sdk.CallToolResult {
	e := messages.AsError(err)
	body := errorBody{
		Code:          e.Code,
		Message:       e.Message,
		NextStep:      e.NextStep,
		RetryAfterS:   e.RetryAfterS,
		Details:       e.Details,
		UntrustedText: e.UntrustedText,
	}
	if body.NextStep == "" {
		body.NextStep = defaultNextStep(e.Code)
	}
	if e.Code == messages.CodeInternalError {
		if requestID == "" {
			requestID = newRequestID()
		}
		details := map[string]any{"request_id": requestID}
		body.Details = details
		if logger != nil {
			cause := ""
			if e.Err != nil {
				cause = e.Err.Error()
			}
			logger.Error("tool internal error", "request_id", requestID, "cause", cause)
		}
	}
	b, mErr := json.Marshal(body)
	if mErr != nil { // cannot happen: every field is a plain value
		b = []byte(`{"code":"internal_error","message":"internal error","next_step":"retry later"}`)
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           true,
	}
}

func defaultNextStep(c messages.Code) string {
	switch c {
	case messages.CodeRateLimited, messages.CodeExchangeUnavailable:
		return "wait and call again"
	case messages.CodePermissionDenied:
		return "this principal may not do that; ask the human to change the policy outside the chat"
	case messages.CodeNotFound:
		return "check the identifiers and call again"
	default:
		return "read the message and adjust the call"
	}
}
