package messages

import (
	"errors"
	"fmt"
)

// Error is a refusal or failure with a stable code (docs/errors.md). It is the one
// error shape that crosses every edge: actor replies, the control socket and
// MCP tool results are all built from it.
//
// Message and NextStep are written by the server and never contain values
// the caller sent or secrets. Text that came from the exchange goes only in
// UntrustedText.
type Error struct {
	Code     Code   `json:"code"`
	Message  string `json:"message"`
	NextStep string `json:"next_step,omitempty"`
	// RetryAfterS is the number of whole seconds to wait before retrying;
	// zero means no advice.
	RetryAfterS int `json:"retry_after_s,omitempty"`
	// Details carries structured facts such as {"field": "qty", "reason": "..."}.
	Details map[string]any `json:"details,omitempty"`
	// UntrustedText is text from the exchange (reject reasons, client order
	// ids) that must never be read as instructions.
	UntrustedText string `json:"untrusted_text,omitempty"`
	// Err is the underlying cause, for logs only; it is never serialised.
	Err error `json:"-"`
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidParams is the refusal for a bad argument. It names the field and
// the reason, and never echoes the rejected value.
func InvalidParams(field, reason string) *Error {
	return &Error{
		Code:     CodeInvalidParams,
		Message:  fmt.Sprintf("invalid %s: %s", field, reason),
		NextStep: "fix the argument and call again",
		Details:  map[string]any{"field": field, "reason": reason},
	}
}

// Internal wraps an unexpected failure. The message the caller sees is
// generic; err is kept for the log.
func Internal(err error) *Error {
	return &Error{
		Code:     CodeInternalError,
		Message:  "internal error",
		NextStep: "retry later; if it persists, ask the operator to check the server log",
		Err:      err,
	}
}

// ReasonShardFenced is details.reason of the error a cluster shard answers
// for a write once this member no longer holds the shard's lock
// (docs/cluster.md "Fenced appends").
const ReasonShardFenced = "shard_fenced"

// ShardFenced is the error a write answers once the shard's journal is
// fenced: code internal_error (the codes are a closed list, docs/errors.md),
// details.reason ReasonShardFenced; err is the cause, for logs. A retry
// reaches the shard's new owner.
func ShardFenced(err error) *Error {
	return &Error{
		Code:     CodeInternalError,
		Message:  "this server no longer owns the user's shard",
		NextStep: "retry: the call goes to the shard's new owner",
		Details:  map[string]any{"reason": ReasonShardFenced},
		Err:      err,
	}
}

// CodeOf returns the code carried by err, or CodeInternalError for any error
// that is not an *Error. CodeOf(nil) is "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternalError
}

// AsError returns err as an *Error, wrapping anything else with Internal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}
