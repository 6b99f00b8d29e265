package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
)

func startInProcess(t *testing.T, clock *fakeClock) *InProcessServer {
	t.Helper()
	p, err := StartInProcess(Config{Seed: 1, Now: clock.Now, StartingBalances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(5)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// inProcessDo sends one request through the in-process transport.
func inProcessDo(t *testing.T, p *InProcessServer, method, path string, body []byte, h http.Header) result {
	t.Helper()
	return inProcessDoThrough(t, p, p.Transport(), method, path, body, h)
}

// inProcessDoThrough sends one request to p through rt.
func inProcessDoThrough(t *testing.T, p *InProcessServer, rt http.RoundTripper, method, path string, body []byte, h http.Header) result {
	t.Helper()
	req, err := http.NewRequest(method, p.BaseURL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return parseResult(t, resp.StatusCode, resp.Header, raw)
}

func inProcessSignedGet(t *testing.T, p *InProcessServer, k Key, ms int64, path, query string) result {
	t.Helper()
	return inProcessDo(t, p, http.MethodGet, path+"?"+query, nil, signedHeader(k, ms, "5000", query))
}

// The in-process venue knows only provisioned keys: the seed's public key
// is refused, a provisioned key signs, and provisioning an existing key
// again keeps its secret.
func TestInProcessKeys(t *testing.T) {
	clock := newClock(testNow)
	p := startInProcess(t, clock)
	seeded := New(Config{Seed: 1}).DefaultKey()
	if p.Sim().DefaultKey() != (Key{}) {
		t.Fatal("the in-process simulator exposes a default key")
	}
	wantCode(t, inProcessSignedGet(t, p, seeded, clock.ms(), "/v5/user/query-api", ""), codeInvalidKey)

	k := Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret-0123456789abcdefghijkl"}
	if _, err := p.Sim().ProvisionKey(Key{APIKey: "x"}, nil); err == nil {
		t.Fatal("a key without a secret was provisioned")
	}
	created, err := p.Sim().ProvisionKey(k, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)})
	if err != nil || !created {
		t.Fatalf("provision: %v %v", created, err)
	}
	r := inProcessSignedGet(t, p, k, clock.ms(), "/v5/user/query-api", "")
	mustOK(t, r)
	var info queryAPIResult
	decodeInto(t, r.result, &info)
	if info.APIKey != k.APIKey || info.ReadOnly != 0 || !slices.Equal(info.Permissions["ContractTrade"], []string{"Order", "Position"}) ||
		!slices.Equal(info.Permissions["Spot"], []string{"SpotTrade"}) || len(info.Permissions["Wallet"]) != 0 {
		t.Fatalf("query-api %s", r.body)
	}
	r = inProcessSignedGet(t, p, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	mustOK(t, r)
	if !strings.Contains(string(r.result), `"coin":"USDT"`) || !strings.Contains(string(r.result), `"walletBalance":"10000"`) {
		t.Fatalf("wallet %s", r.result)
	}

	again, err := p.Sim().ProvisionKey(Key{APIKey: k.APIKey, APISecret: "another-secret"}, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(1)})
	if err != nil || again {
		t.Fatalf("re-provision: %v %v", again, err)
	}
	wantCode(t, inProcessSignedGet(t, p, Key{APIKey: k.APIKey, APISecret: "another-secret"}, clock.ms(), "/v5/user/query-api", ""), codeSign)
	r = inProcessSignedGet(t, p, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	if !strings.Contains(string(r.result), `"walletBalance":"10000"`) {
		t.Fatalf("re-provisioning changed the wallet: %s", r.result)
	}
}

// None of the test endpoints exists on the in-process venue, however the
// path is spelled, and a refused call changes nothing.
func TestInProcessHasNoTestAPI(t *testing.T) {
	clock := newClock(testNow)
	p := startInProcess(t, clock)
	k := Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret"}
	if _, err := p.Sim().ProvisionKey(k, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/sim/keys", `{"read_only":false}`},
		{http.MethodPost, "/sim/accounts/" + k.APIKey + "/balances", `{"USDT":"161846609"}`},
		{http.MethodPost, "/sim/faults", `{"kind":"http_5xx","path":"/v5/user/query-api","every":1,"count":100}`},
		{http.MethodPost, "/%73im/faults", `{"kind":"http_5xx","path":"/v5/user/query-api","every":1,"count":100}`},
		{http.MethodGet, "/sim/faults", ""},
		{http.MethodGet, "/sim/orders", ""},
		{http.MethodPost, "/sim/price", `{"category":"linear","symbol":"BTCUSDT","price":"1"}`},
		{http.MethodPost, "/sim/clock", `{"advance_ms":60000}`},
		{http.MethodGet, "/sim", ""},
	} {
		r := inProcessDo(t, p, tc.method, tc.path, []byte(tc.body), http.Header{"Content-Type": {"application/json"}})
		if r.status != http.StatusNotFound {
			t.Fatalf("%s %s: HTTP %d %s", tc.method, tc.path, r.status, r.body)
		}
	}
	// No fault was installed and no balance set.
	r := inProcessSignedGet(t, p, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED")
	mustOK(t, r)
	if strings.Contains(string(r.result), "161846609") {
		t.Fatalf("balance changed through the test API: %s", r.result)
	}
	mustOK(t, inProcessSignedGet(t, p, k, clock.ms(), "/v5/user/query-api", ""))
	// The same requests reach the test API of a simulator built by New.
	if r := do(t, New(Config{}), http.MethodGet, "/sim/orders", nil, nil); r.status != http.StatusOK {
		t.Fatalf("a standalone simulator lost its test API: HTTP %d", r.status)
	}
}

// A WebSocket dialer given DialContext reaches the private stream and
// authenticates with a provisioned key.
func TestInProcessPrivateStream(t *testing.T) {
	clock := newClock(testNow)
	p := startInProcess(t, clock)
	k := Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret"}
	if _, err := p.Sim().ProvisionKey(k, nil); err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{NetDialContext: p.DialContext, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial(p.WSPrivateURL(), nil)
	if err != nil {
		t.Fatalf("dial %s: %v", p.WSPrivateURL(), err)
	}
	resp.Body.Close()
	defer c.Close()
	sendWS(t, c, authMsg(k, clock.ms()+1000, ""))
	m, raw := readWS(t, c)
	if string(m["success"]) != "true" || str(m["op"]) != "auth" {
		t.Fatalf("auth %s", raw)
	}
	sendWS(t, c, `{"op":"subscribe","args":["order","wallet"]}`)
	if m, raw = readWS(t, c); string(m["success"]) != "true" || str(m["op"]) != "subscribe" {
		t.Fatalf("subscribe %s", raw)
	}
	sendWS(t, c, `{"req_id":"p1","op":"ping"}`)
	if m, raw = readWS(t, c); str(m["op"]) != "pong" || str(m["req_id"]) != "p1" {
		t.Fatalf("pong %s", raw)
	}

	pub, resp, err := d.Dial(p.WSPublicURL("spot"), nil)
	if err != nil {
		t.Fatalf("dial public: %v", err)
	}
	resp.Body.Close()
	defer pub.Close()
	sendWS(t, pub, `{"op":"ping"}`)
	if m, raw = readWS(t, pub); str(m["ret_msg"]) != "pong" {
		t.Fatalf("public pong %s", raw)
	}

	// Close ends the streams and refuses later dials.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("stream survived Close")
	}
	if _, err := p.DialContext(context.Background(), "tcp", InProcessHost+":80"); err == nil {
		t.Fatal("dial after Close succeeded")
	}
}

// The dialer reaches nothing but the simulator, and serving it opens no
// listening TCP socket in this process.
func TestInProcessOpensNoPort(t *testing.T) {
	clock := newClock(testNow)
	before := listeningTCPInodes(t)
	p := startInProcess(t, clock)
	for _, addr := range []string{"127.0.0.1:80", "example.com:443", "paper.invalid.example:80"} {
		if c, err := p.DialContext(context.Background(), "tcp", addr); err == nil {
			c.Close()
			t.Fatalf("dialed %s through the in-process dialer", addr)
		}
	}
	if c, err := p.DialContext(context.Background(), "unix", InProcessHost); err == nil {
		c.Close()
		t.Fatal("dialed a unix network")
	}
	mustOK(t, inProcessDo(t, p, http.MethodGet, "/v5/market/time", nil, nil))
	if got := listeningTCPInodes(t); !slices.Equal(got, before) {
		t.Fatalf("listening TCP sockets of this process: before %v, after %v", before, got)
	}
	if p.ln.Addr().Network() == "tcp" {
		t.Fatal("the listener has a TCP address")
	}
}

// listeningTCPInodes are the socket inodes this process holds that
// /proc/net/tcp and tcp6 list in state LISTEN (0A), sorted.
func listeningTCPInodes(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	listening := map[string]bool{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 9 && fields[3] == "0A" {
				listening[fields[9]] = true
			}
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		if listening[inode] {
			out = append(out, inode)
		}
	}
	slices.Sort(out)
	return out
}

// Many concurrent requests share the transport's connections.
func TestInProcessConcurrentRequests(t *testing.T) {
	clock := newClock(testNow)
	p := startInProcess(t, clock)
	k := Key{APIKey: "PAPERKEY0123456789", APISecret: "paper-secret"}
	if _, err := p.Sim().ProvisionKey(k, nil); err != nil {
		t.Fatal(err)
	}
	errs := make(chan string, 32)
	for i := range 32 {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, p.BaseURL()+"/v5/market/tickers?category=linear&symbol=BTCUSDT", nil)
			resp, err := (&http.Client{Transport: p.Transport()}).Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			var env struct {
				RetCode int `json:"retCode"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.RetCode != 0 {
				errs <- "request " + strconv.Itoa(i) + " failed"
				return
			}
			errs <- ""
		}()
	}
	for range 32 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}
