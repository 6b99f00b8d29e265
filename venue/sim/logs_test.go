package sim

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// At debug level the simulator logs every request and stream auth, but
// names a key by its id: the API key (which, with the paper venue, is the
// user's stored key) and the secret never reach the logs.
func TestDebugLogsNameKeysByID(t *testing.T) {
	var logs lockedBuffer
	clock := newClock(testNow)
	s := New(Config{Seed: 1, Now: clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	srv := serve(t, s)
	k := s.DefaultKey()

	mustOK(t, signedGet(t, s, k, clock.ms(), "/v5/account/wallet-balance", "accountType=UNIFIED"))
	c := dialWS(t, srv.URL, "/v5/private")
	sendWS(t, c, authMsg(k, clock.ms()+10_000, ""))
	if m, raw := readWS(t, c); string(m["success"]) != "true" {
		t.Fatalf("auth: %s", raw)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"sim: request"`, `"msg":"sim: ws auth"`, `"key_id"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("debug logs lack %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, k.APIKey) || strings.Contains(out, k.APISecret) {
		t.Fatalf("debug logs show the API key or secret:\n%s", out)
	}
}
