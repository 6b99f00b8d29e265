package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Each REST fault kind on create, amend and cancel: what the client sees,
// and what the ledger holds afterwards.
func TestOrderFaultsOnCreateAmendCancel(t *testing.T) {
	type setup struct {
		ts   *tradeSim
		base string
		id   string // a resting order, for amend and cancel
	}
	start := func(t *testing.T) setup {
		ts := newTradeSim(t, 31, map[string]string{"USDT": "100000"})
		srv := serve(t, ts.s)
		ts.movePrice("linear", "BTCUSDT", "60000")
		id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"59000.0"}`)
		return setup{ts: ts, base: srv.URL, id: id}
	}
	type op struct {
		path, body func(id string) string
		// applied reports whether the ledger shows the request's effect.
		applied func(st setup) bool
	}
	ops := map[string]op{
		"create": {
			path: func(string) string { return "/v5/order/create" },
			body: func(string) string {
				return `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.010","price":"58000.0","orderLinkId":"f-1"}`
			},
			applied: func(st setup) bool {
				n := 0
				for _, r := range st.ts.simOrders() {
					if r.OrderLinkID == "f-1" {
						n++
					}
				}
				if n > 1 {
					st.ts.t.Fatalf("%d orders with one orderLinkId", n)
				}
				return n == 1
			},
		},
		"amend": {
			path: func(string) string { return "/v5/order/amend" },
			body: func(id string) string {
				return `{"category":"linear","symbol":"BTCUSDT","orderId":"` + id + `","qty":"0.020"}`
			},
			applied: func(st setup) bool { return field(st.ts.t, st.ts.order("linear", st.id), "qty") == "0.020" },
		},
		"cancel": {
			path: func(string) string { return "/v5/order/cancel" },
			body: func(id string) string { return `{"category":"linear","symbol":"BTCUSDT","orderId":"` + id + `"}` },
			applied: func(st setup) bool {
				return field(st.ts.t, st.ts.order("linear", st.id), "orderStatus") == "Cancelled"
			},
		},
	}
	kinds := []struct {
		fault   string
		applied bool
		check   func(t *testing.T, resp *http.Response, body []byte, err error)
	}{
		{`{"kind":"delay","delay_ms":120}`, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil {
				t.Fatal(err)
			}
			mustOK(t, parseResult(t, resp.StatusCode, resp.Header, body))
		}},
		{`{"kind":"drop_response"}`, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("dropped answer reached the client: HTTP %d %s", resp.StatusCode, body)
			}
		}},
		{`{"kind":"http_5xx"}`, false, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != http.StatusBadGateway || json.Valid(body) {
				t.Fatalf("want a non-JSON 502, got %v %v", err, resp)
			}
		}},
		{`{"kind":"http_5xx","apply":true}`, true, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("want a 502, got %v %v", err, resp)
			}
		}},
		{`{"kind":"rate_limit"}`, false, func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil {
				t.Fatal(err)
			}
			r := parseResult(t, resp.StatusCode, resp.Header, body)
			wantCode(t, r, codeTooManyVisit)
			if r.header.Get("X-Bapi-Limit-Reset-Timestamp") == "" {
				t.Fatal("no reset header")
			}
		}},
	}
	for name, o := range ops {
		for _, k := range kinds {
			t.Run(name+"/"+k.fault, func(t *testing.T) {
				st := start(t)
				fault := strings.Replace(k.fault, "{", `{"count":1,"path":"`+o.path(st.id)+`",`, 1)
				addFault(t, st.ts.s, fault)
				before := len(st.ts.simOrders())
				resp, body, err := postSigned(t, st.base, st.ts.k, st.ts.clock.ms(), o.path(st.id), o.body(st.id))
				k.check(t, resp, body, err)
				if got := o.applied(st); got != k.applied {
					t.Fatalf("applied = %v, want %v", got, k.applied)
				}
				want := before
				if name == "create" && k.applied {
					want++
				}
				if n := len(st.ts.simOrders()); n != want {
					t.Fatalf("/sim/orders holds %d, want %d", n, want)
				}
			})
		}
	}
}

// The private stream: order, execution, position and wallet messages in
// Bybit's envelope for a fill, in that order; a ws_delay holds them, a
// ws_disconnect cuts the stream while the order still trades.
func TestPrivateStreamPushesAndFaults(t *testing.T) {
	ts := newTradeSim(t, 32, map[string]string{"USDT": "100000"})
	srv := serve(t, ts.s)
	open := func() *websocket.Conn {
		c := dialWS(t, srv.URL, "/v5/private")
		sendWS(t, c, authMsg(ts.k, ts.clock.ms()+5000, ""))
		if m, raw := readWS(t, c); string(m["success"]) != "true" {
			t.Fatalf("auth %s", raw)
		}
		sendWS(t, c, `{"op":"subscribe","args":["order","execution","position","wallet"]}`)
		if m, raw := readWS(t, c); string(m["success"]) != "true" {
			t.Fatalf("subscribe %s", raw)
		}
		return c
	}
	c := open()
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.010","orderLinkId":"ws-1"}`)
	var topics []string
	msgs := map[string]map[string]json.RawMessage{}
	for i := 0; i < 4; i++ {
		m, raw := readWS(t, c)
		wantKeys(t, "push", m, "creationTime,data,id,topic")
		topic := str(m["topic"])
		topics = append(topics, topic)
		var data []map[string]json.RawMessage
		if err := json.Unmarshal(m["data"], &data); err != nil || len(data) == 0 {
			t.Fatalf("push data is not a non-empty array: %s", raw)
		}
		msgs[topic] = data[0]
	}
	if strings.Join(topics, ",") != "order,execution,position,wallet" {
		t.Fatalf("topics %v", topics)
	}
	wantField(t, "order push", msgs["order"], "orderId", id)
	wantField(t, "order push", msgs["order"], "orderStatus", "Filled")
	wantField(t, "order push", msgs["order"], "category", "linear")
	wantField(t, "execution push", msgs["execution"], "orderLinkId", "ws-1")
	wantDec(t, "position push", msgs["position"], "size", "0.01")
	if _, ok := msgs["position"]["entryPrice"]; !ok {
		t.Fatal("position push without entryPrice")
	}
	if _, ok := msgs["position"]["avgPrice"]; ok {
		t.Fatal("position push with the REST avgPrice")
	}
	wantField(t, "wallet push", msgs["wallet"], "accountType", "UNIFIED")

	// A resting order's fill is pushed when the price reaches it.
	ts.movePrice("linear", "BTCUSDT", "60000")
	readUntil := func(c *websocket.Conn, topic string) map[string]json.RawMessage {
		for i := 0; i < 10; i++ {
			m, _ := readWS(t, c)
			if str(m["topic"]) == topic {
				var data []map[string]json.RawMessage
				_ = json.Unmarshal(m["data"], &data)
				return data[0]
			}
		}
		t.Fatalf("no %s push", topic)
		return nil
	}
	rest := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Limit","qty":"0.010","price":"60500.0"}`)
	wantField(t, "new", readUntil(c, "order"), "orderStatus", "New")
	ts.movePrice("linear", "BTCUSDT", "60600")
	o := readUntil(c, "order")
	wantField(t, "filled later", o, "orderId", rest)
	wantField(t, "filled later", o, "orderStatus", "Filled")
	for _, want := range []string{"execution", "position", "wallet"} {
		if m, raw := readWS(t, c); str(m["topic"]) != want {
			t.Fatalf("want %s, got %s", want, raw)
		}
	}

	// ws_delay holds the next push.
	addFault(t, ts.s, `{"kind":"ws_delay","path":"/v5/private","count":1,"delay_ms":150}`)
	began := time.Now()
	ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.010"}`)
	readWS(t, c)
	if d := time.Since(began); d < 150*time.Millisecond {
		t.Fatalf("delayed push after %v", d)
	}
	// ws_disconnect cuts the stream; the order is still accepted and filled.
	c2 := open()
	addFault(t, ts.s, `{"kind":"ws_disconnect","path":"/v5/private","count":1}`)
	id = ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.010"}`)
	cut := 0
	for _, conn := range []*websocket.Conn{c, c2} {
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				if !strings.Contains(err.Error(), "timeout") {
					cut++
				}
				break
			}
		}
	}
	if cut != 1 {
		t.Fatalf("%d connections cut, want 1", cut)
	}
	wantField(t, "after disconnect", ts.order("linear", id), "orderStatus", "Filled")
}
