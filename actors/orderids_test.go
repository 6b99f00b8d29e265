package actors

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// The book admits an order id under one client order id only; a flood of
// other ids cannot push the server's own out.
func TestOrderIDBookAdmitsAnOrderIDUnderOneClientOrderID(t *testing.T) {
	b := newOrderIDBook()
	for _, step := range []struct {
		orderID, clientOrderID, knownAs string
		ok                              bool
	}{
		{"oid-1", "gx-a", "", true},
		{"oid-1", "gx-a", "gx-a", true},
		{"oid-1", "gx-b", "gx-a", false},
		{"oid-1", "", "gx-a", false},
		{"oid-2", "", "", true},
		{"oid-2", "probe-1", "", false},
		{"", "gx-c", "", true},
	} {
		knownAs, ok := b.admit(step.orderID, step.clientOrderID)
		if ok != step.ok || (!ok && knownAs != step.knownAs) {
			t.Fatalf("admit(%q, %q) = %q, %v; want %v (known as %q)", step.orderID, step.clientOrderID, knownAs, ok, step.ok, step.knownAs)
		}
	}
	for i := range 2 * maxKnownOrderIDs {
		b.admit("flood-"+strconv.Itoa(i), "ext-"+strconv.Itoa(i))
	}
	if _, ok := b.admit("oid-1", "gx-b"); ok {
		t.Fatal("a flood of external order ids pushed the server's own out")
	}
	kept, refused := b.admitOrders([]messages.Order{{OrderID: "oid-3", OrderLinkID: "gx-d"}, {OrderID: "oid-1", OrderLinkID: "x"}, {OrderID: "oid-4", OrderLinkID: "gx-e"}})
	if len(kept) != 2 || kept[0].OrderID != "oid-3" || kept[1].OrderID != "oid-4" || len(refused) != 1 || refused[0].knownAs != "gx-a" || refused[0].shownAs != "x" {
		t.Fatalf("admitOrders kept %+v, refused %+v", kept, refused)
	}
}

// reusedAnomalies returns the journal's order_id_reused anomalies.
func reusedAnomalies(t *testing.T, dir string) []messages.VenueAnomalyEvent {
	t.Helper()
	var out []messages.VenueAnomalyEvent
	for _, a := range anomaliesOf(t, dir) {
		if a.Kind == messages.AnomalyOrderIDReused {
			out = append(out, a)
		}
	}
	return out
}

// waitReused waits for the journal's first order_id_reused anomaly (it is
// sent to the journal without waiting) and returns them all.
func waitReused(t *testing.T, dir string) []messages.VenueAnomalyEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := reusedAnomalies(t, dir); len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownOrders is what get_posture shows of the server's own open orders.
func ownOrders(t *testing.T, te *tradeEnv) messages.OriginOrders {
	t.Helper()
	return postureOf(t, te.testSystem, te.user).Exposure.Orders[messages.OriginSystem]
}

// waitOwnOrders waits until get_posture shows n of the server's own open
// orders.
func waitOwnOrders(t *testing.T, te *tradeEnv, n int) messages.OriginOrders {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if o := ownOrders(t, te); o.Count == n {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("get_posture never showed %d own orders: %+v", n, postureOf(t, te.testSystem, te.user).Exposure)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outcomesOf counts the journal's order_outcome records of a client order
// id.
func outcomesOf(t *testing.T, dir, id string) int {
	n := 0
	for _, g := range journalOf(t, dir) {
		if strings.HasPrefix(g, "order_outcome:"+id+":") {
			n++
		}
	}
	return n
}

// The private stream pushes an order under the order id of the server's
// resting order but another client order id, cancelled: the push is not
// applied (the order still shows as the server's own and open, no
// venue_update names the other id), and it is journaled as a
// venue_anomaly of kind order_id_reused naming the server's order; the
// order's records are unchanged (D101).
func TestReusedOrderIDOnTheStreamIsNotApplied(t *testing.T) {
	dir := t.TempDir()
	te, px := newHostileTradeEnv(t, dir, nil)
	te.tradeReady(t, messages.PolicySettings{})
	a := te.exec(t, limitArgs("0.01", "25000"))
	if a.Err != nil || a.OrderID == "" {
		t.Fatalf("resting order: %+v (%s)", a, errText(a.Err))
	}
	before := waitOwnOrders(t, te, 1)
	postureBefore := postureOf(t, te.testSystem, te.user)

	px.Inject(hostile.Push("order", hostile.Order(map[string]any{"orderId": a.OrderID, "orderLinkId": "someone-else", "orderStatus": "Cancelled",
		"price": "25000", "qty": "0.01", "leavesQty": "0"})))
	// A push after it, of an order nobody knew: once it is journaled, the
	// one before it was handled.
	px.Inject(hostile.Push("order", hostile.Order(map[string]any{"orderId": "11111111-2222-4333-8444-555555555555", "orderLinkId": "marker-1"})))
	waitJournal(t, dir, "venue_update:marker-1:external")

	if got := reusedAnomalies(t, dir); len(got) != 1 || got[0].Source != messages.AnomalySourceStream || got[0].ClientOrderID != a.ClientOrderID ||
		got[0].OrderID != a.OrderID || got[0].ShownClientOrderID != "" || got[0].Field != "client_order_id" {
		t.Fatalf("order_id_reused anomalies %+v, want one from the stream naming %s", got, a.ClientOrderID)
	}
	if contains(journalOf(t, dir), "venue_update:someone-else:external") {
		t.Fatal("the push under a reused order id was journaled as a venue_update")
	}
	if after := ownOrders(t, te); after.Count != before.Count || !after.NotionalUSDT.Equal(before.NotionalUSDT) {
		t.Fatalf("the server's own open orders moved: %+v, before %+v", after, before)
	}
	postureAfter := postureOf(t, te.testSystem, te.user)
	if postureAfter.State != postureBefore.State || postureAfter.Limits["daily_notional_cap_usdt"] != postureBefore.Limits["daily_notional_cap_usdt"] {
		t.Fatalf("the posture moved: %+v, before %+v", postureAfter, postureBefore)
	}
	if n := outcomesOf(t, dir, a.ClientOrderID); n != 1 {
		t.Fatalf("%d outcomes of the server's order, want its one", n)
	}
	if st := te.snapshot(t); len(st.Attempts) != 0 {
		t.Fatalf("open attempts %v", st.Attempts)
	}
}

// orderIDRewriter is the venue's REST answers as a venue that reuses ids
// would give them: while armed, every order id in the answers of the
// armed paths (the create's, and each order row) is replaced by one.
type orderIDRewriter struct {
	mu      sync.Mutex
	paths   []string
	orderID string
}

func (r *orderIDRewriter) arm(orderID string, paths ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.orderID, r.paths = orderID, paths
}

func (r *orderIDRewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	r.mu.Lock()
	id, armed := r.orderID, false
	for _, p := range r.paths {
		armed = armed || req.URL.Path == p
	}
	r.mu.Unlock()
	if err != nil || !armed {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var envelope map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&envelope) == nil {
		if res, ok := envelope["result"].(map[string]any); ok {
			if _, ok := res["orderId"]; ok {
				res["orderId"] = id
			}
			list, _ := res["list"].([]any)
			for _, row := range list {
				if o, ok := row.(map[string]any); ok {
					o["orderId"] = id
				}
			}
		}
		body, _ = json.Marshal(envelope)
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// The venue answers a create, and reads the new order back, under the
// order id of the server's resting order: the answer is not applied (no
// outcome is journaled, the attempt stays open, the agent is told the
// outcome is unknown with reconnaissance "order_id_reused"), it is
// journaled as a venue_anomaly of kind order_id_reused from REST naming
// both of the server's orders, and the resting order's records and the
// posture do not move (D101).
func TestReusedOrderIDInARESTAnswerIsNotApplied(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	rw := &orderIDRewriter{}
	te.stop()
	te.client = func(c *venue.Config) { c.HTTPClient = &http.Client{Transport: rw, Timeout: 10 * time.Second} }
	te.testSystem = te.start(t, dir)

	a := te.exec(t, limitArgs("0.01", "25000"))
	if a.Err != nil || a.OrderID == "" {
		t.Fatalf("resting order: %+v (%s)", a, errText(a.Err))
	}
	waitOwnOrders(t, te, 1)

	rw.arm(a.OrderID, venue.PathOrderCreate, "/v5/order/realtime", "/v5/order/history")
	b := te.exec(t, limitArgs("0.01", "25001"))
	rw.arm("")
	if b.Err == nil || b.Err.Code != messages.CodeOutcomeUnknown || b.Err.Details["reconnaissance"] != "order_id_reused" || b.ClientOrderID == "" ||
		b.ClientOrderID == a.ClientOrderID {
		t.Fatalf("a create answered under the resting order's id: %+v (%s)", b, errText(b.Err))
	}
	got := waitReused(t, dir)
	if len(got) != 1 || got[0].Source != messages.AnomalySourceREST || got[0].ClientOrderID != a.ClientOrderID || got[0].ShownClientOrderID != b.ClientOrderID ||
		got[0].OrderID != a.OrderID {
		t.Fatalf("order_id_reused anomalies %+v, want one from REST naming %s and %s", got, a.ClientOrderID, b.ClientOrderID)
	}
	if n := outcomesOf(t, dir, b.ClientOrderID); n != 0 {
		t.Fatalf("%d outcomes journaled for the create answered under a reused id", n)
	}
	if n := outcomesOf(t, dir, a.ClientOrderID); n != 1 {
		t.Fatalf("%d outcomes of the resting order, want its one", n)
	}
	st := te.snapshot(t)
	if _, open := st.Attempts[b.ClientOrderID]; !open || len(st.Attempts) != 1 {
		t.Fatalf("open attempts %v, want only the create's", st.Attempts)
	}
}
