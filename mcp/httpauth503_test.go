package mcp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// A token the server could not check (a cluster's shard did not answer)
// is answered 503 with Retry-After, not 401 invalid_token; a token the
// check refused stays 401.
func TestHTTPUncheckableTokenIs503(t *testing.T) {
	e := newEnv(t)
	srv, err := NewServer(Options{Backend: HTTPBackend(e.sys, e.sys.Submit), Principal: HTTPPrincipal(sysProfile(e)), Venue: "paper"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err    error
		status int
	}{
		{messages.Internal(errors.New("shard unreachable")), http.StatusServiceUnavailable},
		{&messages.Error{Code: messages.CodeExchangeUnavailable, Message: "shard not ready"}, http.StatusServiceUnavailable},
		{&messages.Error{Code: messages.CodePermissionDenied, Message: "invalid or revoked bearer token"}, http.StatusUnauthorized},
	} {
		handler, err := NewHTTPHandler(srv, HTTPOptions{Authenticate: func(string) (string, string, error) { return "", "", tc.err }})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(handler)
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(initBody))
		req.Header.Set("Authorization", "Bearer gx_whatever")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hs.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("%v: status %d, want %d", tc.err, resp.StatusCode, tc.status)
		}
		if tc.status == http.StatusServiceUnavailable && (resp.Header.Get("Retry-After") == "" || resp.Header.Get("WWW-Authenticate") != "") {
			t.Fatalf("503 headers: %v", resp.Header)
		}
	}
}
