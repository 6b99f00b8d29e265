package actors

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// At start, a user with open attempts is started at once and reconciles
// each one on the venue (open orders, then history) before it takes new
// writes: the found order and the lost one get their order_outcome first,
// a command sent meanwhile is journaled after them, and no attempt stays
// open.
func TestRecoveryReconcilesOpenAttemptsBeforeNewWrites(t *testing.T) {
	// The lost attempt is concluded not_found only once a write of it
	// could no longer land, about 6 s after start (D199): the held
	// command waits that long.
	ts := startStack(t, stack{SimOptions: funded, Users: []string{"rae"}, Configure: func(c *Config) { c.RecoveryWait = 15 * time.Second }})
	dir, srv, key := ts.dir, ts.sim, ts.sim.DefaultKey()
	ts.addDefaultKey(t, "rae")
	// Three attempts were journaled, then the process died: one order
	// reached the venue, one never left, and one went to another venue
	// (a server started with another GX_VENUE): this process must not
	// close it by looking for it on its own venue.
	now := time.Now().UTC()
	for id, env := range map[string]string{"gx-found": "paper", "gx-lost": "", "gx-demo": "bybit-demo"} {
		payload, _ := json.Marshal(messages.OrderAttemptEvent{ActionID: id, ClientOrderID: id, Environment: env, Tool: "place_order", Category: messages.CategoryLinear,
			Symbol: "BTCUSDT", At: now, NotionalUSDT: decimal.NewFromInt(100), RiskIncreasing: true})
		if _, err := ts.log.Append([]wal.Entry{{Time: now, Type: uint16(messages.RecordOrderAttempt), User: "rae", Actor: messages.ActorAgent, Payload: payload}}); err != nil {
			t.Fatal(err)
		}
	}
	ts.stop()
	ms := time.Now().UnixMilli()
	seed, _ := json.Marshal([]map[string]any{{
		"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.001", "price": "0",
		"status": "Filled", "orderLinkId": "gx-found", "createdTime": ms, "updatedTime": ms, "cumExecQty": "0.001", "avgPrice": "60000",
		"timeInForce": "IOC",
	}})
	resp, err := http.Post(srv.URL+"/sim/accounts/"+key.APIKey+"/orders", "application/json", bytes.NewReader(seed))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("seed the order on the simulator: %v %v", err, resp)
	}
	resp.Body.Close()
	// The venue answers the lookups slowly, so a command can arrive while
	// they are in flight.
	body, _ := json.Marshal(map[string]any{"kind": "delay", "path": "/v5/order/*", "delay_ms": 300})
	if resp, err := http.Post(srv.URL+"/sim/faults", "application/json", bytes.NewReader(body)); err == nil {
		resp.Body.Close()
	}

	ts2 := ts.restart(t)
	pol := ts2.must(t, &messages.ShowPolicyRequest{User: "rae"}, messages.ActorCLIUser) // a read is not held
	if pol.User != "rae" {
		t.Fatalf("policy %+v", pol)
	}
	ts2.must(t, &messages.TightenPolicyRequest{User: "rae", Settings: messages.PolicySettings{MaxPending: intp(2)}}, messages.ActorCLIUser)
	ts2.stop()

	var got []string
	for _, r := range userRecords(t, dir) {
		typ := messages.RecordType(r.Type)
		switch typ {
		case messages.RecordOrderOutcome:
			var o messages.OrderOutcomeEvent
			json.Unmarshal(r.Payload, &o)
			got = append(got, typ.String()+":"+o.ClientOrderID+":"+o.Status+":"+o.VenueStatus+":"+r.Actor)
		case messages.RecordPolicyTightened:
			got = append(got, typ.String())
		}
	}
	joined := strings.Join(got, " ")
	if len(got) != 3 || got[2] != "policy_tightened" ||
		!strings.Contains(joined, "order_outcome:gx-found:found:Filled:system:server") ||
		!strings.Contains(joined, "order_outcome:gx-lost:not_found::system:server") {
		t.Fatalf("journal after recovery: %s", joined)
	}
	// Replayed again, only the other venue's attempt is open, and the
	// counters remember all three, each on its venue: the other venue's
	// counts on that venue only, the one that names no venue on both
	// (D100).
	replay := NewUserReplay()
	l, _, err := wal.Open(dir, wal.Options{OnRecord: replay.OnRecord})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	states, err := replay.states(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st := states["rae"]
	for _, env := range []string{"paper", "bybit-demo"} {
		daily, perMinute, _ := st.Counters.Window(time.Now(), env)
		if _, open := st.Attempts["gx-demo"]; !open || len(st.Attempts) != 1 || perMinute != 2 || !daily.Equal(decimal.NewFromInt(200)) {
			t.Fatalf("after recovery: %d open attempts, %d orders this minute on %s, daily notional %s", len(st.Attempts), perMinute, env, daily)
		}
	}
}
