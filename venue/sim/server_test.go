package sim

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.0.0.1:0", ":0", "[::]:0", "example.com:0", "192.168.1.2:8080"} {
		srv, err := Start(Config{}, addr)
		if err == nil {
			srv.Close()
			t.Fatalf("Start(%q) succeeded", addr)
		}
		if !errors.Is(err, ErrNotLoopback) {
			t.Fatalf("Start(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
	if _, err := Start(Config{}, "127.0.0.1"); err == nil || errors.Is(err, ErrNotLoopback) {
		t.Fatalf("address without port: %v", err)
	}
}

func TestStartServesAndCloses(t *testing.T) {
	clock := newClock(testNow)
	srv, err := Start(Config{Seed: 11, Now: clock.Now}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := srv.Announcement()
	if !strings.HasPrefix(a.REST, "http://127.0.0.1:") || strings.HasSuffix(a.REST, ":0") {
		t.Fatalf("REST %q", a.REST)
	}
	host := strings.TrimPrefix(a.REST, "http://")
	if a.WSPrivate != "ws://"+host+"/v5/private" || a.WSPublicLinear != "ws://"+host+"/v5/public/linear" || a.WSPublicSpot != "ws://"+host+"/v5/public/spot" {
		t.Fatalf("announcement %+v", a)
	}
	if k := srv.Sim().DefaultKey(); a.APIKey != k.APIKey || a.APISecret != k.APISecret || a.APIKey == "" {
		t.Fatalf("announcement key %+v", a)
	}
	b, _ := json.Marshal(a)
	for _, f := range []string{`"rest":`, `"ws_private":`, `"ws_public_linear":`, `"ws_public_spot":`, `"api_key":`, `"api_secret":`} {
		if !strings.Contains(string(b), f) {
			t.Fatalf("announcement JSON %s lacks %s", b, f)
		}
	}

	// A signed request over the network.
	req, _ := http.NewRequest(http.MethodGet, a.REST+"/v5/user/query-api", nil)
	req.Header = signedHeader(Key{APIKey: a.APIKey, APISecret: a.APISecret}, clock.ms(), "5000", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mustOK(t, parseResult(t, resp.StatusCode, resp.Header, body))

	// An open stream is closed by Close.
	ws, _, err := websocket.DefaultDialer.Dial(a.WSPublicLinear, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("stream survived Close")
	}
	if _, err := http.Get(a.REST + "/v5/market/time"); err == nil {
		t.Fatal("server still answers after Close")
	}
}

func TestStartLocalhost(t *testing.T) {
	srv, err := Start(Config{}, "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.Announcement().REST, "http://127.0.0.1:") {
		t.Fatalf("REST %q", srv.Announcement().REST)
	}
}

func TestDocFile(t *testing.T) {
	b, err := readFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "// Package sim ") {
		t.Fatal("doc.go must open with the package comment")
	}
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
