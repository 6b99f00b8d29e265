package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// vectorKey is the key of the signing examples (docs/bybit.md "Signing").
var vectorKey = Key{APIKey: "XXXXXXXXXX", APISecret: strings.Repeat("Y", 36)}

// addVectorKey registers vectorKey on s.
func addVectorKey(s *Sim) {
	s.mu.Lock()
	s.registerKeyLocked(vectorKey.APIKey, vectorKey.APISecret, false, defaultPermissions(), "vectors")
	s.mu.Unlock()
}

// addApplyRoute registers a private POST endpoint that counts how often it
// was applied, standing in for the write endpoints of later issues.
func addApplyRoute(s *Sim) *atomic.Int64 {
	var n atomic.Int64
	s.routes["/v5/test/apply"] = &route{method: http.MethodPost, private: true, write: true, handler: func(c *call) response {
		n.Add(1)
		return ok(map[string]string{"orderId": "1", "orderLinkId": ""})
	}}
	return &n
}

func TestSignVectors(t *testing.T) {
	cases := []struct {
		name, ts, payload, want string
	}{
		{"GET option", "1658384314791", "category=option&symbol=BTC-29JUL22-25000-C", "49c26b0f76e0bec6b926f119814d66c4bdf59de44adf2a1864b1ea0bfd9c710c"},
		{"POST option", "1658385579423", `{"category": "option"}`, "9bada36eb7c33a2723028d84d0ee4b01d52abedd3ca9c79e2e8ba88a958b373a"},
		{"GET positions", "1700000000000", "category=linear&settleCoin=USDT", "794deac7330959a2ceebb8eb8172de62a874bfca0bc2672b8f373e2fb0b8d934"},
		{"POST order", "1700000000000", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","timeInForce":"PostOnly","orderLinkId":"mcp-0001"}`, "7b44f115a4c58adb7c61909f2353e52f6272fc4ade6fd54c317ab8313e6de807"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sign(vectorKey.APISecret, restSignPayload(tc.ts, vectorKey.APIKey, "5000", tc.payload))
			if got != tc.want {
				t.Fatalf("sign = %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("WS auth", func(t *testing.T) {
		got := sign(vectorKey.APISecret, wsAuthPayload("1700000060000"))
		if want := "f127f64c24b44bc1ec93ef49ad4d3172ec054fc820dede352340f6e4941b2122"; got != want {
			t.Fatalf("ws sign = %s, want %s", got, want)
		}
	})
}

// TestVectorsThroughVerifier sends the reference requests with the
// reference headers, byte for byte, and expects them accepted.
func TestVectorsThroughVerifier(t *testing.T) {
	cases := []struct {
		name, method, path, ts, payload, sign string
	}{
		{"GET option", http.MethodGet, "/v5/user/query-api", "1658384314791", "category=option&symbol=BTC-29JUL22-25000-C", "49c26b0f76e0bec6b926f119814d66c4bdf59de44adf2a1864b1ea0bfd9c710c"},
		{"GET positions", http.MethodGet, "/v5/user/query-api", "1700000000000", "category=linear&settleCoin=USDT", "794deac7330959a2ceebb8eb8172de62a874bfca0bc2672b8f373e2fb0b8d934"},
		{"POST option", http.MethodPost, "/v5/test/apply", "1658385579423", `{"category": "option"}`, "9bada36eb7c33a2723028d84d0ee4b01d52abedd3ca9c79e2e8ba88a958b373a"},
		{"POST order", http.MethodPost, "/v5/test/apply", "1700000000000", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","timeInForce":"PostOnly","orderLinkId":"mcp-0001"}`, "7b44f115a4c58adb7c61909f2353e52f6272fc4ade6fd54c317ab8313e6de807"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, _ := strconv.ParseInt(tc.ts, 10, 64)
			s := newTestSim(t, 1, newClock(ts+200))
			addVectorKey(s)
			applied := addApplyRoute(s)
			h := http.Header{}
			h.Set(hdrAPIKey, vectorKey.APIKey)
			h.Set(hdrTimestamp, tc.ts)
			h.Set(hdrRecvWindow, "5000")
			h.Set(hdrSign, tc.sign)
			h.Set(hdrSignType, "2")
			var r result
			if tc.method == http.MethodGet {
				r = do(t, s, http.MethodGet, tc.path+"?"+tc.payload, nil, h)
			} else {
				h.Set("Content-Type", "application/json")
				r = do(t, s, http.MethodPost, tc.path, []byte(tc.payload), h)
			}
			mustOK(t, r)
			if tc.method == http.MethodPost && applied.Load() != 1 {
				t.Fatalf("POST applied %d times, want 1", applied.Load())
			}

			// The same request re-serialised (what a client must never
			// do after signing) no longer verifies.
			if tc.method == http.MethodPost {
				var v any
				_ = json.Unmarshal([]byte(tc.payload), &v)
				other, _ := json.MarshalIndent(v, "", " ")
				wantCode(t, do(t, s, http.MethodPost, tc.path, other, h), codeSign)
			} else {
				parts := strings.Split(tc.payload, "&")
				swapped := parts[1] + "&" + parts[0]
				r := do(t, s, http.MethodGet, tc.path+"?"+swapped, nil, h)
				wantCode(t, r, codeSign)
				if !strings.Contains(r.retMsg, "error sign! origin_string[") {
					t.Fatalf("10004 message %q", r.retMsg)
				}
			}
		})
	}
}

func TestRecvWindowEdges(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	k := s.DefaultKey()
	now := clock.ms()
	const path = "/v5/user/query-api"
	cases := []struct {
		name   string
		ts     int64
		window string
		want   int
	}{
		{"exactly now-window", now - 5000, "5000", 0},
		{"one ms too old", now - 5001, "5000", codeRecvWindow},
		{"now", now, "5000", 0},
		{"999 ms ahead", now + 999, "5000", 0},
		{"1000 ms ahead", now + 1000, "5000", codeRecvWindow},
		{"wide window", now - 20000, "20000", 0},
		{"absent header defaults to 5000", now - 5000, "", 0},
		{"absent header, too old", now - 5001, "", codeRecvWindow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, s, http.MethodGet, path, nil, signedHeader(k, tc.ts, tc.window, ""))
			wantCode(t, r, tc.want)
			if tc.want == codeRecvWindow {
				w := tc.window
				if w == "" {
					w = "5000"
				}
				want := "invalid request, please check your server timestamp or recv_window param. req_timestamp[" +
					strconv.FormatInt(tc.ts, 10) + "],server_timestamp[" + strconv.FormatInt(now, 10) + "],recv_window[" + w + "]"
				if r.retMsg != want {
					t.Fatalf("retMsg = %q, want %q", r.retMsg, want)
				}
			}
		})
	}
	t.Run("non-numeric window", func(t *testing.T) {
		wantCode(t, do(t, s, http.MethodGet, path, nil, signedHeader(k, now, "abc", "")), codeParams)
	})
}

func TestAuthRefusals(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	k := s.DefaultKey()
	now := clock.ms()
	const path = "/v5/user/query-api"

	for _, h := range []string{hdrAPIKey, hdrTimestamp, hdrSign} {
		t.Run("missing "+h, func(t *testing.T) {
			hd := signedHeader(k, now, "5000", "")
			hd.Del(h)
			r := do(t, s, http.MethodGet, path, nil, hd)
			if r.status != http.StatusUnauthorized {
				t.Fatalf("HTTP %d, want 401: %s", r.status, r.body)
			}
		})
	}
	t.Run("no headers at all", func(t *testing.T) {
		if r := get(t, s, path); r.status != http.StatusUnauthorized {
			t.Fatalf("HTTP %d, want 401", r.status)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		r := do(t, s, http.MethodGet, path, nil, signedHeader(Key{APIKey: "nope", APISecret: "x"}, now, "5000", ""))
		wantCode(t, r, codeInvalidKey)
	})
	t.Run("wrong secret", func(t *testing.T) {
		r := do(t, s, http.MethodGet, path, nil, signedHeader(Key{APIKey: k.APIKey, APISecret: "wrong"}, now, "5000", ""))
		wantCode(t, r, codeSign)
	})
	t.Run("uppercase hex", func(t *testing.T) {
		hd := signedHeader(k, now, "5000", "")
		hd.Set(hdrSign, strings.ToUpper(hd.Get(hdrSign)))
		wantCode(t, do(t, s, http.MethodGet, path, nil, hd), codeSign)
	})
	t.Run("query signed but not sent", func(t *testing.T) {
		r := do(t, s, http.MethodGet, path, nil, signedHeader(k, now, "5000", "a=1"))
		wantCode(t, r, codeSign)
	})
	t.Run("sign type 2 accepted", func(t *testing.T) {
		hd := signedHeader(k, now, "5000", "")
		hd.Set(hdrSignType, "2")
		mustOK(t, do(t, s, http.MethodGet, path, nil, hd))
	})
	t.Run("sign type 1 refused", func(t *testing.T) {
		hd := signedHeader(k, now, "5000", "")
		hd.Set(hdrSignType, "1")
		wantCode(t, do(t, s, http.MethodGet, path, nil, hd), codeSign)
	})
	t.Run("non-numeric timestamp", func(t *testing.T) {
		hd := signedHeader(k, now, "5000", "")
		hd.Set(hdrTimestamp, "soon")
		wantCode(t, do(t, s, http.MethodGet, path, nil, hd), codeRecvWindow)
	})
}

func TestQueryAPI(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 3, clock)
	k := s.DefaultKey()
	clock.Advance(48 * time.Hour) // two days after the key was made
	r := signedGet(t, s, k, clock.ms(), "/v5/user/query-api", "")
	mustOK(t, r)

	var got map[string]json.RawMessage
	decodeInto(t, r.result, &got)
	want := []string{"affiliateID", "apiKey", "createdAt", "deadlineDay", "expiredAt", "id", "inviterID", "ips", "isMaster", "kycLevel", "kycRegion", "mktMakerLevel", "note", "parentUid", "permissions", "readOnly", "rsaPublicKey", "secret", "type", "unified", "userID", "uta", "vipLevel"}
	if g := strings.Join(keysOf(got), ","); g != strings.Join(want, ",") {
		t.Fatalf("keys\n got %s\nwant %s", g, strings.Join(want, ","))
	}
	// Every key of the recorded sample is present.
	var sample map[string]json.RawMessage
	decodeInto(t, readSample(t, "v5-user-query-api.result.hirokisan.json"), &sample)
	for key := range sample {
		if _, ok := got[key]; !ok {
			t.Errorf("sample key %q missing", key)
		}
	}

	var rec struct {
		APIKey      string              `json:"apiKey"`
		ReadOnly    int                 `json:"readOnly"`
		Secret      string              `json:"secret"`
		Permissions map[string][]string `json:"permissions"`
		IPs         []string            `json:"ips"`
		Type        int                 `json:"type"`
		DeadlineDay int                 `json:"deadlineDay"`
		UTA         int                 `json:"uta"`
		UserID      int64               `json:"userID"`
	}
	decodeInto(t, r.result, &rec)
	if rec.APIKey != k.APIKey || rec.ReadOnly != 0 || rec.Secret != "" || rec.Type != 1 || rec.UTA != 1 || rec.UserID == 0 {
		t.Fatalf("record %+v", rec)
	}
	if len(rec.IPs) != 1 || rec.IPs[0] != "*" {
		t.Fatalf("ips %v", rec.IPs)
	}
	if rec.DeadlineDay != 88 {
		t.Fatalf("deadlineDay %d, want 88", rec.DeadlineDay)
	}
	for group, vals := range rec.Permissions {
		switch group {
		case "ContractTrade":
			if strings.Join(vals, ",") != "Order,Position" {
				t.Errorf("ContractTrade %v", vals)
			}
		case "Spot":
			if strings.Join(vals, ",") != "SpotTrade" {
				t.Errorf("Spot %v", vals)
			}
		default:
			if vals == nil || len(vals) != 0 {
				t.Errorf("%s = %v, want []", group, vals)
			}
		}
	}
	if !strings.Contains(string(r.result), `"Wallet":[]`) {
		t.Fatalf("empty groups must be [] not null: %s", r.result)
	}
}

func TestReadOnlyKeyCannotWrite(t *testing.T) {
	clock := newClock(testNow)
	s := newTestSim(t, 1, clock)
	applied := addApplyRoute(s)
	ro := createKey(t, s, `{"read_only": true}`)
	body := `{"category":"linear"}`
	r := do(t, s, http.MethodPost, "/v5/test/apply", []byte(body), signedHeader(ro, clock.ms(), "5000", body))
	wantCode(t, r, codePermission)
	if applied.Load() != 0 {
		t.Fatal("read-only key applied a write")
	}
	// Reads still work.
	mustOK(t, signedGet(t, s, ro, clock.ms(), "/v5/user/query-api", ""))
}
