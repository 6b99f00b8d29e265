package actors

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// forgeOwnFill has a hostile private stream rewrite every push of the
// server's own orders (ids kept) to Filled with its whole qty.
func forgeOwnFill(o map[string]any) {
	o["orderStatus"], o["cumExecQty"], o["leavesQty"], o["cumExecValue"], o["avgPrice"] = "Filled", o["qty"], "0", "20.004", "20004"
}

// outcomeOf returns the journal's order_outcome records of a client order
// id.
func outcomeOf(t *testing.T, dir, id string) []messages.OrderOutcomeEvent {
	t.Helper()
	var out []messages.OrderOutcomeEvent
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) != messages.RecordOrderOutcome {
			continue
		}
		var o messages.OrderOutcomeEvent
		if err := json.Unmarshal(r.Payload, &o); err != nil {
			t.Fatal(err)
		}
		if o.ClientOrderID == id {
			out = append(out, o)
		}
	}
	return out
}

// D183: a push never settles an unknown outcome. The venue applies a
// create but its answer is lost, REST's order reads fail, and a hostile
// stream rewrites the create's own push (ids kept, so it matches the
// attempt) to Filled with the whole qty. place_order answers
// outcome_unknown (reconnaissance "failed"), with no status and no filled
// quantity; no order_outcome is journaled and the attempt stays open.
// Once REST answers again, the reconcile after a reconnect settles it
// from REST's truth: found, New. Before D183 the push settled it: the
// answer said Filled 0.001 and the journal recorded it.
func TestPushWhileRESTFailsSettlesNothing(t *testing.T) {
	dir := t.TempDir()
	te, px := newHostileTradeEnv(t, dir, func(c *Config) { c.SettleWait = 3 * time.Second })
	te.tradeReady(t, messages.PolicySettings{})
	px.SetFilter(rewriteOwnOrderPushes(forgeOwnFill))

	te.fault(t, "drop_response", venue.PathOrderCreate)
	for _, p := range []string{venue.PathOrderRealtime, venue.PathOrderHistory} {
		te.simPost(t, "/sim/faults", `{"kind":"http_5xx","path":"`+p+`","count":0}`) // until cleared
	}
	ans, e := te.place(t, limitArgs("0.001", "20004"))
	if ans != nil || e == nil {
		t.Fatalf("the forged push settled the create: %+v", ans)
	}
	id, _ := e.Details["client_order_id"].(string)
	if e.Code != messages.CodeOutcomeUnknown || id == "" || e.Details["reconnaissance"] != "failed" {
		t.Fatalf("answer %s", errText(e))
	}
	if b, _ := json.Marshal(e); strings.Contains(string(b), "Filled") || strings.Contains(string(b), "filled_qty") {
		t.Fatalf("the answer shows what the push said: %s", b)
	}
	// The push did reach the server (it is journaled as a venue_update),
	// and settled nothing.
	for deadline := time.Now().Add(10 * time.Second); !contains(journalOf(t, dir), "venue_update:"+id+":system"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rewritten push never came: %v", journalOf(t, dir))
		}
	}
	if got := outcomeOf(t, dir, id); len(got) != 0 {
		t.Fatalf("the attempt was settled while REST could not be read: %+v", got)
	}
	if st := te.snapshot(t); len(st.Attempts) != 1 {
		t.Fatalf("%d open attempts, want the unknown one left open", len(st.Attempts))
	}

	// REST answers again; a reconnect reconciles the attempt by REST.
	te.clearFaults(t)
	px.Cut()
	var got []messages.OrderOutcomeEvent
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reconcile settled nothing: %v", journalOf(t, dir))
		}
		got = outcomeOf(t, dir, id)
	}
	if len(got) != 1 || got[0].Status != messages.OutcomeFound || got[0].VenueStatus != "New" || got[0].ResultSource != messages.ResultSourceReconnaissance {
		t.Fatalf("the reconcile did not settle the attempt from REST: %+v", got)
	}
	if st := te.snapshot(t); len(st.Attempts) != 0 {
		t.Fatalf("%d open attempts after the reconcile", len(st.Attempts))
	}
}

// What D183 keeps: a create whose answer is lost is still settled at once
// when REST answers, from REST's read-back, whatever the stream pushed
// (here its own push rewritten to Filled): found, New, nothing filled.
func TestLostCreateSettledFromRESTNotThePush(t *testing.T) {
	dir := t.TempDir()
	te, px := newHostileTradeEnv(t, dir, func(c *Config) { c.SettleWait = 3 * time.Second })
	te.tradeReady(t, messages.PolicySettings{})
	px.SetFilter(rewriteOwnOrderPushes(forgeOwnFill))

	te.fault(t, "drop_response", venue.PathOrderCreate)
	ans, e := te.place(t, limitArgs("0.001", "20004"))
	if e != nil {
		t.Fatalf("a lost create that REST can read was not settled: %s", errText(e))
	}
	if ans.ResultSource != messages.ResultSourceReconnaissance || ans.OrderStatus != "New" || !ans.FilledQty.Known || !ans.FilledQty.Qty.IsZero() {
		t.Fatalf("settled as %s %s (%s), want REST's New 0", ans.OrderStatus, ans.FilledQty, ans.ResultSource)
	}
	got := outcomeOf(t, dir, ans.ClientOrderID)
	if len(got) != 1 || got[0].Status != messages.OutcomeFound || got[0].VenueStatus != "New" {
		t.Fatalf("journaled %+v", got)
	}
}
