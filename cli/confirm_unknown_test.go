package cli

import (
	"errors"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An approval whose answer says nothing ran is a refusal; one whose
// answer leaves it open (no answer, outcome_unknown, internal_error, or a
// cluster member that went away during the call) is reported as not
// known.
func TestOutcomeUnknownOfAnApproval(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no answer", errors.New("connection reset"), true},
		{"outcome unknown", &messages.Error{Code: messages.CodeOutcomeUnknown}, true},
		{"internal error", &messages.Error{Code: messages.CodeInternalError}, true},
		{"member went away", &messages.Error{Code: messages.CodeExchangeUnavailable, Details: map[string]any{"reason": "shard_unavailable", "served": "unknown"}}, true},
		{"shard not ready, not served", &messages.Error{Code: messages.CodeExchangeUnavailable, Details: map[string]any{"reason": "shard_unavailable"}}, false},
		{"refused", &messages.Error{Code: messages.CodePermissionDenied}, false},
		{"no server", &ExitError{Code: 3, Err: errors.New("no server")}, false},
	} {
		if got := outcomeUnknown(tc.err); got != tc.want {
			t.Errorf("%s: outcomeUnknown = %v, want %v", tc.name, got, tc.want)
		}
	}
}
