package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// forgeOwnFills rewrites every order push of the server's own orders
// ("gx-" client order ids, ids kept) to Filled with the whole qty.
func forgeOwnFills(msg []byte) [][]byte {
	if !bytes.Contains(msg, []byte(`"topic":"order"`)) || !bytes.Contains(msg, []byte(`"orderLinkId":"gx-`)) {
		return [][]byte{msg}
	}
	var m map[string]any
	if json.Unmarshal(msg, &m) != nil {
		return [][]byte{msg}
	}
	rows, _ := m["data"].([]any)
	for _, r := range rows {
		if o, ok := r.(map[string]any); ok {
			o["orderStatus"], o["cumExecQty"], o["leavesQty"], o["avgPrice"] = "Filled", o["qty"], "0", o["price"]
		}
	}
	b, _ := json.Marshal(m)
	return [][]byte{b}
}

// outcomesIn returns the journal's order_outcome records of a client
// order id.
func outcomesIn(t *testing.T, dir, id string) []messages.OrderOutcomeEvent {
	t.Helper()
	var out []messages.OrderOutcomeEvent
	err := wal.Scan(dir, func(r wal.Record) error {
		if messages.RecordType(r.Type) == messages.RecordOrderOutcome {
			var o messages.OrderOutcomeEvent
			if err := json.Unmarshal(r.Payload, &o); err == nil && o.ClientOrderID == id {
				out = append(out, o)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// place_order end to end through a hostile private stream that rewrites
// the server's own order pushes to Filled (decisions D183). A create
// whose answer is lost is settled from REST when REST answers, as before:
// New, filled_qty "0", result_source "reconnaissance". When REST's order
// reads fail too, the matching push settles nothing: outcome_unknown
// (reconnaissance "failed"), no status and no filled quantity, no
// order_outcome journaled; once REST answers again, the reconcile after a
// reconnect settles it from REST (found, New).
func TestPlaceOrderSettlesFromRESTNeverFromAPush(t *testing.T) {
	s, px := newHostileLossStack(t)
	e := s.start(t)
	if _, err := e.sys.Handle(context.Background(), &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	px.SetFilter(forgeOwnFills)
	fault := func(kind, path string, count int) {
		simDo(t, http.MethodPost, s.srv.URL+"/sim/faults", map[string]any{"kind": kind, "path": path, "count": count}, nil)
	}

	// REST answers: settled from REST, whatever the push said.
	fault("drop_response", "/v5/order/create", 1)
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30001"))
	if isErr || out["result_source"] != "reconnaissance" || out["order_status"] != "New" || out["filled_qty"] != "0" {
		t.Fatalf("a lost create REST can read: %v", out)
	}

	// REST's order reads fail (until cleared): the push settles nothing.
	fault("drop_response", "/v5/order/create", 1)
	fault("http_5xx", "/v5/order/realtime", 0)
	fault("http_5xx", "/v5/order/history", 0)
	out, isErr = callJSON(t, cs, "place_order", limitBuy("30002"))
	d, _ := out["details"].(map[string]any)
	id, _ := d["client_order_id"].(string)
	if !isErr || out["code"] != string(messages.CodeOutcomeUnknown) || d["reconnaissance"] != "failed" || id == "" {
		t.Fatalf("a lost create with REST down and a matching push: %v", out)
	}
	if f, ok := out["filled_qty"]; (ok && f != "unknown") || out["order_status"] != nil {
		t.Fatalf("the answer says what the push said: %v", out)
	}
	if got := outcomesIn(t, e.dir, id); len(got) != 0 {
		t.Fatalf("journaled as settled while REST could not be read: %+v", got)
	}

	simDo(t, http.MethodDelete, s.srv.URL+"/sim/faults", nil, nil)
	px.Cut()
	var got []messages.OrderOutcomeEvent
	for deadline := time.Now().Add(15 * time.Second); len(got) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reconcile after the reconnect settled nothing")
		}
		got = outcomesIn(t, e.dir, id)
	}
	if len(got) != 1 || got[0].Status != messages.OutcomeFound || got[0].VenueStatus != "New" || got[0].ResultSource != messages.ResultSourceReconnaissance {
		t.Fatalf("reconciled as %+v, want REST's New", got)
	}
}
