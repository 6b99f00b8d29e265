package venue

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// Reference §2.1 vectors.
const (
	vecKey    = "XXXXXXXXXX"
	vecSecret = "YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY" // 36 × Y
)

func TestSignVectors(t *testing.T) {
	cases := []struct {
		name, payload, want string
	}{
		{"get_option", "1658384314791XXXXXXXXXX5000category=option&symbol=BTC-29JUL22-25000-C",
			"49c26b0f76e0bec6b926f119814d66c4bdf59de44adf2a1864b1ea0bfd9c710c"},
		{"post_option", `1658385579423XXXXXXXXXX5000{"category": "option"}`,
			"9bada36eb7c33a2723028d84d0ee4b01d52abedd3ca9c79e2e8ba88a958b373a"},
		{"get_linear", "1700000000000XXXXXXXXXX5000category=linear&settleCoin=USDT",
			"794deac7330959a2ceebb8eb8172de62a874bfca0bc2672b8f373e2fb0b8d934"},
		{"post_create", `1700000000000XXXXXXXXXX5000{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","timeInForce":"PostOnly","orderLinkId":"mcp-0001"}`,
			"7b44f115a4c58adb7c61909f2353e52f6272fc4ade6fd54c317ab8313e6de807"},
		{"ws_auth", "GET/realtime1700000060000",
			"f127f64c24b44bc1ec93ef49ad4d3172ec054fc820dede352340f6e4941b2122"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sign(vecSecret, tc.payload); got != tc.want {
				t.Fatalf("Sign = %s, want %s", got, tc.want)
			}
		})
	}
}

// captured is what the loopback server saw of one request.
type captured struct {
	method, rawQuery, body string
	header                 http.Header
}

// captureServer answers every request with an empty success envelope and
// sends what it saw on the returned channel.
func captureServer(t *testing.T) (*fakeVenue, chan captured) {
	ch := make(chan captured, 4)
	fv := newFakeVenue(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- captured{r.Method, r.URL.RawQuery, string(b), r.Header.Clone()}
		writeEnvelope(w, 0, "OK", "{}")
	})
	return fv, ch
}

func vectorClient(t *testing.T, base string, tsMillis int64) *Client {
	c, _ := newTestClient(t, base, func(cfg *Config) {
		cfg.APIKey, cfg.APISecret = vecKey, vecSecret
		cfg.Now = func() time.Time { return time.UnixMilli(tsMillis) }
	})
	return c
}

// checkSigned verifies the headers of a signed request: the server
// recomputes the signature from what it received and it must equal both
// the header and the reference vector.
func checkSigned(t *testing.T, got captured, ts, payload, want string) {
	t.Helper()
	h := got.header
	if h.Get("X-BAPI-API-KEY") != vecKey || h.Get("X-BAPI-TIMESTAMP") != ts || h.Get("X-BAPI-RECV-WINDOW") != "5000" {
		t.Fatalf("auth headers: key %q ts %q recv %q", h.Get("X-BAPI-API-KEY"), h.Get("X-BAPI-TIMESTAMP"), h.Get("X-BAPI-RECV-WINDOW"))
	}
	recomputed := Sign(vecSecret, h.Get("X-BAPI-TIMESTAMP")+h.Get("X-BAPI-API-KEY")+h.Get("X-BAPI-RECV-WINDOW")+payload)
	if sign := h.Get("X-BAPI-SIGN"); sign != recomputed || sign != want {
		t.Fatalf("X-BAPI-SIGN %s; recomputed from received bytes %s; vector %s", sign, recomputed, want)
	}
}

func TestSignedGetVectorsThroughRequestPath(t *testing.T) {
	cases := []struct {
		name  string
		ts    int64
		query Query
		raw   string
		want  string
	}{
		{"option", 1658384314791, Query{{"category", "option"}, {"symbol", "BTC-29JUL22-25000-C"}},
			"category=option&symbol=BTC-29JUL22-25000-C", "49c26b0f76e0bec6b926f119814d66c4bdf59de44adf2a1864b1ea0bfd9c710c"},
		{"linear", 1700000000000, Query{}.Add("category", "linear").Add("settleCoin", "USDT"),
			"category=linear&settleCoin=USDT", "794deac7330959a2ceebb8eb8172de62a874bfca0bc2672b8f373e2fb0b8d934"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fv, ch := captureServer(t)
			c := vectorClient(t, fv.URL, tc.ts)
			if _, err := c.Get(context.Background(), "/v5/position/list", tc.query, true, nil); err != nil {
				t.Fatal(err)
			}
			got := <-ch
			if got.method != http.MethodGet || got.rawQuery != tc.raw || got.body != "" {
				t.Fatalf("sent %s ?%s body %q", got.method, got.rawQuery, got.body)
			}
			checkSigned(t, got, itoa64(tc.ts), got.rawQuery, tc.want)
		})
	}
}

func TestSignedPostVectorsThroughRequestPath(t *testing.T) {
	type createOrder struct {
		Category    string `json:"category"`
		Symbol      string `json:"symbol"`
		Side        string `json:"side"`
		OrderType   string `json:"orderType"`
		Qty         string `json:"qty"`
		Price       string `json:"price"`
		TimeInForce string `json:"timeInForce"`
		OrderLinkID string `json:"orderLinkId"`
	}
	cases := []struct {
		name string
		ts   int64
		body any
		raw  string
		want string
	}{
		// A json.RawMessage is sent verbatim (the vector has a space).
		{"raw_option", 1658385579423, json.RawMessage(`{"category": "option"}`), `{"category": "option"}`,
			"9bada36eb7c33a2723028d84d0ee4b01d52abedd3ca9c79e2e8ba88a958b373a"},
		// A struct is marshalled once; those bytes are signed and sent.
		{"struct_create", 1700000000000,
			createOrder{"linear", "BTCUSDT", "Buy", "Limit", "0.001", "30000", "PostOnly", "mcp-0001"},
			`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"30000","timeInForce":"PostOnly","orderLinkId":"mcp-0001"}`,
			"7b44f115a4c58adb7c61909f2353e52f6272fc4ade6fd54c317ab8313e6de807"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fv, ch := captureServer(t)
			c := vectorClient(t, fv.URL, tc.ts)
			if _, err := c.Post(context.Background(), "/v5/order/create", tc.body, nil); err != nil {
				t.Fatal(err)
			}
			got := <-ch
			if got.method != http.MethodPost || got.body != tc.raw || got.rawQuery != "" {
				t.Fatalf("sent %s ?%s body %q", got.method, got.rawQuery, got.body)
			}
			if ct := got.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			checkSigned(t, got, itoa64(tc.ts), got.body, tc.want)
		})
	}
}

func TestUnsignedGetHasNoAuthHeaders(t *testing.T) {
	fv, ch := captureServer(t)
	c, _ := newTestClient(t, fv.URL)
	if _, err := c.Get(context.Background(), "/v5/market/time", nil, false, nil); err != nil {
		t.Fatal(err)
	}
	got := <-ch
	for _, h := range []string{"X-BAPI-API-KEY", "X-BAPI-SIGN", "X-BAPI-TIMESTAMP", "X-BAPI-RECV-WINDOW"} {
		if got.header.Get(h) != "" {
			t.Fatalf("public GET carries %s", h)
		}
	}
	if got.rawQuery != "" {
		t.Fatalf("raw query %q", got.rawQuery)
	}
}

func TestQueryEncodeKeepsOrderAndEscapes(t *testing.T) {
	q := Query{{"symbol", "BTCUSDT"}, {"category", "linear"}, {"coin", "USDT,USDC"}, {"cursor", "a b&c=d"}}
	want := "symbol=BTCUSDT&category=linear&coin=USDT%2CUSDC&cursor=a%20b%26c%3Dd"
	if got := q.Encode(); got != want {
		t.Fatalf("Encode = %q, want %q", got, want)
	}
	if (Query{}).Encode() != "" || Query(nil).Encode() != "" {
		t.Fatal("empty query must encode to empty string")
	}
}

func itoa64(v int64) string { return string(mustJSON(v)) }
