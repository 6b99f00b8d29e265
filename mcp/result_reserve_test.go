package mcp

import (
	"encoding/json"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An internal_error answer shows the agent a request_id and nothing else
// of its details, except the fixed reason disk_reserve: the agent learns
// why nothing was done (the journal's disk is in its last reserve).
func TestFailureKeepsOnlyTheDiskReserveReason(t *testing.T) {
	for _, c := range []struct {
		reason any
		keep   bool
	}{{"disk_reserve", true}, {"/var/lib/secret-path", false}, {nil, false}} {
		e := &messages.Error{Code: messages.CodeInternalError, Message: "m", Details: map[string]any{"reason": c.reason, "path": "/x"}}
		var body struct {
			Details map[string]any `json:"details"`
		}
		if err := json.Unmarshal(failure(nil, e, "").StructuredContent.(json.RawMessage), &body); err != nil {
			t.Fatal(err)
		}
		_, has := body.Details["reason"]
		if has != c.keep || body.Details["request_id"] == nil || body.Details["path"] != nil || (c.keep && body.Details["reason"] != "disk_reserve") {
			t.Fatalf("reason %v: details %v", c.reason, body.Details)
		}
	}
}
