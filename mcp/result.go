package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"regexp"
	"time"
	"unsafe"

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

// success is the docs/errors.md success shape: structuredContent is the payload and
// one text block holds the same JSON.
func success(payload any) *sdk.CallToolResult {
	b, err := json.Marshal(payload)
	if err != nil {
		return failure(nil, messages.Internal(err), "")
	}
	return encoded(b, false)
}

// encoded is the result of a payload encoded once: b is the
// structuredContent, and the text block's string shares its bytes (no
// copy: nothing writes to b once it is encoded).
func encoded(b []byte, isError bool) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: unsafe.String(unsafe.SliceData(b), len(b))}},
		StructuredContent: json.RawMessage(b),
		IsError:           isError,
	}
}

// Pending is the docs/tools.md "Confirmation" answer of an action parked for a human: the
// server's own plan (shown_to_user), never the model's words.
type Pending struct {
	Venue          string    `json:"venue"`
	ConfirmationID string    `json:"confirmation_id"`
	ExpiresAt      time.Time `json:"expires_at"`
	ShownToUser    any       `json:"shown_to_user"`
	// ConfirmedBy names the policy setting that asked for the
	// confirmation: confirm_actions or confirm_above_notional_usdt.
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	NextStep    string `json:"next_step"`
}

// pendingResult is the success shape with status "pending": the call is
// answered, the action waits for a human (get_confirmation_status,
// cancel_confirmation).
func pendingResult(p Pending) *sdk.CallToolResult {
	body := struct {
		Status string `json:"status"`
		Pending
	}{Status: "pending", Pending: p}
	return success(body)
}

// inputRequiredResult is the MCP input_required answer (multi-round trip,
// docs/tools.md "Confirmation"): the client asks the human (requests, e.g. one
// *sdk.ElicitParams) and calls again with the responses and state. state is
// attacker-controlled when it comes back: whatever it carries must be
// integrity-protected and single-use where it matters. It has no content:
// content and input requests together are a server bug.
func inputRequiredResult(requests sdk.InputRequestMap, state string) *sdk.CallToolResult {
	return &sdk.CallToolResult{InputRequests: requests, RequestState: state}
}

// errorBody is the docs/errors.md failure payload.
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
		if r := e.Details["reason"]; r == "disk_reserve" || r == "cancelled" {
			details["reason"] = r // a fixed word: why nothing was done
		}
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
	return encoded(b, true)
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
