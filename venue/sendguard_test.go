package venue

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// TestSendGuardStopsWritesOnly: a write made with a guard that says no
// never reaches the venue and fails not_sent with the guard's error; a
// read with the same context is sent; once the guard says yes the write
// is sent. Every write carries a recv window of at most WriteRecvWindow
// even when the client is configured longer, reads the configured one
// (D198).
func TestSendGuardStopsWritesOnly(t *testing.T) {
	var mu sync.Mutex
	var seen []string // method + " " + X-BAPI-RECV-WINDOW
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("X-BAPI-RECV-WINDOW"))
		mu.Unlock()
		writeEnvelope(w, 0, "OK", `{}`)
	})
	c, _ := newTestClient(t, fv.URL, func(cfg *Config) { cfg.RecvWindow = 20 * time.Second })
	allow := false
	fenced := messages.ShardFenced(errors.New("lock lost"))
	ctx := WithSendGuard(context.Background(), func() *messages.Error {
		if allow {
			return nil
		}
		return fenced
	})

	_, err := c.Post(ctx, "/v5/order/create", map[string]string{"orderLinkId": "x"}, nil)
	if ClassifyWrite(err) != WriteNotSent || !errors.Is(err, ErrNotSent) {
		t.Fatalf("guarded write: class %q err %v", ClassifyWrite(err), err)
	}
	if e := messages.AsError(err); e.Details["reason"] != messages.ReasonShardFenced {
		t.Fatalf("guarded write details %v", e.Details)
	}
	if n := fv.hits.Load(); n != 0 {
		t.Fatalf("a guarded write reached the venue (%d requests)", n)
	}
	if _, err := c.Get(ctx, "/v5/order/realtime", nil, true, nil); err != nil {
		t.Fatalf("read under the guard: %v", err)
	}
	allow = true
	if _, err := c.Post(ctx, "/v5/order/create", map[string]string{"orderLinkId": "x"}, nil); err != nil {
		t.Fatalf("allowed write: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "GET 20000" || seen[1] != "POST 5000" {
		t.Fatalf("requests seen %q, want [GET 20000, POST 5000]", seen)
	}
}
