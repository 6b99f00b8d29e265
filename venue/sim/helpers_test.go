package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(ms int64) *fakeClock { return &fakeClock{t: time.UnixMilli(ms).UTC()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *fakeClock) ms() int64 { return c.Now().UnixMilli() }

// testNow is 2024-06-01T12:34:56.789Z.
const testNow = int64(1717245296789)

func newTestSim(t *testing.T, seed int64, clock *fakeClock) *Sim {
	t.Helper()
	return New(Config{Seed: seed, Now: clock.Now})
}

// serve runs s on an httptest server on 127.0.0.1 and closes both at the
// end of the test.
func serve(t *testing.T, s *Sim) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		s.shutdown()
	})
	return srv
}

// result is a decoded envelope plus the raw pieces tests look at.
type result struct {
	status  int
	header  http.Header
	body    []byte
	retCode int
	retMsg  string
	result  json.RawMessage
}

func parseResult(t *testing.T, status int, header http.Header, body []byte) result {
	t.Helper()
	r := result{status: status, header: header, body: body}
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil {
		return r
	}
	if raw, ok := env["retCode"]; ok {
		n, err := strconv.Atoi(string(raw))
		if err != nil {
			t.Fatalf("retCode is not a JSON integer: %s", raw)
		}
		r.retCode = n
	}
	if raw, ok := env["time"]; ok {
		if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
			t.Fatalf("time is not a JSON integer: %s", raw)
		}
	}
	_ = json.Unmarshal(env["retMsg"], &r.retMsg)
	r.result = env["result"]
	return r
}

// do runs a request through the handler directly (no network), from a
// loopback address.
func do(t *testing.T, s *Sim, method, target string, body []byte, header http.Header) result {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.RemoteAddr = "127.0.0.1:50000"
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return parseResult(t, rec.Code, rec.Header(), rec.Body.Bytes())
}

func get(t *testing.T, s *Sim, target string) result {
	t.Helper()
	return do(t, s, http.MethodGet, target, nil, nil)
}

// signedHeader builds the auth headers of a private request.
func signedHeader(k Key, ts int64, recvWindow string, payload string) http.Header {
	h := http.Header{}
	tsS := strconv.FormatInt(ts, 10)
	h.Set(hdrAPIKey, k.APIKey)
	h.Set(hdrTimestamp, tsS)
	if recvWindow != "" {
		h.Set(hdrRecvWindow, recvWindow)
	}
	h.Set(hdrSign, sign(k.APISecret, tsS+k.APIKey+recvWindow+payload))
	return h
}

func signedGet(t *testing.T, s *Sim, k Key, ts int64, path, query string) result {
	t.Helper()
	target := path
	if query != "" {
		target += "?" + query
	}
	return do(t, s, http.MethodGet, target, nil, signedHeader(k, ts, "5000", query))
}

func mustOK(t *testing.T, r result) {
	t.Helper()
	if r.status != http.StatusOK || r.retCode != 0 {
		t.Fatalf("want HTTP 200 retCode 0, got HTTP %d retCode %d %q: %s", r.status, r.retCode, r.retMsg, r.body)
	}
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.status != http.StatusOK || r.retCode != code {
		t.Fatalf("want HTTP 200 retCode %d, got HTTP %d retCode %d %q: %s", code, r.status, r.retCode, r.retMsg, r.body)
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func decodeInto(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}
