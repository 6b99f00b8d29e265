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

// MemberLeft is the error of a call whose shard's member left the
// cluster, or whose connection to it ended for good, while the call
// waited for its answer: code exchange_unavailable, reason
// ReasonUnavailable, like a call no shard served, but unlike that one it
// may have been served before the member went. Its message and next step
// say so: a change is to be retried with the same idempotency key or
// client order id (the shard's new owner replays the journal, reconciles
// open order attempts with the venue and answers a repeat from what it
// finds), never as a new order (docs/decisions.md D189).
func MemberLeft() *messages.Error {
	return &messages.Error{
		Code: messages.CodeExchangeUnavailable,
		Message: "the cluster member serving the user's shard went away while the call was in flight; " +
			"the call may or may not have taken effect",
		NextStep: "retry in a moment with the same idempotency key or client order id (a repeat is answered from what the shard's new owner finds); " +
			"do not place it again under a new key before checking open orders and order history",
		RetryAfterS: 1,
		Details:     map[string]any{"reason": ReasonUnavailable, "served": "unknown"},
	}
}
