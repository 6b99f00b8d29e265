package actors

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// newHostileTradeEnv is a tradeEnv whose private stream runs through a
// hostile proxy in front of the simulator's.
func newHostileTradeEnv(t *testing.T, dir string, configure func(*Config)) (*tradeEnv, *hostile.Proxy) {
	t.Helper()
	var px *hostile.Proxy
	te := newTradeEnvStreaming(t, dir, configure, func(simURL string) string {
		p, err := hostile.New(simURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		px = p
		return p.URL()
	})
	return te, px
}

// nextAttempt waits for an order_attempt not in seen and returns its
// client order id.
func nextAttempt(t *testing.T, dir string, seen map[string]bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, g := range journalOf(t, dir) {
			if id, ok := strings.CutPrefix(g, "order_attempt:"); ok && !seen[id] {
				return id
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("no new order_attempt")
	return ""
}

// anomaliesOf returns the journal's venue_anomaly records.
func anomaliesOf(t *testing.T, dir string) []messages.VenueAnomalyEvent {
	t.Helper()
	var out []messages.VenueAnomalyEvent
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) == messages.RecordVenueAnomaly {
			var ev messages.VenueAnomalyEvent
			if err := json.Unmarshal(r.Payload, &ev); err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
	}
	return out
}

func attemptIDs(t *testing.T, dir string) map[string]bool {
	seen := map[string]bool{}
	for _, g := range journalOf(t, dir) {
		if id, ok := strings.CutPrefix(g, "order_attempt:"); ok {
			seen[id] = true
		}
	}
	return seen
}

// A create the venue never accepted (its answer lost) is not settled by an
// order under its client order id that does not match it: neither a
// forged "Filled" push of 100× its quantity on the private stream, nor an
// order someone else placed under the same id (seen by REST and on the
// stream). The outcome is settled by REST (not found, or still unknown),
// answered outcome_unknown with the client order id, and each mismatch is
// journaled as a venue_anomaly naming the field; nothing counts as placed
// or filled.
func TestForgedOrderPushSettlesNothing(t *testing.T) {
	dir := t.TempDir()
	te, px := newHostileTradeEnv(t, dir, func(c *Config) { c.SettleWait = 3 * time.Second })
	te.tradeReady(t, messages.PolicySettings{})

	// A forged push of a fill 100× the order's qty.
	id, r := lostCreateWithPush(t, te, px, dir, limitArgs("0.010", "30002"), map[string]any{"orderStatus": "Filled", "qty": "1", "cumExecQty": "1",
		"cumExecValue": "30002", "avgPrice": "30002", "price": "30002", "leavesQty": "0"})
	done := make(chan *execResult, 1)
	if r.Err == nil || r.Err.Code != messages.CodeOutcomeUnknown || r.ClientOrderID != id || r.Err.Details["reconnaissance"] != "not_found" {
		t.Fatalf("a forged fill settled the create: %+v (%s)", r, errText(r.Err))
	}
	if !contains(journalOf(t, dir), "order_outcome:"+id+":not_found:reconnaissance") {
		t.Fatalf("journal %v lacks the not_found outcome", journalOf(t, dir))
	}
	waitAnomaly(t, dir, id, messages.AnomalySourceStream, "qty")

	// An order someone else placed under the attempt's id, 100× its qty:
	// REST finds it, and it still settles nothing.
	te.fault(t, "http_5xx", venue.PathOrderCreate)
	seen := attemptIDs(t, dir)
	go func() { done <- te.exec(t, limitArgs("0.010", "30003")) }()
	id2 := nextAttempt(t, dir, seen)
	te.waitFaultsFired(t)
	if _, err := te.outside(t).CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("1"), Price: decimal.RequireFromString("30003"), OrderLinkID: id2}); err != nil {
		t.Fatal(err)
	}
	r = <-done
	if r.Err == nil || r.Err.Code != messages.CodeOutcomeUnknown || r.ClientOrderID != id2 || r.Err.Details["reconnaissance"] != "mismatch" {
		t.Fatalf("another order under the id settled the create: %+v (%s)", r, errText(r.Err))
	}
	waitAnomaly(t, dir, id2, messages.AnomalySourceREST, "qty")
	if st := te.snapshot(t); len(st.Attempts) != 1 {
		t.Fatalf("%d open attempts, want the mismatched one left open", len(st.Attempts))
	}

	// The reconcile after a reconnect checks the same: the look-up finds
	// the other order and leaves the attempt open.
	before := len(anomaliesOf(t, dir))
	px.Cut()
	deadline := time.Now().Add(10 * time.Second)
	for len(anomaliesOf(t, dir)) == before {
		if time.Now().After(deadline) {
			t.Fatalf("the reconcile journaled no anomaly: %v", journalOf(t, dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, g := range journalOf(t, dir) {
		if strings.HasPrefix(g, "order_outcome:"+id2+":") {
			t.Fatalf("the reconcile settled the attempt with another order: %s", g)
		}
	}
	if st := te.snapshot(t); len(st.Attempts) != 1 {
		t.Fatalf("%d open attempts after the reconcile, want 1", len(st.Attempts))
	}
}

// lostCreateWithPush places args with the venue's answer to the create
// lost (the venue never accepted it) and, as soon as its attempt is
// journaled, has the proxy push an order row under its client order id
// with the fields of push; it returns the client order id and the answer.
func lostCreateWithPush(t *testing.T, te *tradeEnv, px *hostile.Proxy, dir string, args messages.PlaceOrderArgs, push map[string]any) (string, *execResult) {
	t.Helper()
	te.fault(t, "http_5xx", venue.PathOrderCreate)
	seen := attemptIDs(t, dir)
	done := make(chan *execResult, 1)
	go func() { done <- te.exec(t, args) }()
	id := nextAttempt(t, dir, seen)
	row := map[string]any{"orderLinkId": id}
	for k, v := range push {
		row[k] = v
	}
	px.Inject(hostile.Push("order", hostile.Order(row)))
	return id, <-done
}

// waitAnomaly waits for a venue_anomaly of the attempt from source naming
// field.
func waitAnomaly(t *testing.T, dir, id, source, field string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, a := range anomaliesOf(t, dir) {
			if a.Kind == messages.AnomalyOrderMismatch && a.ClientOrderID == id && a.Source == source && a.Field == field && a.Count >= 1 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no venue_anomaly %s/%s for %s: %+v", source, field, id, anomaliesOf(t, dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errText shows an answer's error, or that there was none.
func errText(e *messages.Error) string {
	if e == nil {
		return "no error"
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// waitFaultsFired waits until every fault set on the simulator has fired
// as often as it was asked to.
func (te *tradeEnv) waitFaultsFired(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(te.ann.REST + "/sim/faults")
		if err != nil {
			t.Fatal(err)
		}
		var faults []struct {
			Count int `json:"count"`
			Fired int `json:"fired"`
		}
		err = json.NewDecoder(resp.Body).Decode(&faults)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		pending := 0
		for _, f := range faults {
			if f.Fired < f.Count {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("faults never fired: %+v", faults)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
