package venue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// orderPush is an order push of one linear BTCUSDT row with the given
// order id and client order id.
func orderPush(orderID, linkID string) string {
	return `{"topic":"order","creationTime":1700000000001,"data":[{"category":"linear","symbol":"BTCUSDT","orderId":"` + orderID + `",` +
		`"orderLinkId":"` + linkID + `","side":"Buy","orderType":"Limit","price":"50000","qty":"0.01","orderStatus":"New","cumExecQty":"0","createdTime":"1700000000000","updatedTime":"1700000000000"}]}`
}

// Every text field of a pushed row is bounded (decode.go): an order push
// whose client order id is 2 MB is refused as malformed (a gap), never
// delivered nor kept for WaitOrder; the next well-formed push is.
func TestStreamRowTextIsBounded(t *testing.T) {
	long := "gx-" + strings.Repeat("A", 2<<20)
	url, _ := scriptedServer(t, []string{
		orderPush("1f2e3d4c-0000-4000-8000-000000000003", long),
		orderPush("1f2e3d4c-0000-4000-8000-000000000004", "gx-short-1"),
	})
	s := newStream(t, venue.StreamConfig{URL: url, APIKey: "K1234", APISecret: "S1234"})
	nextEvent(t, s, nil, messages.StreamConnected)
	var skipped []messages.StreamEvent
	ev := nextEvent(t, s, &skipped, messages.StreamOrders)
	if len(ev.Orders) == 1 && len(ev.Orders[0].OrderLinkID) > 1024 {
		t.Fatalf("an order row with a client order id of %d bytes was delivered (and kept for WaitOrder)", len(ev.Orders[0].OrderLinkID))
	}
	if len(ev.Orders) != 1 || ev.Orders[0].OrderLinkID != "gx-short-1" {
		t.Fatalf("orders %+v", ev.Orders)
	}
	gap := false
	for _, e := range skipped {
		gap = gap || (e.Kind == messages.StreamGap && e.Reason == "malformed_push")
	}
	if !gap {
		t.Fatalf("the refused push was not reported as a gap: %+v", skipped)
	}
}

// The stream's memory of pushed rows (WaitOrder's recent ids, the
// events) holds bounded text: 64 pushes of one order each, with a 2 MB
// client order id, are refused and leave no such text on the heap.
func TestStreamRetainsNoPushedTextByTheMegabyte(t *testing.T) {
	const pushes = 64
	var script []string
	for i := range pushes {
		long := fmt.Sprintf("gx-%d-", i) + strings.Repeat("A", 2<<20)
		script = append(script, orderPush("1f2e3d4c-0000-4000-8000-"+fmt.Sprintf("%012d", i), long))
	}
	script = append(script, orderPush("1f2e3d4c-0000-4000-8000-999999999999", "gx-last-1"))
	url, _ := scriptedServer(t, script) // the script is on the heap before and after
	s := newStream(t, venue.StreamConfig{URL: url, APIKey: "K1234", APISecret: "S1234"})
	nextEvent(t, s, nil, messages.StreamConnected)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	deadline := time.After(2 * time.Minute) // 128 MB of pushes to parse, slow under -race
	for {
		var ev messages.StreamEvent // consumed and dropped
		var open bool
		select {
		case ev, open = <-s.Events():
			if !open {
				t.Fatal("events closed")
			}
		case <-deadline:
			t.Fatal("the last push was not delivered")
		}
		for _, o := range ev.Orders {
			if len(o.OrderLinkID) > 1024 {
				t.Fatalf("an order row with a client order id of %d bytes was delivered", len(o.OrderLinkID))
			}
		}
		if len(ev.Orders) == 1 && ev.Orders[0].OrderLinkID == "gx-last-1" {
			break
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 32<<20 {
		t.Fatalf("after %d order pushes, each consumed, the stream holds %d MB more heap", pushes, grown>>20)
	}
}

// pushWaiter is a private stream that showed one push for the
// client order id (a hostile proxy's), matching the attempt in every field
// OrderExpectation checks.
type pushWaiter struct{ push messages.Order }

func (w pushWaiter) WaitMatchingOrder(_ context.Context, e *messages.OrderExpectation, _ time.Duration) (messages.Order, bool, []string) {
	if f := e.Mismatch(&w.push); f != "" {
		return messages.Order{}, false, []string{f}
	}
	return w.push, true, nil
}

// Issue 17 A: "anything else is a journaled anomaly and the outcome is
// settled by REST". When REST answers, without error, that the venue has
// no order with the client order id (open orders and history both empty),
// a push matching the attempt in every field (a proxy can forge one: the
// next "gx-" id is predictable) settles nothing: the outcome stays unknown
// (reconnaissance "conflict") and the disagreement is an anomaly.
func TestSettleTakesRESTsNotFoundOverAPush(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"retCode":0,"retMsg":"OK","result":{"category":"linear","list":[],"nextPageCursor":""},"retExtInfo":{},"time":1764640000000}`))
	}))
	t.Cleanup(srv.Close)
	c, err := venue.NewClient(venue.Config{BaseURL: srv.URL, APIKey: "restkey", APISecret: "restsecret"})
	if err != nil {
		t.Fatal(err)
	}
	expect := messages.OrderExpectation{ClientOrderID: "gx-4a5b6c7d8e-7", Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy",
		MaxQty: dec("0.001"), MaxPrice: dec("110000"), MinPrice: dec("1")}
	forged := messages.Order{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: "1f2e3d4c-0000-4000-8000-000000000009", OrderLinkID: expect.ClientOrderID,
		Side: "Buy", Status: "Filled", Qty: dec("0.001"), CumExecQty: dec("0.001"), AvgPrice: dec("100000")}
	s, mism, err := venue.Settle(context.Background(), c, pushWaiter{forged}, expect, time.Millisecond)
	if s != nil {
		t.Fatalf("REST shows no such order, yet the attempt is settled by the push: found_by %s, status %s, filled %s", s.FoundBy, s.Order.Status, s.FilledQty.Qty)
	}
	if messages.CodeOf(err) != messages.CodeOutcomeUnknown || messages.AsError(err).Details["reconnaissance"] != "conflict" {
		t.Fatalf("err %v", err)
	}
	if len(mism) != 1 || mism[0].Source != messages.AnomalySourceStream || mism[0].Field != venue.FieldNotFoundByREST {
		t.Fatalf("the disagreement is not returned as an anomaly: %+v", mism)
	}
}

// D183: a push never settles an unknown outcome. When REST cannot be
// read (every order read answers 503), a push matching the attempt in
// every field (Filled, the whole qty: a forged one, or the venue's own
// rewritten) settles nothing: the outcome stays unknown with
// reconnaissance "failed", as without the push, and no settlement says
// what the push said. Before D183 it settled the write from the push.
func TestSettleDoesNotTakeAPushWhenRESTFails(t *testing.T) {
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	c, err := venue.NewClient(venue.Config{BaseURL: srv.URL, APIKey: "restkey", APISecret: "restsecret", Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	expect := messages.OrderExpectation{ClientOrderID: "gx-4a5b6c7d8e-8", Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy",
		MaxQty: dec("0.001"), MaxPrice: dec("110000"), MinPrice: dec("1")}
	pushed := messages.Order{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: "1f2e3d4c-0000-4000-8000-00000000000a", OrderLinkID: expect.ClientOrderID,
		Side: "Buy", Status: "Filled", Qty: dec("0.001"), CumExecQty: dec("0.001"), AvgPrice: dec("100000")}
	if f := expect.Mismatch(&pushed); f != "" {
		t.Fatalf("the push does not match the attempt (%s): the test would prove nothing", f)
	}
	s, mism, err := venue.Settle(context.Background(), c, pushWaiter{pushed}, expect, time.Millisecond)
	if s != nil {
		t.Fatalf("REST could not be read, yet the push settled the write: found_by %s, status %s, filled %s", s.FoundBy, s.Order.Status, s.FilledQty)
	}
	e := messages.AsError(err)
	if e.Code != messages.CodeOutcomeUnknown || e.Details["reconnaissance"] != "failed" || e.Details["client_order_id"] != expect.ClientOrderID {
		t.Fatalf("err %+v", e)
	}
	if !errors.Is(err, venue.ErrOutcomeUnknown) {
		t.Fatalf("err %v is not ErrOutcomeUnknown", err)
	}
	if len(mism) != 0 {
		t.Fatalf("a matching push is no anomaly: %+v", mism)
	}
	if reads.Load() == 0 {
		t.Fatal("REST was not read")
	}
}

// restRows is a REST venue whose every list answer holds the given rows.
func restRows(t *testing.T, rows string) *venue.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"retCode":0,"retMsg":"OK","result":{"category":"linear","list":[` + rows + `],"nextPageCursor":""},"retExtInfo":{},"time":1764640000000}`))
	}))
	t.Cleanup(srv.Close)
	c, err := venue.NewClient(venue.Config{BaseURL: srv.URL, APIKey: "restkey", APISecret: "restsecret"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// REST shares the stream's text bounds (fieldDecoder.text): an answer
// with an order, an execution or a position whose text field is past its
// bound is refused as malformed, never returned; one within the bounds
// is read.
func TestRESTRowTextIsBounded(t *testing.T) {
	ctx := context.Background()
	order := func(field, v string) string {
		row := map[string]any{"symbol": "BTCUSDT", "orderId": "1f2e3d4c-0000-4000-8000-000000000005", "orderLinkId": "gx-ok-1", "side": "Buy",
			"orderType": "Limit", "price": "50000", "qty": "0.01", "orderStatus": "New", "cumExecQty": "0", "rejectReason": "EC_NoError",
			"createdTime": "1700000000000", "updatedTime": "1700000000000"}
		if field != "" {
			row[field] = v
		}
		b, _ := json.Marshal(row)
		return string(b)
	}
	if page, err := restRows(t, order("", "")).OpenOrders(ctx, venue.OrderQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"}); err != nil || len(page.Items) != 1 {
		t.Fatalf("a row within the bounds: %d rows, %v", len(page.Items), err)
	}
	for field, n := range map[string]int{"orderLinkId": 129, "orderId": 65, "symbol": 129, "orderStatus": 129, "side": 129, "orderType": 129,
		"timeInForce": 129, "stopOrderType": 129, "rejectReason": 1025} {
		_, err := restRows(t, order(field, strings.Repeat("A", n))).OpenOrders(ctx, venue.OrderQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
		if err == nil {
			t.Errorf("an order whose %s is %d bytes was read", field, n)
		}
	}
	exec := `{"symbol":"BTCUSDT","execId":"` + strings.Repeat("e", 65) + `","orderId":"1","orderLinkId":"","side":"Buy","execPrice":"1","execQty":"1","execTime":"1700000000000"}`
	if _, err := restRows(t, exec).Executions(ctx, venue.HistoryQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"}); err == nil {
		t.Error("an execution whose execId is 65 bytes was read")
	}
	pos := `{"symbol":"` + strings.Repeat("B", 129) + `","side":"Buy","size":"1","positionIdx":0}`
	if _, err := restRows(t, pos).Positions(ctx, venue.PositionQuery{Category: messages.CategoryLinear, SettleCoin: "USDT"}); err == nil {
		t.Error("a position whose symbol is 129 bytes was read")
	}
}
