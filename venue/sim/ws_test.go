package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func dialWS(t *testing.T, base, path string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(base, "http") + path
	c, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	resp.Body.Close()
	t.Cleanup(func() { c.Close() })
	return c
}

func sendWS(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// readWS reads one message as a map, failing after 5 s.
func readWS(t *testing.T, c *websocket.Conn) (map[string]json.RawMessage, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]json.RawMessage
	decodeInto(t, data, &m)
	return m, data
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func wantKeys(t *testing.T, what string, m map[string]json.RawMessage, keys string) {
	t.Helper()
	if got := strings.Join(keysOf(m), ","); got != keys {
		t.Fatalf("%s keys\n got %s\nwant %s", what, got, keys)
	}
}

func TestWSPublicLinear(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	s.pushInterval = 20 * time.Millisecond
	srv := serve(t, s)
	c := dialWS(t, srv.URL, "/v5/public/linear")

	sendWS(t, c, `{"op":"ping"}`)
	m, raw := readWS(t, c)
	wantKeys(t, "linear pong", m, "conn_id,op,req_id,ret_msg,success")
	if string(m["success"]) != "true" || str(m["ret_msg"]) != "pong" || str(m["op"]) != "ping" || str(m["req_id"]) != "" || str(m["conn_id"]) == "" {
		t.Fatalf("pong %s", raw)
	}

	sendWS(t, c, `{"req_id":"sub-1","op":"subscribe","args":["tickers.BTCUSDT"]}`)
	m, raw = readWS(t, c)
	wantKeys(t, "linear ack", m, "conn_id,op,req_id,ret_msg,success")
	if string(m["success"]) != "true" || str(m["ret_msg"]) != "" || str(m["op"]) != "subscribe" || str(m["req_id"]) != "sub-1" {
		t.Fatalf("ack %s", raw)
	}

	var lastTs int64
	for i := 0; i < 3; i++ {
		m, raw = readWS(t, c)
		wantKeys(t, "ticker push", m, "cs,data,topic,ts,type")
		// Linear tickers: a snapshot, then deltas of the changed fields.
		wantType := "snapshot"
		if i > 0 {
			wantType = "delta"
		}
		if str(m["topic"]) != "tickers.BTCUSDT" || str(m["type"]) != wantType {
			t.Fatalf("push %s", raw)
		}
		ts := mustInt(t, m["ts"])
		mustInt(t, m["cs"])
		if ts < lastTs {
			t.Fatalf("ts went back")
		}
		lastTs = ts
		var data map[string]json.RawMessage
		decodeInto(t, m["data"], &data)
		for _, f := range []string{"symbol", "lastPrice", "markPrice", "indexPrice", "bid1Price", "ask1Price", "fundingRate", "nextFundingTime", "tickDirection", "openInterest", "price24hPcnt"} {
			if str(data[f]) == "" && (i == 0 || f == "symbol") {
				t.Fatalf("push data lacks %s: %s", f, m["data"])
			}
		}
		clock.Advance(time.Second)
	}

	// Unknown symbol and unsupported topic are refused; the rest is kept.
	sendWS(t, c, `{"op":"subscribe","args":["tickers.NOPEUSDT"]}`)
	for {
		m, raw = readWS(t, c)
		if str(m["op"]) == "subscribe" {
			break
		}
	}
	if string(m["success"]) != "false" || !strings.Contains(str(m["ret_msg"]), "NOPEUSDT") {
		t.Fatalf("refusal %s", raw)
	}
	sendWS(t, c, `{"op":"subscribe","args":["tickers.BTCUSDT"]}`)
	for {
		m, raw = readWS(t, c)
		if str(m["op"]) == "subscribe" {
			break
		}
	}
	if string(m["success"]) != "false" || !strings.Contains(str(m["ret_msg"]), "already subscribed") {
		t.Fatalf("duplicate %s", raw)
	}

	// After unsubscribing, pushes stop.
	sendWS(t, c, `{"op":"unsubscribe","args":["tickers.BTCUSDT"]}`)
	for {
		m, _ = readWS(t, c)
		if str(m["op"]) == "unsubscribe" {
			break
		}
	}
	if string(m["success"]) != "true" {
		t.Fatal("unsubscribe failed")
	}
	sendWS(t, c, `{"op":"ping","req_id":"p2"}`)
	m, raw = readWS(t, c)
	if str(m["op"]) != "ping" || str(m["req_id"]) != "p2" {
		t.Fatalf("after unsubscribe, expected only the pong, got %s", raw)
	}
}

func TestWSPublicSpot(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	srv := serve(t, s)
	c := dialWS(t, srv.URL, "/v5/public/spot")

	sendWS(t, c, `{"op":"ping"}`)
	m, raw := readWS(t, c)
	wantKeys(t, "spot pong", m, "conn_id,op,ret_msg,success")
	if str(m["ret_msg"]) != "pong" || str(m["op"]) != "ping" {
		t.Fatalf("pong %s", raw)
	}

	sendWS(t, c, `{"req_id":"10001","op":"subscribe","args":["tickers.SOLUSDT"]}`)
	m, raw = readWS(t, c)
	wantKeys(t, "spot ack", m, "conn_id,op,req_id,ret_msg,success")
	if string(m["success"]) != "true" || str(m["ret_msg"]) != "subscribe" || str(m["req_id"]) != "10001" {
		t.Fatalf("ack %s", raw)
	}
	m, raw = readWS(t, c)
	var data map[string]json.RawMessage
	decodeInto(t, m["data"], &data)
	wantKeys(t, "spot ticker", data, "highPrice24h,lastPrice,lowPrice24h,prevPrice24h,price24hPcnt,symbol,turnover24h,usdIndexPrice,volume24h")
	if str(m["topic"]) != "tickers.SOLUSDT" {
		t.Fatalf("push %s", raw)
	}

	// Linear-only symbols do not exist on spot and vice versa; spot takes
	// at most 10 args.
	args := make([]string, 11)
	for i := range args {
		args[i] = `"tickers.BTCUSDT"`
	}
	sendWS(t, c, `{"op":"subscribe","args":[`+strings.Join(args, ",")+`]}`)
	m, raw = readWS(t, c)
	if string(m["success"]) != "false" {
		t.Fatalf("11 args accepted: %s", raw)
	}
}

// authMsg builds a private auth request.
func authMsg(k Key, expires int64, sig string) string {
	if sig == "" {
		sig = sign(k.APISecret, wsAuthPayload(strconv.FormatInt(expires, 10)))
	}
	b, _ := json.Marshal(map[string]any{"req_id": "auth-1", "op": "auth", "args": []any{k.APIKey, expires, sig}})
	return string(b)
}

func TestWSPrivate(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	srv := serve(t, s)
	k := s.DefaultKey()
	c := dialWS(t, srv.URL, "/v5/private")

	// Ping works before auth, with the private pong shape.
	sendWS(t, c, `{"req_id":"test","op":"ping"}`)
	m, raw := readWS(t, c)
	wantKeys(t, "private pong", m, "args,conn_id,op,req_id")
	var args []string
	decodeInto(t, m["args"], &args)
	if str(m["op"]) != "pong" || str(m["req_id"]) != "test" || len(args) != 1 || args[0] != strconv.FormatInt(clock.ms(), 10) {
		t.Fatalf("pong %s", raw)
	}
	sendWS(t, c, `{"op":"ping"}`)
	m, _ = readWS(t, c)
	wantKeys(t, "private pong without req_id", m, "args,conn_id,op")

	// Subscribing before auth is refused.
	sendWS(t, c, `{"op":"subscribe","args":["order"]}`)
	m, raw = readWS(t, c)
	if string(m["success"]) != "false" || str(m["ret_msg"]) != "Request not authorized" {
		t.Fatalf("pre-auth subscribe %s", raw)
	}

	for _, tc := range []struct{ name, msg string }{
		{"expired", authMsg(k, clock.ms()-1, "")},
		{"expires now", authMsg(k, clock.ms(), "")},
		{"bad sign", authMsg(k, clock.ms()+10000, strings.Repeat("0", 64))},
		{"unknown key", authMsg(Key{APIKey: "nobody", APISecret: "x"}, clock.ms()+10000, "")},
		{"two args", `{"op":"auth","args":["` + k.APIKey + `", 1]}`},
		{"expires not a number", `{"op":"auth","args":["` + k.APIKey + `", "soon", "00"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sendWS(t, c, tc.msg)
			m, raw := readWS(t, c)
			if string(m["success"]) != "false" || str(m["op"]) != "auth" || str(m["conn_id"]) == "" {
				t.Fatalf("auth %s", raw)
			}
		})
	}

	sendWS(t, c, authMsg(k, clock.ms()+1000, ""))
	m, raw = readWS(t, c)
	wantKeys(t, "auth ok", m, "conn_id,op,req_id,ret_msg,success")
	if string(m["success"]) != "true" || str(m["ret_msg"]) != "" || str(m["op"]) != "auth" || str(m["req_id"]) != "auth-1" {
		t.Fatalf("auth %s", raw)
	}
	if !strings.Contains(string(raw), `{"success":true,"ret_msg":"","op":"auth","conn_id":"`) {
		t.Fatalf("auth field order %s", raw)
	}
	sendWS(t, c, authMsg(k, clock.ms()+1000, ""))
	if m, _ = readWS(t, c); string(m["success"]) != "false" {
		t.Fatal("second auth accepted")
	}

	sendWS(t, c, `{"op":"subscribe","args":["order","execution","position","wallet"]}`)
	m, raw = readWS(t, c)
	wantKeys(t, "private ack", m, "conn_id,op,ret_msg,success")
	if string(m["success"]) != "true" || str(m["ret_msg"]) != "" || str(m["op"]) != "subscribe" {
		t.Fatalf("ack %s", raw)
	}
	for _, tc := range []struct{ args, want string }{
		{`["order"]`, "already subscribed"},
		{`["orders"]`, "handler not found"},
		{`["position.linear","position"]`, "cannot be mixed"},
	} {
		sendWS(t, c, `{"op":"subscribe","args":`+tc.args+`}`)
		m, raw = readWS(t, c)
		if string(m["success"]) != "false" || !strings.Contains(str(m["ret_msg"]), tc.want) {
			t.Fatalf("%s: %s", tc.args, raw)
		}
	}
	sendWS(t, c, `{"op":"subscribe","args":["order.spot","execution.fast.linear","greeks"]}`)
	if m, raw = readWS(t, c); string(m["success"]) != "true" {
		t.Fatalf("categorised %s", raw)
	}
}

func TestWSPrivateAuthVector(t *testing.T) {
	s := newTestSim(t, 1, newClock(1700000059000))
	addVectorKey(s)
	srv := serve(t, s)
	c := dialWS(t, srv.URL, "/v5/private")
	sendWS(t, c, `{"op":"auth","args":["XXXXXXXXXX",1700000060000,"f127f64c24b44bc1ec93ef49ad4d3172ec054fc820dede352340f6e4941b2122"]}`)
	m, raw := readWS(t, c)
	if string(m["success"]) != "true" {
		t.Fatalf("vector auth %s", raw)
	}
	// expires as a string of digits is accepted too.
	c2 := dialWS(t, srv.URL, "/v5/private")
	sendWS(t, c2, `{"op":"auth","args":["XXXXXXXXXX","1700000060000","f127f64c24b44bc1ec93ef49ad4d3172ec054fc820dede352340f6e4941b2122"]}`)
	if m, raw = readWS(t, c2); string(m["success"]) != "true" {
		t.Fatalf("string expires %s", raw)
	}
}

func TestWSPrivatePush(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	srv := serve(t, s)
	k := s.DefaultKey()
	other := createKey(t, s, `{}`)

	open := func(key Key, topics string) *websocket.Conn {
		c := dialWS(t, srv.URL, "/v5/private")
		sendWS(t, c, authMsg(key, clock.ms()+5000, ""))
		if m, raw := readWS(t, c); string(m["success"]) != "true" {
			t.Fatalf("auth %s", raw)
		}
		sendWS(t, c, `{"op":"subscribe","args":`+topics+`}`)
		if m, raw := readWS(t, c); string(m["success"]) != "true" {
			t.Fatalf("subscribe %s", raw)
		}
		return c
	}
	mine := open(k, `["order.linear","wallet"]`)
	theirs := open(other, `["order"]`)

	s.pushPrivate(s.lookupKey(k.APIKey).acct, "order", "linear", []map[string]string{{"orderId": "1", "orderStatus": "New"}})
	m, raw := readWS(t, mine)
	wantKeys(t, "private push", m, "creationTime,data,id,topic")
	if str(m["topic"]) != "order.linear" || mustInt(t, m["creationTime"]) != clock.ms() || !strings.HasPrefix(string(m["data"]), "[") {
		t.Fatalf("push %s", raw)
	}
	// The other account's connection got nothing: its next message is the pong.
	sendWS(t, theirs, `{"op":"ping"}`)
	if m, raw = readWS(t, theirs); str(m["op"]) != "pong" {
		t.Fatalf("other account received %s", raw)
	}
}

func TestWSFaults(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	srv := serve(t, s)

	addFault(t, s, `{"kind":"ws_delay","path":"/v5/public/spot","count":1,"delay_ms":150}`)
	c := dialWS(t, srv.URL, "/v5/public/spot")
	start := time.Now()
	sendWS(t, c, `{"op":"ping"}`)
	readWS(t, c)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("delayed pong after %v", d)
	}

	addFault(t, s, `{"kind":"ws_disconnect","path":"/v5/private","count":1}`)
	p := dialWS(t, srv.URL, "/v5/private")
	sendWS(t, p, `{"op":"ping"}`)
	_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, data, err := p.ReadMessage(); err == nil {
		t.Fatalf("connection survived ws_disconnect, got %s", data)
	}
	// count 1: a new connection works.
	p2 := dialWS(t, srv.URL, "/v5/private")
	sendWS(t, p2, `{"op":"ping"}`)
	readWS(t, p2)
}

func TestWSRequiresUpgradeAndIdleParam(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	if r := get(t, s, "/v5/public/linear"); r.status != http.StatusBadRequest {
		t.Fatalf("plain GET on a stream path: HTTP %d", r.status)
	}
	srv := serve(t, s)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/v5/private?max_active_time=5s"
	if _, resp, err := websocket.DefaultDialer.Dial(url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("max_active_time=5s accepted (err %v)", err)
	}
	c := dialWS(t, srv.URL, "/v5/private?max_active_time=1m")
	sendWS(t, c, `{"op":"ping"}`)
	readWS(t, c)
}
