package sim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// createKey calls POST /sim/keys and returns the new key.
func createKey(t *testing.T, s *Sim, body string) Key {
	t.Helper()
	r := do(t, s, http.MethodPost, "/sim/keys", []byte(body), nil)
	if r.status != http.StatusOK {
		t.Fatalf("POST /sim/keys HTTP %d: %s", r.status, r.body)
	}
	var resp map[string]string
	decodeInto(t, r.body, &resp)
	if len(resp) != 2 || resp["api_key"] == "" || resp["api_secret"] == "" {
		t.Fatalf("POST /sim/keys answered %s", r.body)
	}
	return Key{APIKey: resp["api_key"], APISecret: resp["api_secret"]}
}

func TestSimKeys(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	k := createKey(t, s, `{"read_only": true, "permissions": {"ContractTrade": ["Order","Position"], "Spot": ["SpotTrade"], "Wallet": ["AccountTransfer"], "Custom": ["Thing"]}}`)
	if k == s.DefaultKey() {
		t.Fatal("new key equals the default key")
	}
	r := signedGet(t, s, k, clock.ms(), "/v5/user/query-api", "")
	mustOK(t, r)
	var rec struct {
		APIKey      string              `json:"apiKey"`
		ReadOnly    int                 `json:"readOnly"`
		Permissions map[string][]string `json:"permissions"`
	}
	decodeInto(t, r.result, &rec)
	if rec.APIKey != k.APIKey || rec.ReadOnly != 1 ||
		strings.Join(rec.Permissions["Wallet"], ",") != "AccountTransfer" ||
		strings.Join(rec.Permissions["Custom"], ",") != "Thing" ||
		rec.Permissions["Options"] == nil {
		t.Fatalf("record %s", r.result)
	}
	// Groups come in Bybit's order, extras last.
	if i, j := strings.Index(string(r.result), `"ContractTrade"`), strings.Index(string(r.result), `"Custom"`); i < 0 || j < i {
		t.Fatalf("permission order %s", r.result)
	}

	// No permissions at all.
	k2 := createKey(t, s, `{"permissions": {}}`)
	r = signedGet(t, s, k2, clock.ms(), "/v5/user/query-api", "")
	if !strings.Contains(string(r.result), `"ContractTrade":[],"Spot":[]`) {
		t.Fatalf("empty permissions %s", r.result)
	}

	// Same seed, same sequence of keys.
	s2 := newTestSim(t, 1, clock)
	if k3 := createKey(t, s2, `{}`); k3.APIKey != createKey(t, newTestSim(t, 1, clock), `{}`).APIKey {
		t.Fatal("key sequence is not deterministic")
	}

	for _, bad := range []string{`{"read_only": "yes"}`, `{"permisions": {}}`, `[1]`, `{"permissions": {"Spot": "SpotTrade"}}`} {
		if r := do(t, s, http.MethodPost, "/sim/keys", []byte(bad), nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d", bad, r.status)
		}
	}
	if r := get(t, s, "/sim/keys"); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET /sim/keys HTTP %d", r.status)
	}
}

func TestSimOrdersEmpty(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	r := get(t, s, "/sim/orders")
	if r.status != http.StatusOK || string(r.body) != "[]" {
		t.Fatalf("GET /sim/orders HTTP %d %s", r.status, r.body)
	}
	if r := get(t, s, "/sim/accounts/x/balances"); r.status != http.StatusNotFound {
		t.Fatalf("HTTP %d", r.status)
	}
}

func TestSimEndpointsLoopbackOnly(t *testing.T) {
	s := newTestSim(t, 1, newClock(testNow))
	for _, target := range []string{"/sim/keys", "/sim/faults", "/sim/orders"} {
		req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(`{}`))
		req.RemoteAddr = "192.0.2.7:4444"
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("%s from a remote address: HTTP %d", target, rec.Code)
		}
		var e map[string]string
		if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
			t.Fatalf("body %s", rec.Body)
		}
	}
}
