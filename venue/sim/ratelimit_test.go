package sim

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestPrivateRateLimit(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	k := s.DefaultKey()
	const path = "/v5/user/query-api" // 10/s
	first := clock.ms()
	for i := 0; i < 10; i++ {
		r := signedGet(t, s, k, clock.ms(), path, "")
		mustOK(t, r)
		if got := r.header.Get("X-Bapi-Limit"); got != "10" {
			t.Fatalf("X-Bapi-Limit %q", got)
		}
		if got := r.header.Get("X-Bapi-Limit-Status"); got != strconv.Itoa(9-i) {
			t.Fatalf("request %d: X-Bapi-Limit-Status %q, want %d", i, got, 9-i)
		}
		if got := r.header.Get("X-Bapi-Limit-Reset-Timestamp"); got != strconv.FormatInt(clock.ms(), 10) {
			t.Fatalf("reset %q", got)
		}
		clock.Advance(10 * time.Millisecond)
	}
	r := signedGet(t, s, k, clock.ms(), path, "")
	wantCode(t, r, codeTooManyVisit)
	if r.retMsg != "Too many visits!" {
		t.Fatalf("retMsg %q", r.retMsg)
	}
	if r.header.Get("X-Bapi-Limit-Status") != "0" || r.header.Get("X-Bapi-Limit-Reset-Timestamp") != strconv.FormatInt(first+1000, 10) {
		t.Fatalf("headers on refusal %v", r.header)
	}

	// Another key has its own bucket.
	other := createKey(t, s, `{}`)
	mustOK(t, signedGet(t, s, other, clock.ms(), path, ""))

	// The oldest request leaves the window exactly at reset.
	clock.Set(time.UnixMilli(first + 1000))
	r = signedGet(t, s, k, clock.ms(), path, "")
	mustOK(t, r)
	if r.header.Get("X-Bapi-Limit-Status") != "0" {
		t.Fatalf("status after one slot freed: %q", r.header.Get("X-Bapi-Limit-Status"))
	}
	wantCode(t, signedGet(t, s, k, clock.ms(), path, ""), codeTooManyVisit)
}

func TestPublicRateLimit(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	for i := 0; i < publicLimit; i++ {
		r := get(t, s, "/v5/market/time")
		mustOK(t, r)
		if i == 0 && (r.header.Get("X-Bapi-Limit") != "600" || r.header.Get("X-Bapi-Limit-Status") != "599") {
			t.Fatalf("headers %v", r.header)
		}
	}
	r := get(t, s, "/v5/market/tickers?category=linear")
	wantCode(t, r, codeTooManyVisit)
	if r.header.Get("X-Bapi-Limit-Reset-Timestamp") != strconv.FormatInt(testNow+5000, 10) {
		t.Fatalf("reset %v", r.header)
	}
	clock.Advance(5 * time.Second)
	mustOK(t, get(t, s, "/v5/market/time"))
}

func TestLimiterCategoryBuckets(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	rt := &route{method: http.MethodPost, private: true}
	c := &call{path: "/v5/order/create", r: &http.Request{Method: http.MethodPost}}
	c.body = []byte(`{"category":"spot"}`)
	if l, w := s.bucketFor(c, rt); l != 20 || w != time.Second {
		t.Fatalf("spot create limit %d/%v", l, w)
	}
	c.body = []byte(`{"category":"linear"}`)
	if l, _ := s.bucketFor(c, rt); l != 10 {
		t.Fatalf("linear create limit %d", l)
	}
	c.path = "/v5/unknown"
	if l, _ := s.bucketFor(c, rt); l != defaultPrivateLimit {
		t.Fatalf("default limit %d", l)
	}
}
