package mcp

import (
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// An agent that only opens and closes HTTP sessions (no tool call, no call
// budget spent, nothing to cancel) makes the server journal no
// deadman_triggered record per session: a trigger that cancels nothing is
// logged only (D86).
func TestHTTPSessionChurnJournalsNoDeadmanRecords(t *testing.T) {
	h := newHTTPEnv(t, HTTPOptions{})
	h.streamUser(t, "alice", messages.PolicySettings{CancelOnDisconnect: boolp(true)})
	const cycles = 20
	start := time.Now()
	for i := 0; i < cycles; i++ {
		cs := h.connect(t, h.tokens["alice"].Token, "2025-11-25", "churn", nil)
		time.Sleep(200 * time.Millisecond) // stay under the 20 req/s per token
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	el := time.Since(start)
	var trig int
	time.Sleep(2 * time.Second)
	tr, _ := deadmanRecords(t, h.env.records(t))
	trig = len(tr)
	t.Logf("%d HTTP session open/close cycles in %v: %d deadman_triggered records, 0 tool calls", cycles, el, trig)
	if trig > 2 {
		t.Fatalf("session churn alone journaled %d deadman_triggered records", trig)
	}
}
