package venue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

const streamWait = 10 * time.Second

// nextEvent returns the next event whose kind is one of kinds, failing
// the test after streamWait. Other events go to skipped (if non-nil).
func nextEvent(t *testing.T, s *venue.Stream, skipped *[]messages.StreamEvent, kinds ...messages.StreamEventKind) messages.StreamEvent {
	t.Helper()
	deadline := time.NewTimer(streamWait)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatal("events closed")
			}
			for _, k := range kinds {
				if ev.Kind == k {
					return ev
				}
			}
			if skipped != nil {
				*skipped = append(*skipped, ev)
			}
		case <-deadline.C:
			t.Fatalf("no %v event within %s", kinds, streamWait)
		}
	}
}

func newStream(t *testing.T, cfg venue.StreamConfig) *venue.Stream {
	t.Helper()
	if cfg.Backoff == nil {
		cfg.Backoff = func(int) time.Duration { return 20 * time.Millisecond }
	}
	s, err := venue.NewStream(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A market order placed over the in-process paper venue shows on the
// stream (reached through the injected dialer) as order, execution,
// position and wallet pushes with decoded decimals.
func TestStreamInProcessPushes(t *testing.T) {
	p, err := sim.StartInProcess(sim.Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	key := sim.Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret-0123456789abcdefghijkl"}
	if _, err := p.Sim().ProvisionKey(key, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}); err != nil {
		t.Fatal(err)
	}
	s := newStream(t, venue.StreamConfig{URL: p.WSPrivateURL(), APIKey: key.APIKey, APISecret: key.APISecret,
		Dialer: &websocket.Dialer{NetDialContext: p.DialContext, HandshakeTimeout: 5 * time.Second}})
	nextEvent(t, s, nil, messages.StreamConnected)

	c, err := venue.NewClient(venue.Config{BaseURL: p.BaseURL(), HTTPClient: &http.Client{Transport: p.Transport()},
		APIKey: key.APIKey, APISecret: key.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	id := "gx-stream-1"
	if _, err := c.CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear,
		Symbol: "BTCUSDT", Side: "Buy", OrderType: "Market", Qty: dec("0.010"), OrderLinkID: id}); err != nil {
		t.Fatal(err)
	}
	var filled *messages.Order
	var execQty decimal.Decimal
	var pos *messages.Position
	var wallet *messages.WalletBalance
	for filled == nil || execQty.IsZero() || pos == nil || wallet == nil {
		ev := nextEvent(t, s, nil, messages.StreamOrders, messages.StreamExecutions, messages.StreamPositions, messages.StreamWalletEvent)
		if ev.At.IsZero() {
			t.Fatalf("push without a time: %+v", ev)
		}
		switch ev.Kind {
		case messages.StreamOrders:
			for i, o := range ev.Orders {
				if o.OrderLinkID == id && o.Status == "Filled" {
					filled = &ev.Orders[i]
				}
			}
		case messages.StreamExecutions:
			for _, e := range ev.Executions {
				if e.OrderLinkID == id {
					execQty = execQty.Add(e.ExecQty)
				}
			}
		case messages.StreamPositions:
			for i, p := range ev.Positions {
				if p.Symbol == "BTCUSDT" && p.Size.IsPositive() {
					pos = &ev.Positions[i]
				}
			}
		case messages.StreamWalletEvent:
			wallet = ev.Wallet
		}
	}
	if !filled.CumExecQty.Equal(dec("0.01")) || filled.Category != messages.CategoryLinear || !filled.AvgPrice.IsPositive() {
		t.Fatalf("order push %+v", filled)
	}
	if !execQty.Equal(filled.CumExecQty) {
		t.Fatalf("executions sum to %s, order says %s", execQty, filled.CumExecQty)
	}
	if pos.Side != "Buy" || !pos.Size.Equal(dec("0.01")) || !pos.AvgPrice.Equal(filled.AvgPrice) {
		t.Fatalf("position push %+v (order avg %s)", pos, filled.AvgPrice)
	}
	if len(wallet.Coins) == 0 || !wallet.Coins[0].WalletBalance.LessThan(decimal.NewFromInt(10000)) {
		t.Fatalf("wallet push did not take the fee: %+v", wallet)
	}
	// WaitOrder answers at once for an id already pushed.
	if o, ok := s.WaitOrder(context.Background(), id, time.Millisecond); !ok || o.OrderLinkID != id {
		t.Fatalf("WaitOrder after the push: %v %+v", ok, o)
	}
}

// The stream reconnects after the simulator drops it, reports the loss
// and the reconnect, and is subscribed again: later pushes arrive.
func TestStreamReconnectAfterDisconnect(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	s := newStream(t, venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret})
	nextEvent(t, s, nil, messages.StreamConnected)
	c := ts.client(t, 2*time.Second)
	ctx := context.Background()

	ts.fault(t, "ws_disconnect", "/v5/private", "")
	if _, err := c.CreateOrder(ctx, limitBuy("gx-before-drop")); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, s, nil, messages.StreamDisconnected)
	if ev.Reason != "connection_lost" {
		t.Fatalf("disconnect reason %q", ev.Reason)
	}
	nextEvent(t, s, nil, messages.StreamReconnected)

	if _, err := c.CreateOrder(ctx, limitBuy("gx-after-drop")); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, s, nil, messages.StreamOrders)
		if len(ev.Orders) > 0 && ev.Orders[0].OrderLinkID == "gx-after-drop" {
			break
		}
	}
}

// Pings keep a quiet connection alive well past the read deadline.
func TestStreamPingKeepsAlive(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	s := newStream(t, venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret,
		PingInterval: 100 * time.Millisecond, ReadTimeout: 700 * time.Millisecond})
	nextEvent(t, s, nil, messages.StreamConnected)
	quiet := time.After(2500 * time.Millisecond) // over three read deadlines
	for {
		select {
		case ev := <-s.Events():
			t.Fatalf("unexpected event on a quiet, pinged connection: %+v", ev)
		case <-quiet:
			return
		}
	}
}

// silentServer acks auth and subscribe, then never answers again (no
// pong). It counts connections.
func silentServer(t *testing.T) (string, *atomic.Int32) {
	return scriptedServer(t, nil)
}

// scriptedServer acks auth and subscribe, sends pushes after the
// subscribe ack, and never answers a ping. It counts connections.
func scriptedServer(t *testing.T, pushes []string) (string, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		conns.Add(1)
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			var m struct {
				Op string `json:"op"`
			}
			_ = json.Unmarshal(data, &m)
			if m.Op == "auth" || m.Op == "subscribe" {
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"success":true,"ret_msg":"","op":"`+m.Op+`","conn_id":"x"}`))
			}
			if m.Op == "subscribe" {
				for _, p := range pushes {
					_ = c.WriteMessage(websocket.TextMessage, []byte(p))
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), &conns
}

// A server that stops answering is detected by the read deadline and the
// stream connects again.
func TestStreamDetectsSilentServer(t *testing.T) {
	url, conns := silentServer(t)
	s := newStream(t, venue.StreamConfig{URL: url, APIKey: "K1234", APISecret: "S1234",
		PingInterval: 50 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	nextEvent(t, s, nil, messages.StreamConnected)
	ev := nextEvent(t, s, nil, messages.StreamDisconnected)
	if ev.Reason != "read_timeout" {
		t.Fatalf("reason %q", ev.Reason)
	}
	nextEvent(t, s, nil, messages.StreamReconnected)
	if conns.Load() < 2 {
		t.Fatalf("%d connections", conns.Load())
	}
}

// A refused auth is reported (exchange text kept apart) and retried; the
// secret appears nowhere.
func TestStreamAuthRefused(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	secret := "wrong-secret-must-not-leak-42"
	logs := &lockedBuffer{}
	s := newStream(t, venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: secret,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ev := nextEvent(t, s, nil, messages.StreamDisconnected, messages.StreamConnected)
	if ev.Kind != messages.StreamDisconnected || ev.Reason != "auth_refused" || ev.UntrustedText == "" {
		t.Fatalf("auth with a wrong secret: %+v", ev)
	}
	if !strings.Contains(logs.String(), "auth_refused") {
		t.Fatalf("the refusal was not logged: %s", logs.String())
	}
	for _, txt := range []string{fmt.Sprintf("%+v", ev), s.String(), venue.StreamConfig{APISecret: secret}.String(), logs.String()} {
		if strings.Contains(txt, secret) {
			t.Fatalf("secret leaked: %s", txt)
		}
	}
	ev = nextEvent(t, s, nil, messages.StreamDisconnected, messages.StreamConnected)
	if ev.Kind != messages.StreamDisconnected {
		t.Fatalf("retry after a refused auth: %+v", ev)
	}
}

// A consumer that does not read never stalls the stream: events beyond the
// buffer are dropped and a gap is reported once there is room.
func TestStreamGapOnSlowConsumer(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	s := newStream(t, venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret, Buffer: 2})
	nextEvent(t, s, nil, messages.StreamConnected)
	c := ts.client(t, 2*time.Second)
	for i := range 5 { // each create pushes order and position: 10 events
		if _, err := c.CreateOrder(context.Background(), limitBuy(fmt.Sprintf("gx-gap-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// The last order's push reached the stream although nobody read.
	if _, ok := s.WaitOrder(context.Background(), "gx-gap-4", streamWait); !ok {
		t.Fatal("the stream stalled behind a full buffer")
	}
	ev := nextEvent(t, s, nil, messages.StreamGap)
	if ev.Reason != "buffer_full" || ev.Dropped < 1 {
		t.Fatalf("gap %+v", ev)
	}
}

// Close is prompt, also during a long reconnect wait, closes Events and
// leaves no goroutine behind.
func TestStreamCloseLeaksNothing(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	before := runtime.NumGoroutine()

	s, err := venue.NewStream(venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, s, nil, messages.StreamConnected)
	_ = s.Close()
	if _, ok := <-s.Events(); ok {
		// drain whatever was buffered; the channel must end closed
		for range s.Events() {
		}
	}
	_ = s.Close() // twice is fine

	// In a reconnect wait of an hour (nothing listens), Close still returns.
	s2, err := venue.NewStream(venue.StreamConfig{URL: "ws://127.0.0.1:1/v5/private", APIKey: "K1234", APISecret: "S1234",
		Backoff: func(int) time.Duration { return time.Hour }})
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, s2, nil, messages.StreamDisconnected)
	done := make(chan struct{})
	go func() { _ = s2.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(streamWait):
		t.Fatal("Close waited for the reconnect backoff")
	}

	deadline := time.Now().Add(streamWait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines %d, before %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Settle finds an order accepted with drop_response by waiting for it on
// the stream and reading it back; an id never sent is outcome_unknown
// after the bounded wait.
func TestSettleWithStream(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	s := newStream(t, venue.StreamConfig{URL: ts.ann.WSPrivate, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret})
	nextEvent(t, s, nil, messages.StreamConnected)
	c := ts.client(t, 2*time.Second)
	ctx := context.Background()

	ts.fault(t, "drop_response", venue.PathOrderCreate, "")
	id := "gx-settle-dropped"
	_, err := c.CreateOrder(ctx, limitBuy(id))
	if venue.ClassifyWrite(err) != venue.WriteUnknown {
		t.Fatalf("drop_response: %v", err)
	}
	st, _, err := venue.Settle(ctx, c, s, linkExpect(id), 5*time.Second)
	if err != nil || st.ResultSource != messages.ResultSourceReconnaissance || st.Order.OrderLinkID != id ||
		st.Order.Status != "New" || !st.FilledQty.Known {
		t.Fatalf("settle: %+v %v", st, err)
	}
	if rows := ts.ordersFor(t, id); len(rows) != 1 {
		t.Fatalf("%d orders", len(rows))
	}

	start := time.Now()
	_, _, err = venue.Settle(ctx, c, s, linkExpect("gx-never-sent"), 200*time.Millisecond)
	e := messages.AsError(err)
	if e.Code != messages.CodeOutcomeUnknown || e.Details["reconnaissance"] != "not_found" || e.Details["client_order_id"] != "gx-never-sent" {
		t.Fatalf("never sent: %+v", e)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("Settle did not wait for the stream")
	}
	if rows := ts.ordersFor(t, "gx-never-sent"); len(rows) != 0 {
		t.Fatal("Settle sent an order")
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A push that does not decode is dropped as a whole and reported as a gap;
// the next good push is delivered after it.
func TestStreamMalformedPushIsAGap(t *testing.T) {
	bad := `{"topic":"order","creationTime":1700000000000,"data":[{"category":"linear","symbol":"BTCUSDT","orderId":"1","orderLinkId":"gx-bad","qty":"1e","orderStatus":"New"}]}`
	good := `{"topic":"order","creationTime":1700000000001,"data":[{"category":"linear","symbol":"BTCUSDT","orderId":"2","orderLinkId":"gx-good","qty":"0.5","orderStatus":"New"}]}`
	url, _ := scriptedServer(t, []string{bad, good})
	s := newStream(t, venue.StreamConfig{URL: url, APIKey: "K1234", APISecret: "S1234"})
	var skipped []messages.StreamEvent
	nextEvent(t, s, nil, messages.StreamConnected)
	gap := nextEvent(t, s, &skipped, messages.StreamGap)
	if gap.Reason != "malformed_push" || gap.Dropped != 1 || len(skipped) != 0 {
		t.Fatalf("gap %+v after %+v", gap, skipped)
	}
	ev := nextEvent(t, s, &skipped, messages.StreamOrders)
	if len(ev.Orders) != 1 || ev.Orders[0].OrderLinkID != "gx-good" || !ev.Orders[0].Qty.Equal(dec("0.5")) {
		t.Fatalf("order after the gap %+v", ev.Orders)
	}
	if _, ok := s.WaitOrder(context.Background(), "gx-bad", time.Millisecond); ok {
		t.Fatal("an undecodable push reached WaitOrder")
	}
}

// Bad configuration fails closed, naming the field, without echoing it.
func TestNewStreamValidates(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   venue.StreamConfig
	}{
		{"ws_url", venue.StreamConfig{URL: "http://127.0.0.1/v5/private", APIKey: "K", APISecret: "S"}},
		{"ws_url", venue.StreamConfig{URL: "ws://user:pw@127.0.0.1/v5/private", APIKey: "K", APISecret: "S"}},
		{"api_key", venue.StreamConfig{URL: "ws://127.0.0.1/v5/private", APIKey: "K"}},
		{"read_timeout", venue.StreamConfig{URL: "ws://127.0.0.1/v5/private", APIKey: "K", APISecret: "S",
			PingInterval: time.Second, ReadTimeout: time.Second}},
	} {
		s, err := venue.NewStream(tc.cfg)
		if s != nil || messages.CodeOf(err) != messages.CodeInvalidParams || messages.AsError(err).Details["field"] != tc.field {
			t.Errorf("%s: %v", tc.field, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("rejected value echoed: %v", err)
		}
	}
}

// linkExpect expects a linear BTCUSDT order with the client order id and
// nothing else.
func linkExpect(id string) messages.OrderExpectation {
	return messages.OrderExpectation{Category: messages.CategoryLinear, Symbol: "BTCUSDT", ClientOrderID: id}
}
