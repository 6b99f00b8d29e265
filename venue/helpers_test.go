package venue

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// testSecret is distinctive so a leak is easy to grep for.
const (
	testKey    = "TESTKEY0001"
	testSecret = "SeCrEt-must-never-leak-0123456789abcdef"
)

// fixedNow is the pinned clock of most tests.
var fixedNow = time.UnixMilli(1700000000000).UTC()

// fakeVenue is a loopback HTTP server that counts hits.
type fakeVenue struct {
	*httptest.Server
	hits atomic.Int32
}

func newFakeVenue(t *testing.T, h http.HandlerFunc) *fakeVenue {
	t.Helper()
	fv := &fakeVenue{}
	fv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fv.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(fv.Close)
	return fv
}

// newBenchServer starts a loopback server for a benchmark.
func newBenchServer(b *testing.B, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestClient builds a keyed client on base with no backoff wait, the
// pinned clock and a debug logger writing to the returned buffer.
func newTestClient(t *testing.T, base string, edit ...func(*Config)) (*Client, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		BaseURL:   base,
		APIKey:    testKey,
		APISecret: testSecret,
		Now:       func() time.Time { return fixedNow },
		Backoff:   func(int) time.Duration { return 0 },
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c, logs
}

// writeEnvelope writes a Bybit envelope with retCode, retMsg and result.
func writeEnvelope(w http.ResponseWriter, retCode int, retMsg, result string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"retCode":` + itoa(retCode) + `,"retMsg":` + quote(retMsg) +
		`,"result":` + result + `,"retExtInfo":{},"time":1700000000123}`))
}

func itoa(i int) string { return string(mustJSON(i)) }
func quote(s string) string {
	return string(mustJSON(s))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// readTestdata returns the bytes of testdata/name.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// asVenueError asserts err is a *messages.Error and returns it.
func asVenueError(t *testing.T, err error) *messages.Error {
	t.Helper()
	var e *messages.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *messages.Error", err, err)
	}
	return e
}
