package shard

import (
	"encoding/json"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// EncodeError encodes an answer that carries only e, in the shape Serve
// gives every answer ({"error": {code, message, next_step, details, …}}):
// what the host answers for a call it could not hand to Serve (the shard
// not ready in time, its lock lost, its activation stopping).
func EncodeError(e *messages.Error) []byte {
	b, err := json.Marshal(struct {
		Error *messages.Error `json:"error"`
	}{e})
	if err != nil {
		// Details that do not encode are dropped rather than the answer.
		b, _ = json.Marshal(struct {
			Error *messages.Error `json:"error"`
		}{&messages.Error{Code: e.Code, Message: e.Message, NextStep: e.NextStep, RetryAfterS: e.RetryAfterS}})
	}
	return b
}

// ReasonUnavailable is details.reason of the answer to a call that no
// shard served and that is safe to send again: the shard was not ready
// within the call's deadline (its new owner still waiting for the lock or
// replaying), its activation was stopping, or no member could be found to
// place it (code exchange_unavailable, as a recovering user's writes are
// answered; docs/decisions.md D165).
const ReasonUnavailable = "shard_unavailable"

// Unavailable is the error of a call no shard served (ReasonUnavailable).
func Unavailable(why string) *messages.Error {
	return &messages.Error{
		Code:        messages.CodeExchangeUnavailable,
		Message:     "the user's shard is not available right now: " + why + "; the call was not served",
		NextStep:    "retry in a moment",
		RetryAfterS: 1,
		Details:     map[string]any{"reason": ReasonUnavailable},
	}
}
