package venue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func TestReadRetriedTwiceThenSucceeds(t *testing.T) {
	var n atomic.Int32
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		writeEnvelope(w, 0, "OK", `{"timeSecond":"1688639403","timeNano":"1688639403423213947"}`)
	})
	var waits []int
	c, _ := newTestClient(t, fv.URL, func(cfg *Config) {
		cfg.Backoff = func(attempt int) time.Duration { waits = append(waits, attempt); return time.Millisecond }
	})
	st, err := c.ServerTime(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := fv.hits.Load(); n != 3 {
		t.Fatalf("server hits %d, want 3", n)
	}
	if fmt.Sprint(waits) != "[0 1]" {
		t.Fatalf("backoff attempts %v", waits)
	}
	if !st.Equal(time.Unix(0, 1688639403423213947)) {
		t.Fatalf("time %v", st)
	}
}

func TestReadRetriesExhausted(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	c, _ := newTestClient(t, fv.URL)
	_, err := c.ServerTime(context.Background())
	e := asVenueError(t, err)
	if e.Code != messages.CodeExchangeUnavailable || e.Details["attempts"] != 3 || fv.hits.Load() != 3 {
		t.Fatalf("%+v hits %d", e, fv.hits.Load())
	}
}

func TestNegativeReadRetriesMeansOneAttempt(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	c, _ := newTestClient(t, fv.URL, func(cfg *Config) { cfg.ReadRetries = -1 })
	_, err := c.ServerTime(context.Background())
	if messages.CodeOf(err) != messages.CodeExchangeUnavailable || fv.hits.Load() != 1 {
		t.Fatalf("%v hits %d", err, fv.hits.Load())
	}
}

func TestPostWith502SentOnceOutcomeUnknown(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	c, _ := newTestClient(t, fv.URL)
	resp, err := c.Post(context.Background(), "/v5/order/create", map[string]string{"orderLinkId": "gx-1"}, nil)
	e := asVenueError(t, err)
	if e.Code != messages.CodeOutcomeUnknown || fv.hits.Load() != 1 {
		t.Fatalf("%+v hits %d", e, fv.hits.Load())
	}
	if resp == nil || resp.HTTPStatus != http.StatusBadGateway {
		t.Fatalf("response %+v", resp)
	}
	if !strings.Contains(e.NextStep, "do not resend") {
		t.Fatalf("next step %q", e.NextStep)
	}
}

func TestRateLimitedReadNotRetried(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Bapi-Limit-Reset-Timestamp", fmt.Sprint(fixedNow.UnixMilli()+4200))
		writeEnvelope(w, 10006, "Too many visits!", "{}")
	})
	c, _ := newTestClient(t, fv.URL)
	_, err := c.Get(context.Background(), "/v5/order/realtime", nil, true, nil)
	e := asVenueError(t, err)
	if e.Code != messages.CodeRateLimited || e.RetryAfterS != 5 || fv.hits.Load() != 1 {
		t.Fatalf("%+v hits %d", e, fv.hits.Load())
	}
}

func TestContextCancelStopsBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	backoffStarted := make(chan struct{}, 1)
	c, _ := newTestClient(t, fv.URL, func(cfg *Config) {
		cfg.Backoff = func(int) time.Duration {
			backoffStarted <- struct{}{}
			return time.Hour
		}
	})
	go func() {
		<-backoffStarted
		cancel()
	}()
	done := make(chan error, 1)
	go func() { _, err := c.ServerTime(ctx); done <- err }()
	select {
	case err := <-done:
		e := asVenueError(t, err)
		if e.Code != messages.CodeExchangeUnavailable || !errors.Is(err, context.Canceled) || e.Details["reason"] != string(FailCanceled) {
			t.Fatalf("%+v", e)
		}
		if n := fv.hits.Load(); n != 1 {
			t.Fatalf("server hits %d, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not stop the backoff")
	}
}

func TestCancelledReadIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	c, _ := newTestClient(t, fv.URL)
	_, err := c.ServerTime(ctx)
	if !errors.Is(err, context.Canceled) || fv.hits.Load() != 1 {
		t.Fatalf("%v hits %d", err, fv.hits.Load())
	}
}

func TestNewClientValidation(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"empty", Config{}, "base_url"},
		{"scheme", Config{BaseURL: "ftp://api.bybit.com"}, "base_url"},
		{"no_host", Config{BaseURL: "https://"}, "base_url"},
		{"relative", Config{BaseURL: "api.bybit.com"}, "base_url"},
		{"query", Config{BaseURL: "https://api.bybit.com?x=1"}, "base_url"},
		{"userinfo", Config{BaseURL: "https://u:p@api.bybit.com"}, "base_url"},
		{"key_without_secret", Config{BaseURL: "https://api.bybit.com", APIKey: "k"}, "api_key"},
		{"recv_window_sub_ms", Config{BaseURL: "https://api.bybit.com", RecvWindow: 1500 * time.Microsecond}, "recv_window"},
		{"recv_window_negative", Config{BaseURL: "https://api.bybit.com", RecvWindow: -time.Second}, "recv_window"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClient(tc.cfg)
			e := asVenueError(t, err)
			if e.Code != messages.CodeInvalidParams || e.Details["field"] != tc.field {
				t.Fatalf("%+v", e)
			}
		})
	}
	c, err := NewClient(Config{BaseURL: "https://api-demo.bybit.com/", APIKey: "KEYKEYKEY", APISecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	if c.recvWindow != "5000" || c.retries != DefaultReadRetries || c.http.Timeout != DefaultHTTPTimeout || c.baseStr != "https://api-demo.bybit.com" {
		t.Fatalf("defaults: %q %d %v %q", c.recvWindow, c.retries, c.http.Timeout, c.baseStr)
	}
}

func TestSecretNotPrinted(t *testing.T) {
	cfg := Config{BaseURL: "https://api-demo.bybit.com", APIKey: "KEYKEYKEY", APISecret: testSecret}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	lg := slog.New(slog.NewJSONHandler(&logs, nil))
	lg.Info("config", "cfg", cfg, "client", c)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg),
		fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(&cfg), logs.String()} {
		if strings.Contains(s, testSecret) {
			t.Fatalf("secret printed: %s", s)
		}
	}
}

func TestDefaultBackoffBounds(t *testing.T) {
	for attempt := -1; attempt < 40; attempt++ {
		for range 20 {
			d := DefaultBackoff(attempt)
			want := maxBackoff
			if a := max(attempt, 0); a < 5 {
				want = min(100*time.Millisecond<<a, maxBackoff)
			}
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}

func TestPostRejectsInvalidRawBody(t *testing.T) {
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) { writeEnvelope(w, 0, "OK", "{}") })
	c, _ := newTestClient(t, fv.URL)
	_, err := c.Post(context.Background(), "/v5/order/create", []byte("{not json"), nil)
	if messages.CodeOf(err) != messages.CodeInternalError || fv.hits.Load() != 0 {
		t.Fatalf("%v hits %d", err, fv.hits.Load())
	}
}
