package state

import "github.com/guarded-exchange/guarded-exchange/messages"

// NoKeyError is the refusal when no key is stored for the user and venue.
func NoKeyError() *messages.Error {
	return &messages.Error{
		Code:     messages.CodeExchangeCredentialsInvalid,
		Message:  "no exchange key is stored for this user and venue",
		NextStep: "add a key with `guarded-exchange keys add`, outside the chat",
	}
}

// LimitExceeded is the limit_exceeded refusal of a policy limit: details
// name the limit and its allowed value, and carry extra.
func LimitExceeded(limit, allowed, msg, next string, extra map[string]any) *messages.Error {
	d := map[string]any{"limit": limit, "allowed": allowed}
	for k, v := range extra {
		d[k] = v
	}
	return &messages.Error{Code: messages.CodeLimitExceeded, Message: msg, NextStep: next, Details: d}
}
