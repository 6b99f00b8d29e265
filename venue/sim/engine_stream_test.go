package sim

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// subscribePrivate opens an authenticated private stream subscribed to
// the order topic.
func subscribePrivate(t *testing.T, base string, ts *tradeSim, topics string) *websocket.Conn {
	t.Helper()
	c := dialWS(t, base, "/v5/private")
	sendWS(t, c, authMsg(ts.k, ts.clock.ms()+5000, ""))
	if m, raw := readWS(t, c); string(m["success"]) != "true" {
		t.Fatalf("auth %s", raw)
	}
	sendWS(t, c, `{"op":"subscribe","args":`+topics+`}`)
	if m, raw := readWS(t, c); string(m["success"]) != "true" {
		t.Fatalf("subscribe %s", raw)
	}
	return c
}

func orderPush(t *testing.T, c *websocket.Conn) map[string]json.RawMessage {
	t.Helper()
	m, raw := readWS(t, c)
	if str(m["topic"]) != "order" {
		t.Fatalf("want an order push, got %s", raw)
	}
	var data []map[string]json.RawMessage
	decodeInto(t, m["data"], &data)
	return data[0]
}

// A cancel that loses the race against a fill: the order stays Filled and
// a second Filled message reports the refused cancel (docs/bybit.md "Trade endpoints").
func TestCancelRacingAFill(t *testing.T) {
	clock := newClock(testNow)
	s := New(Config{Seed: 51, Now: clock.Now, VisibilityDelay: 500 * time.Millisecond})
	ts := &tradeSim{t: t, s: s, clock: clock, k: s.DefaultKey()}
	srv := serve(t, s)
	mustOK(t, do(t, s, http.MethodPost, "/sim/accounts/"+ts.k.APIKey+"/balances", []byte(`{"USDT":"100000"}`), nil))
	c := subscribePrivate(t, srv.URL, ts, `["order"]`)
	ts.movePrice("linear", "BTCUSDT", "60000")
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Limit","qty":"0.010","price":"60500.0"}`)
	clock.Advance(500 * time.Millisecond)
	ts.movePrice("linear", "BTCUSDT", "60000") // applies the create: it rests
	wantField(t, "rests", orderPush(t, c), "orderStatus", "New")
	mustOK(t, ts.post("/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`"}`))
	ts.movePrice("linear", "BTCUSDT", "60600") // fills before the cancel applies
	filled := orderPush(t, c)
	wantField(t, "fill", filled, "orderStatus", "Filled")
	wantField(t, "fill", filled, "rejectReason", "EC_NoError")
	clock.Advance(500 * time.Millisecond)
	ts.movePrice("linear", "BTCUSDT", "60600") // the cancel applies now
	late := orderPush(t, c)
	wantField(t, "late cancel", late, "orderId", id)
	wantField(t, "late cancel", late, "orderStatus", "Filled")
	wantField(t, "late cancel", late, "cancelType", "CancelByUser")
	wantField(t, "late cancel", late, "rejectReason", "EC_OrigClOrdIDDoesNotExist")
	wantField(t, "ledger", ts.order("linear", id), "orderStatus", "Filled")
}

// With nobody calling the REST API, the background sweeper still fills a
// resting order the walk reaches and pushes it on the stream.
func TestSweeperFillsAndPushesWithoutRequests(t *testing.T) {
	ts := newTradeSim(t, 14, map[string]string{"USDT": "100000"})
	srv := serve(t, ts.s)
	c := subscribePrivate(t, srv.URL, ts, `["order"]`)
	in := ts.s.catalog.get(catLinear, "ETHUSDT")
	start := floorDiv(ts.clock.ms(), 1000)
	low := ts.s.model.last(in, start+1)
	for sec := start + 1; sec <= start+7200; sec++ {
		low = decimalMin(low, ts.s.model.last(in, sec))
	}
	id := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.10","price":"` + low.StringFixed(2) + `"}`)
	wantField(t, "new", orderPush(t, c), "orderStatus", "New")
	ts.clock.Advance(2 * time.Hour) // the simulator's clock moves; no request follows
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	o := orderPush(t, c)
	wantField(t, "swept", o, "orderId", id)
	wantField(t, "swept", o, "orderStatus", "Filled")
}

// The stream fault kinds on create, amend and cancel: ws_delay holds the
// push that reports the change, ws_disconnect cuts the stream instead of
// sending it; either way the ledger holds the change.
func TestStreamFaultsOnCreateAmendCancel(t *testing.T) {
	type op struct {
		do     func(ts *tradeSim, id string) string // returns the order id to check
		status string
		qty    string
	}
	ops := map[string]op{
		"create": {func(ts *tradeSim, _ string) string {
			return ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"58000.0"}`)
		}, "New", "0.010"},
		"amend": {func(ts *tradeSim, id string) string {
			mustOK(ts.t, ts.post("/v5/order/amend", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`","qty":"0.030"}`))
			return id
		}, "New", "0.030"},
		"cancel": {func(ts *tradeSim, id string) string {
			mustOK(ts.t, ts.post("/v5/order/cancel", `{"category":"linear","symbol":"BTCUSDT","orderId":"`+id+`"}`))
			return id
		}, "Cancelled", "0.010"},
	}
	for name, o := range ops {
		for _, kind := range []string{"ws_delay", "ws_disconnect"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				ts := newTradeSim(t, 52, map[string]string{"USDT": "100000"})
				srv := serve(t, ts.s)
				ts.movePrice("linear", "BTCUSDT", "60000")
				base := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"59000.0"}`)
				c := subscribePrivate(t, srv.URL, ts, `["order"]`)
				addFault(t, ts.s, `{"kind":"`+kind+`","path":"/v5/private","count":1,"delay_ms":150}`)
				began := time.Now()
				id := o.do(ts, base)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, data, err := c.ReadMessage()
				switch kind {
				case "ws_delay":
					if err != nil {
						t.Fatal(err)
					}
					if d := time.Since(began); d < 150*time.Millisecond {
						t.Fatalf("push after %v, want the 150 ms delay", d)
					}
					var m privatePush
					decodeInto(t, data, &m)
					if m.Topic != "order" || !json.Valid(data) {
						t.Fatalf("push %s", data)
					}
				case "ws_disconnect":
					if err == nil {
						t.Fatalf("stream survived ws_disconnect, got %s", data)
					}
				}
				row := ts.order("linear", id)
				wantField(t, "ledger", row, "orderStatus", o.status)
				wantField(t, "ledger", row, "qty", o.qty)
			})
		}
	}
}
