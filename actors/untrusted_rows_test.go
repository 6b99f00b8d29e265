package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// D95: a read-back of this order that disagrees in any field is dropped,
// every field checked (not only the first that disagrees): a read-back
// with a status that is not Bybit's and a filled quantity 100x the
// order's never reaches place_order's answer (stored for replays too) as
// a known filled_qty, and both fields are named.
func TestReadBackWithAnyMismatchReportsNoFill(t *testing.T) {
	expect := messages.OrderExpectation{ClientOrderID: "gx-abc-1", Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy",
		MaxQty: num("0.001"), MaxPrice: num("110000"), MinPrice: num("1")}
	ack := &messages.OrderAck{OrderID: "1f2e3d4c-0000-4000-8000-000000000001", OrderLinkID: "gx-abc-1"}
	rb := &messages.Order{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: ack.OrderID, OrderLinkID: "gx-abc-1", Side: "Buy",
		Status: "FILLED", Qty: num("0.1"), CumExecQty: num("0.1"), AvgPrice: num("100000")}
	kept, mism := checkReadBack(rb, expect, ack)
	w := &orderWritten{ack: ack, readBack: kept, mismatches: mism}
	planned := &messages.OrderAnswer{Symbol: "BTCUSDT", Side: "Buy"}
	ans := orderAnswerOf(planned, &orderResult{ClientOrderID: "gx-abc-1", ResultSource: "venue", Ack: ack}, w)
	oa, ok := ans.(*messages.OrderAnswer)
	if !ok {
		t.Fatalf("answer %T %+v", ans, ans)
	}
	if oa.FilledQty.Known && oa.FilledQty.Qty.GreaterThan(expect.MaxQty) {
		b, _ := json.Marshal(oa)
		t.Fatalf("a read-back that does not match (qty 100x, status %q) is answered as filled_qty %s: %s", rb.Status, oa.FilledQty.Qty, b)
	}
	if oa.FilledQty.Known || oa.OrderStatus != "" {
		t.Fatalf("a read-back that does not match contributes to the answer: status %q, filled %+v", oa.OrderStatus, oa.FilledQty)
	}
	if kept != nil || len(mism) != 2 || mism[0].Field != "order_status" || mism[1].Field != "qty" {
		t.Fatalf("kept %v, mismatches %+v", kept != nil, mism)
	}

	// Only the status is not Bybit's: the read-back is kept for the
	// answer to show that text fenced, its fill unknown.
	rb.Qty, rb.CumExecQty = num("0.001"), num("0.001")
	kept, mism = checkReadBack(rb, expect, ack)
	w = &orderWritten{ack: ack, readBack: kept, mismatches: mism}
	oa, ok = orderAnswerOf(planned, &orderResult{ClientOrderID: "gx-abc-1", ResultSource: "venue", Ack: ack}, w).(*messages.OrderAnswer)
	if !ok || kept == nil || oa.FilledQty.Known || oa.OrderStatus != "" || !strings.Contains(oa.UntrustedText, "FILLED") {
		b, _ := json.Marshal(oa)
		t.Fatalf("a read-back whose only mismatch is its status text: kept %v, answer %s", kept != nil, b)
	}
}

// D95: a cancel's (and an amend's) expectation is the order as the server
// read it before the change (risk.Plan.changes): a read-back (or a
// settling push) of the same order id showing another side and a filled
// quantity 500x the order's does not match, and cancel_order does not
// answer it as filled.
func TestCancelReadBackIsBoundByTheOrderReadBefore(t *testing.T) {
	o := messages.Order{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: "1f2e3d4c-0000-4000-8000-000000000002", OrderLinkID: "gx-abc-2",
		Side: "Buy", Status: "New", Qty: num("0.01"), Price: num("90000")}
	plan := risk.Plan{Tool: "cancel_order", Category: o.Category, Symbol: o.Symbol, SettleLinkID: o.OrderLinkID, Changes: &o,
		Cancel: &messages.CancelOrderRequest{Category: o.Category, Symbol: o.Symbol, OrderID: o.OrderID}}
	expect := plan.OrderExpectation(o.OrderLinkID)
	rb := o
	rb.Side, rb.Status, rb.Qty, rb.CumExecQty, rb.AvgPrice = "Sell", "Filled", num("5"), num("5"), num("1")
	kept, mism := checkReadBack(&rb, *expect, &messages.OrderAck{OrderID: o.OrderID, OrderLinkID: o.OrderLinkID})
	read, e := readAfterWrite(&orderWritten{readBack: kept, mismatches: mism}, o.OrderID, o.OrderLinkID, "gx-act-1")
	if e != nil {
		t.Fatal(e)
	}
	res := venue.CancelResult(read)
	if res.FilledQty.Known && res.FilledQty.Qty.GreaterThan(o.Qty) {
		t.Fatalf("a cancel's read-back with side %s and filled %s of an order of %s %s settles: %s filled_qty %s (mismatches %v)",
			rb.Side, rb.CumExecQty, o.Side, o.Qty, res.Status, res.FilledQty.Qty, mism)
	}
	if res.Status != messages.ChangeCancelRequested || len(mism) != 2 || mism[0].Field != "side" || mism[1].Field != "qty" {
		t.Fatalf("status %s, mismatches %+v", res.Status, mism)
	}
}

// D89: a venue_update is bounded in bytes as well as rows: even rows whose
// text is long (the venue package bounds it; a buffer does not rely on
// that) fill one record only up to maxVenueUpdateBytes, the rest counted
// in omitted.
func TestVenueUpdateRecordsAreBoundedInBytes(t *testing.T) {
	b := newVenueUpdateBuffer()
	pad := strings.Repeat("A", 30000)
	var rows []messages.Order
	for i := range maxVenueUpdateRows {
		o := pushedOrder(fmt.Sprint("id", i), fmt.Sprintf("gx-%d-%s", i, pad), "New")
		rows = append(rows, o)
	}
	b.add(time.Now(), rows)
	took, omitted, at, _ := b.take()
	ev := messages.VenueUpdateEvent{At: at.UTC(), Omitted: omitted}
	for _, o := range took { // as journalVenueUpdate builds the record
		ev.Orders = append(ev.Orders, messages.VenueOrderMark{ClientOrderID: o.OrderLinkID, OrderID: o.OrderID, Category: o.Category, Symbol: o.Symbol,
			Side: o.Side, Status: o.Status, Qty: o.Qty, CumExecQty: o.CumExecQty, AvgPrice: o.AvgPrice, Origin: messages.OriginExternal})
	}
	payload, _ := json.Marshal(ev)
	if len(payload) > 256<<10 {
		t.Fatalf("one venue_update of %d rows is %d bytes (allowed every %s)", len(took), len(payload), venueUpdateEvery)
	}
	if len(took)+omitted != maxVenueUpdateRows || omitted == 0 {
		t.Fatalf("%d rows kept, %d omitted, of %d", len(took), omitted, maxVenueUpdateRows)
	}
}

// D89: a venue_update keeps the server's own orders first, and own is
// decided by the client order ids the server sent (venueUpdateBuffer.sent),
// not by the "gx-" prefix alone, which is exchange text: 128 forged orders
// with "gx-" client order ids pushed within 200 ms do not push the
// server's real order out of the record.
func TestForgedOwnPrefixDoesNotPushOutSentOrders(t *testing.T) {
	b := newVenueUpdateBuffer()
	b.sent("gx-4a5b6c7d8e-1")
	for i := range maxVenueUpdateRows {
		b.add(time.Now(), []messages.Order{pushedOrder(fmt.Sprint("forged", i), fmt.Sprint("gx-forged-", i), "Filled")})
	}
	b.add(time.Now(), []messages.Order{pushedOrder("real", "gx-4a5b6c7d8e-1", "Filled")})
	rows, _, _, _ := b.take()
	for _, r := range rows {
		if r.OrderID == "real" {
			return
		}
	}
	t.Fatalf("the server's own order is not among the %d rows of the venue_update (forged \"gx-\" rows took every place)", len(rows))
}

// D95: a push that matches a create in every field does not settle it
// when REST then answers that the venue has no such order: place_order
// answers outcome_unknown (reconnaissance "conflict"), no order_outcome
// is journaled (the attempt stays open for a later reconcile), and the
// disagreement is a venue_anomaly.
func TestMatchingPushThatRESTDoesNotKnowSettlesNothing(t *testing.T) {
	dir := t.TempDir()
	te, px := newHostileTradeEnv(t, dir, func(c *Config) { c.SettleWait = 3 * time.Second })
	te.tradeReady(t, messages.PolicySettings{})
	id, r := lostCreateWithPush(t, te, px, dir, limitArgs("0.010", "30002"), map[string]any{"orderStatus": "Filled", "qty": "0.010", "cumExecQty": "0.010",
		"cumExecValue": "300.02", "avgPrice": "30002", "price": "30002", "leavesQty": "0"})
	if r.Err == nil || r.Err.Code != messages.CodeOutcomeUnknown || r.ClientOrderID != id || r.Err.Details["reconnaissance"] != "conflict" {
		t.Fatalf("a push REST does not know settled the create: %+v (%s)", r, errText(r.Err))
	}
	waitAnomaly(t, dir, id, messages.AnomalySourceStream, venue.FieldNotFoundByREST)
	for _, g := range journalOf(t, dir) {
		if strings.HasPrefix(g, "order_outcome:"+id+":") {
			t.Fatalf("the attempt was settled: %s", g)
		}
	}
	if st := te.snapshot(t); len(st.Attempts) != 1 {
		t.Fatalf("%d open attempts, want the conflicting one left open", len(st.Attempts))
	}
}
