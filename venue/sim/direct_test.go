package sim

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// overConnection sends one request to p over a real HTTP/1.1 connection
// (the pair DialContext opens), the way Transport worked before D211.
func overConnection(t *testing.T, p *InProcessServer, method, path string, body []byte, h http.Header) result {
	t.Helper()
	tr := &http.Transport{DialContext: p.DialContext, Proxy: nil}
	defer tr.CloseIdleConnections()
	return inProcessDoThrough(t, p, tr, method, path, body, h)
}

// Transport answers what the same simulator answers over a connection:
// status, body and the headers a Bybit client reads, for a public read, a
// signed read, a signed write refused, an unserved path and a test path.
func TestDirectTransportAnswersAsAConnection(t *testing.T) {
	clock := newClock(testNow)
	p := startInProcess(t, clock)
	k := Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret"}
	if _, err := p.Sim().ProvisionKey(k, nil); err != nil {
		t.Fatal(err)
	}
	create := []byte(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"1000000","price":"1"}`)
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		header             func() http.Header
	}{
		{"ticker", http.MethodGet, "/v5/market/tickers?category=linear&symbol=BTCUSDT", nil, func() http.Header { return nil }},
		{"signed read", http.MethodGet, "/v5/user/query-api", nil, func() http.Header { return signedHeader(k, clock.ms(), "5000", "") }},
		{"bad signature", http.MethodGet, "/v5/account/wallet-balance?accountType=UNIFIED", nil, func() http.Header {
			return signedHeader(Key{APIKey: k.APIKey, APISecret: "wrong"}, clock.ms(), "5000", "accountType=UNIFIED")
		}},
		{"refused create", http.MethodPost, "/v5/order/create", create, func() http.Header {
			h := signedHeader(k, clock.ms(), "5000", string(create))
			h.Set("Content-Type", "application/json")
			return h
		}},
		{"header keys as sent", http.MethodGet, "/v5/user/query-api", nil, func() http.Header {
			h := http.Header{}
			for k, v := range signedHeader(k, clock.ms(), "5000", "") {
				h[strings.ToUpper(k)] = v // a server reads them in canonical form
			}
			return h
		}},
		{"unserved", http.MethodGet, "/v5/nothing/here", nil, func() http.Header { return nil }},
		{"test api", http.MethodGet, "/sim/orders", nil, func() http.Header { return nil }},
	} {
		direct := inProcessDo(t, p, tc.method, tc.path, tc.body, tc.header())
		conn := overConnection(t, p, tc.method, tc.path, tc.body, tc.header())
		if direct.status != conn.status || !bytes.Equal(direct.body, conn.body) {
			t.Errorf("%s: directly HTTP %d %s, over a connection HTTP %d %s", tc.name, direct.status, direct.body, conn.status, conn.body)
		}
		for _, h := range []string{"Content-Type", "X-Bapi-Limit", "X-Bapi-Limit-Reset-Timestamp", "Retry-After"} {
			if direct.header.Get(h) != conn.header.Get(h) {
				t.Errorf("%s: header %s directly %q, over a connection %q", tc.name, h, direct.header.Get(h), conn.header.Get(h))
			}
		}
		// Both count against the same limit, the connection's request second.
		if d, c := direct.header.Get("X-Bapi-Limit-Status"), conn.header.Get("X-Bapi-Limit-Status"); d != "" || c != "" {
			dn, err1 := strconv.Atoi(d)
			cn, err2 := strconv.Atoi(c)
			if err1 != nil || err2 != nil || cn != dn-1 {
				t.Errorf("%s: X-Bapi-Limit-Status directly %q, then over a connection %q", tc.name, d, c)
			}
		}
		if (tc.name == "signed read" || tc.name == "header keys as sent") && direct.retCode != 0 {
			t.Errorf("signed read refused: %d %s", direct.retCode, direct.retMsg)
		}
	}
}

// Transport reaches nothing but the simulator; a request whose context
// ends before the answer gets the context's error; after Close every
// request fails.
func TestDirectTransportRefusesOtherHostsAndEndsWithItsContext(t *testing.T) {
	clock := newClock(testNow)
	p := startInProcess(t, clock)
	hc := &http.Client{Transport: p.Transport()}
	for _, u := range []string{"http://127.0.0.1/v5/market/time", "http://paper.invalid.example/v5/market/time", "https://example.com/v5/market/time", "https://" + InProcessHost + "/v5/market/time"} {
		if resp, err := hc.Get(u); err == nil {
			resp.Body.Close()
			t.Errorf("%s answered HTTP %d", u, resp.StatusCode)
		}
	}

	// The simulator's lock held: the handler cannot answer before the
	// request's deadline.
	p.Sim().mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.BaseURL()+"/v5/market/tickers?category=linear&symbol=BTCUSDT", nil)
	resp, err := hc.Do(req)
	cancel()
	p.Sim().mu.Unlock()
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request answered after its deadline")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request past its deadline: %v", err)
	}

	// A caller already gone sends nothing: its create places no order.
	k := Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret"}
	if _, err := p.Sim().ProvisionKey(k, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(100000)}); err != nil {
		t.Fatal(err)
	}
	create := `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","orderLinkId":"gone"}`
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	req, _ = http.NewRequestWithContext(gone, http.MethodPost, p.BaseURL()+"/v5/order/create", strings.NewReader(create))
	req.Header = signedHeader(k, clock.ms(), "5000", create)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a create whose caller was gone answered")
	} else if !errors.Is(err, context.Canceled) {
		t.Errorf("a create whose caller was gone: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // a handler started anyway would have placed it by now
	open := inProcessSignedGet(t, p, k, clock.ms(), "/v5/order/realtime", "category=linear&orderLinkId=gone")
	mustOK(t, open)
	if strings.Contains(string(open.result), `"gone"`) {
		t.Fatalf("a create whose caller was gone reached the venue: %s", open.result)
	}
	// The same create from a caller still there rests (so the check
	// above could see one).
	req, _ = http.NewRequest(http.MethodPost, p.BaseURL()+"/v5/order/create", strings.NewReader(create))
	req.Header = signedHeader(k, clock.ms(), "5000", create)
	req.Header.Set("Content-Type", "application/json")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	open = inProcessSignedGet(t, p, k, clock.ms(), "/v5/order/realtime", "category=linear&orderLinkId=gone")
	if !strings.Contains(string(open.result), `"gone"`) {
		t.Fatalf("the create was not placed: %s", open.result)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if resp, err := hc.Get(p.BaseURL() + "/v5/market/time"); err == nil {
		resp.Body.Close()
		t.Fatal("a request after Close answered")
	}
}

// A handler that panics fails its request and logs it; the caller does not
// panic.
func TestDirectTransportTurnsAPanicIntoAFailedRequest(t *testing.T) {
	var logs bytes.Buffer
	tr := &directTransport{
		handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
		log:     slog.New(slog.NewJSONHandler(&logs, nil)),
		closed:  make(chan struct{}),
	}
	resp, err := (&http.Client{Transport: tr}).Get("http://" + InProcessHost + "/v5/market/time")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered HTTP %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "panic serving an in-process request") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
}
