package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// On a Bybit venue (here "bybit-demo", pointed at the simulator over
// loopback), serve opens each key's private stream at the venue's private
// WebSocket URL: order pushes reach the journal as venue_update, also for
// orders placed outside the server, and after the venue drops the
// connection the stream reconnects and delivers again.
func TestDemoVenueStreamsPrivateUpdates(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(sim.Config{Seed: 11}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ann := srv.Announcement()
	post := func(path, body string) {
		t.Helper()
		resp, err := http.Post(ann.REST+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	post("/sim/accounts/"+ann.APIKey+"/balances", `{"USDT":"100000"}`)

	in := newInstall(t)
	demo := []string{"GX_VENUE=bybit-demo", "GX_BYBIT_BASE_URL=" + ann.REST, "GX_BYBIT_WS_PRIVATE_URL=" + ann.WSPrivate, "GX_TEST_ALLOW_LOOPBACK_BYBIT_URL=true"}
	if r := run(t, in.env(demo...), ann.APIKey+"\n"+ann.APISecret+"\n", "keys", "add"); r.code != 0 {
		t.Fatalf("keys add on bybit-demo: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, in.env(demo...), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "none", "--venue-ceiling", "demo"); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	cs, _ := connectStdio(t, in, "", demo...)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	outside, err := venue.NewClient(venue.Config{BaseURL: ann.REST, APIKey: ann.APIKey, APISecret: ann.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	placeOutside := func(id string) {
		t.Helper()
		if _, err := outside.CreateOrder(ctx, messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy",
			OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.RequireFromString("20000"), OrderLinkID: id}); err != nil {
			t.Fatal(err)
		}
	}
	// journalShows reports whether get_my_journal shows a venue_update
	// naming the client order id (exchange text: in untrusted_text).
	journalShows := func(id string) bool {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_my_journal", Arguments: map[string]any{"limit": 100}})
		if err != nil || res.IsError {
			t.Fatalf("get_my_journal: %v %+v", err, res)
		}
		var out struct {
			Records []struct {
				Type string `json:"type"`
			} `json:"records"`
			UntrustedText string `json:"untrusted_text"`
		}
		if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out); err != nil {
			t.Fatal(err)
		}
		updates := 0
		for _, r := range out.Records {
			if r.Type == "venue_update" {
				updates++
			}
		}
		return updates > 0 && strings.Contains(out.UntrustedText, `"`+id+`"`)
	}
	// The stream connects in the background: an order pushed before it
	// subscribed is not replayed, so probe until one is journaled.
	waitForUpdate := func(prefix string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			id := prefix + "-" + string(rune('a'+i%26)) + time.Now().Format("150405.000")
			id = strings.ReplaceAll(id, ".", "")
			placeOutside(id)
			for wait := time.Now().Add(300 * time.Millisecond); time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
				if journalShows(id) {
					return
				}
			}
		}
		t.Fatalf("no venue_update for the %s orders: the private stream does not deliver on bybit-demo", prefix)
	}
	waitForUpdate("before")

	// The server's own order is journaled from the stream too.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear",
		"side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "21000", "idempotency_key": "demo-stream-1"}})
	if err != nil || res.IsError {
		t.Fatalf("place_order on bybit-demo: %v %+v", err, res)
	}

	// The venue drops the stream at its next push; the stream reconnects
	// (and the server reconciles by REST) and delivers later pushes.
	post("/sim/faults", `{"kind":"ws_disconnect","path":"/v5/private","count":1}`)
	placeOutside("dropped-1")
	waitForUpdate("after")
	resp, err := http.Get(ann.REST + "/sim/faults")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var faults []struct {
		Kind  string `json:"kind"`
		Fired int    `json:"fired"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&faults); err != nil {
		t.Fatal(err)
	}
	if len(faults) != 1 || faults[0].Fired != 1 {
		t.Fatalf("the disconnect did not happen: %+v", faults)
	}
}
