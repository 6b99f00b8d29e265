package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func addFault(t *testing.T, s *Sim, body string) fault {
	t.Helper()
	r := do(t, s, http.MethodPost, "/sim/faults", []byte(body), nil)
	if r.status != http.StatusOK {
		t.Fatalf("POST /sim/faults %s: HTTP %d %s", body, r.status, r.body)
	}
	var f fault
	decodeInto(t, r.body, &f)
	return f
}

func listFaults(t *testing.T, s *Sim) []fault {
	t.Helper()
	r := get(t, s, "/sim/faults")
	var fs []fault
	decodeInto(t, r.body, &fs)
	return fs
}

// postSigned sends a signed POST over the network with a fresh connection.
func postSigned(t *testing.T, base string, k Key, ts int64, path, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = signedHeader(k, ts, "5000", body)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaultDropResponseAppliesFirst(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	applied := addApplyRoute(s)
	srv := serve(t, s)
	k := s.DefaultKey()
	addFault(t, s, `{"kind":"drop_response","path":"/v5/test/apply","count":1}`)

	_, _, err := postSigned(t, srv.URL, k, clock.ms(), "/v5/test/apply", `{"category":"linear"}`)
	if err == nil {
		t.Fatal("dropped response reached the client")
	}
	if applied.Load() != 1 {
		t.Fatalf("applied %d times, want 1 (apply, then drop)", applied.Load())
	}
	// count 1: the next request is answered.
	resp, body, err := postSigned(t, srv.URL, k, clock.ms(), "/v5/test/apply", `{"category":"linear"}`)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, parseResult(t, resp.StatusCode, resp.Header, body))
	if applied.Load() != 2 {
		t.Fatalf("applied %d", applied.Load())
	}

	// Public GETs can be dropped too.
	addFault(t, s, `{"kind":"drop_response","path":"/v5/market/time"}`)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(srv.URL + "/v5/market/time"); err == nil {
		resp.Body.Close()
		t.Fatal("dropped GET answered")
	}
}

func TestFaultHTTP5xx(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	applied := addApplyRoute(s)
	k := s.DefaultKey()
	post := func() result {
		body := `{"category":"linear"}`
		h := signedHeader(k, clock.ms(), "5000", body)
		return do(t, s, http.MethodPost, "/v5/test/apply", []byte(body), h)
	}

	addFault(t, s, `{"kind":"http_5xx","path":"/v5/test/apply","count":1}`)
	r := post()
	if r.status != http.StatusBadGateway || json.Valid(r.body) || r.header.Get("Content-Type") == "application/json" {
		t.Fatalf("HTTP %d %q", r.status, r.body)
	}
	if applied.Load() != 0 {
		t.Fatal("a plain http_5xx must not apply the request")
	}
	mustOK(t, post())

	addFault(t, s, `{"kind":"http_5xx","path":"/v5/test/apply","count":1,"apply":true}`)
	before := applied.Load()
	if r := post(); r.status != http.StatusBadGateway {
		t.Fatalf("HTTP %d", r.status)
	}
	if applied.Load() != before+1 {
		t.Fatal("http_5xx with apply must apply the request")
	}
}

func TestFaultRateLimit(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	applied := addApplyRoute(s)
	k := s.DefaultKey()
	addFault(t, s, `{"kind":"rate_limit","path":"/v5/test/apply","count":1}`)
	body := `{"category":"linear"}`
	r := do(t, s, http.MethodPost, "/v5/test/apply", []byte(body), signedHeader(k, clock.ms(), "5000", body))
	wantCode(t, r, codeTooManyVisit)
	if r.retMsg != "Too many visits!" || r.header.Get("X-Bapi-Limit-Status") != "0" ||
		r.header.Get("X-Bapi-Limit-Reset-Timestamp") != strconv.FormatInt(clock.ms()+1000, 10) || r.header.Get("X-Bapi-Limit") == "" {
		t.Fatalf("rate_limit answer %s %v", r.body, r.header)
	}
	if applied.Load() != 0 {
		t.Fatal("rate-limited request was applied")
	}
	mustOK(t, do(t, s, http.MethodPost, "/v5/test/apply", []byte(body), signedHeader(k, clock.ms(), "5000", body)))
}

func TestFaultDelay(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	addFault(t, s, `{"kind":"delay","path":"/v5/market/time","count":1,"delay_ms":150}`)
	start := time.Now()
	mustOK(t, get(t, s, "/v5/market/time"))
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("delayed answer came after %v", d)
	}
	mustOK(t, get(t, s, "/v5/market/time"))
	fs := listFaults(t, s)
	if len(fs) != 1 || fs[0].Seen != 2 || fs[0].Fired != 1 {
		t.Fatalf("faults %+v", fs)
	}
}

func TestFaultEveryCountAndClear(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	f := addFault(t, s, `{"kind":"http_5xx","path":"/v5/market/*","every":2,"count":2}`)
	if f.ID != 1 || f.Every != 2 || f.Count != 2 {
		t.Fatalf("stored %+v", f)
	}
	var got []int
	for i := 0; i < 7; i++ {
		got = append(got, get(t, s, "/v5/market/time").status)
	}
	want := []int{200, 502, 200, 502, 200, 200, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
	// Other paths and the test endpoints are not affected.
	addFault(t, s, `{"kind":"http_5xx","path":"/v5/user/query-api"}`)
	if r := get(t, s, "/v5/market/time"); r.status != 200 {
		t.Fatalf("HTTP %d", r.status)
	}
	if r := do(t, s, http.MethodDelete, "/sim/faults", nil, nil); r.status != 200 {
		t.Fatalf("DELETE HTTP %d", r.status)
	}
	if fs := listFaults(t, s); len(fs) != 0 {
		t.Fatalf("faults after DELETE %+v", fs)
	}
	// ws kinds are accepted and stored.
	addFault(t, s, `{"kind":"ws_delay","path":"/v5/private","delay_ms":10}`)
	addFault(t, s, `{"kind":"ws_disconnect","path":"/v5/private","count":1}`)
	if fs := listFaults(t, s); len(fs) != 2 {
		t.Fatalf("faults %+v", fs)
	}
}

func TestFaultBadBodies(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	for _, bad := range []string{
		`{"kind":"explode"}`,
		`{"kind":"delay","path":"/v5/market/time"}`,
		`{"kind":"http_5xx","path":"/sim/keys"}`,
		`{"kind":"http_5xx","every":-1}`,
		`{"kind":"http_5xx","colour":"red"}`,
		`not json`,
		`{"kind":"delay","path":"/v5/private","delay_ms":5}`,
		`{"kind":"ws_disconnect","path":"/v5/market/time"}`,
	} {
		if r := do(t, s, http.MethodPost, "/sim/faults", []byte(bad), nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d %s", bad, r.status, r.body)
		}
	}
}
