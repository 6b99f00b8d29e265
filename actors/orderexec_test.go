package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// tradeEnv is a user with a funded key on a loopback simulator (with its
// /sim/ test API), and a system whose venue actors own a private stream.
type tradeEnv struct {
	*testSystem
	sim *rig.Sim
	// ann is where the simulator serves and its default key.
	ann  sim.Announcement
	user string
	t    testing.TB
	// configure changes the system's config at every start (nil: none).
	configure func(*Config)
	// client changes each user's REST client config at every start (nil:
	// none), e.g. a proxy in front of the simulator.
	client func(*venue.Config)
	// streamURL is the private stream the system opens (empty: the
	// simulator's own; a hostile proxy in front of it in some tests).
	streamURL string
}

func newTradeEnv(t testing.TB, dir string) *tradeEnv {
	t.Helper()
	return newTradeEnvWith(t, dir, nil)
}

// newTradeEnvWith is newTradeEnv with a hook to change the config.
func newTradeEnvWith(t testing.TB, dir string, configure func(*Config)) *tradeEnv {
	t.Helper()
	return newTradeEnvStreaming(t, dir, configure, nil)
}

// newTradeEnvStreaming is newTradeEnvWith whose private stream runs at
// the URL that stream (nil: the simulator's own) gives for the
// simulator's stream URL.
func newTradeEnvStreaming(t testing.TB, dir string, configure func(*Config), stream func(simURL string) string) *tradeEnv {
	t.Helper()
	s := rig.StartSim(t, rig.SimOptions{Seed: 7})
	key := s.DefaultKey()
	te := &tradeEnv{sim: s, ann: sim.Announcement{REST: s.URL, WSPrivate: s.PrivateWS(), APIKey: key.APIKey, APISecret: key.APISecret},
		user: "tess", t: t, configure: configure}
	if stream != nil {
		te.streamURL = stream(te.ann.WSPrivate)
	}
	te.open(t, dir)
	return te
}

// open funds the simulator's account, starts the system on dir, creates
// the user with the simulator's key and waits until its private stream
// delivers.
func (te *tradeEnv) open(t testing.TB, dir string) {
	t.Helper()
	te.simPost(t, "/sim/accounts/"+te.ann.APIKey+"/balances", `{"USDT":"100000","BTC":"2"}`)
	te.testSystem = te.start(t, dir)
	te.must(t, &messages.CreateUserRequest{User: te.user}, messages.ActorCLIAdmin)
	if _, err := te.Handle(context.Background(), &messages.AddCredentialRequest{User: te.user, Environment: "paper",
		APIKey: te.ann.APIKey, APISecret: messages.NewSecret(te.ann.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	te.waitStream(t)
}

// waitStream returns once the user's private stream delivers: the stream
// connects in the background after the key is stored, and a push sent
// before it subscribed is not replayed. It places outside orders (far
// from the market) until one shows as a venue_update.
func (te *tradeEnv) waitStream(t testing.TB) {
	t.Helper()
	c := te.outside(t)
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		id := fmt.Sprintf("probe-%d", i)
		if _, err := c.CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
			Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.RequireFromString("20000"), OrderLinkID: id}); err != nil {
			t.Fatal(err)
		}
		for wait := time.Now().Add(200 * time.Millisecond); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
			if contains(journalOf(t, te.dir), "venue_update:"+id+":external") {
				return
			}
		}
	}
	t.Fatal("the private stream never delivered")
}

// outside is a client of the same account that is not this server (a
// person trading by hand).
func (te *tradeEnv) outside(t testing.TB) *venue.Client {
	t.Helper()
	c, err := venue.NewClient(venue.Config{BaseURL: te.ann.REST, APIKey: te.ann.APIKey, APISecret: te.ann.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var tradeMaster = make([]byte, 32)

func (te *tradeEnv) start(t testing.TB, dir string) *testSystem {
	o := stack{Sim: te.sim, Dir: dir, MasterKey: tradeMaster, Stream: true,
		Client: func(c *venue.Config) {
			c.Backoff = func(int) time.Duration { return 0 }
			if te.client != nil {
				te.client(c)
			}
		},
		StreamConfig: func(c *venue.StreamConfig) { c.Dialer = &websocket.Dialer{HandshakeTimeout: 2 * time.Second} },
		Configure: func(c *Config) {
			c.RequestTimeout, c.SettleWait = 2*time.Second, 500*time.Millisecond
			if te.configure != nil {
				te.configure(c)
			}
		}}
	if te.streamURL != "" {
		o.StreamVia = func(string) string { return te.streamURL }
	}
	return startStack(t, o)
}

func (te *tradeEnv) simPost(t testing.TB, path, body string) {
	t.Helper()
	resp, err := http.Post(te.ann.REST+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d", path, resp.StatusCode)
	}
}

func (te *tradeEnv) fault(t testing.TB, kind, path string) {
	t.Helper()
	te.simPost(t, "/sim/faults", `{"kind":"`+kind+`","path":"`+path+`","count":1}`)
}

func (te *tradeEnv) clearFaults(t testing.TB) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, te.ann.REST+"/sim/faults", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// simGet decodes the JSON answer of the simulator's test API at path.
func (te *tradeEnv) simGet(t testing.TB, path string, out any) {
	t.Helper()
	resp, err := http.Get(te.ann.REST + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// simOrders returns the simulator's orders with the client order id.
func (te *tradeEnv) simOrders(t testing.TB, id string) int {
	t.Helper()
	var all []struct {
		OrderLinkID string `json:"orderLinkId"`
	}
	te.simGet(t, "/sim/orders", &all)
	n := 0
	for _, o := range all {
		if o.OrderLinkID == id {
			n++
		}
	}
	return n
}

// execResult is what a test needs of a place_order answer or refusal.
type execResult struct {
	ClientOrderID string
	OrderID       string
	ResultSource  string
	Err           *messages.Error
}

// exec places a through the whole action path and flattens the answer.
func (te *tradeEnv) exec(t testing.TB, a messages.PlaceOrderArgs) *execResult {
	t.Helper()
	ans, e := te.place(t, a)
	if e != nil {
		id, _ := e.Details["client_order_id"].(string)
		return &execResult{ClientOrderID: id, Err: e}
	}
	return &execResult{ClientOrderID: ans.ClientOrderID, OrderID: ans.OrderID, ResultSource: ans.ResultSource}
}

// journalOf lists "type:client_order_id:status" of the order records in
// journal order, and the venue_update rows as "venue_update:id:origin".
func journalOf(t testing.TB, dir string) []string {
	var out []string
	for _, r := range scanAll(t, dir) {
		switch messages.RecordType(r.Type) {
		case messages.RecordOrderAttempt:
			var a messages.OrderAttemptEvent
			json.Unmarshal(r.Payload, &a)
			out = append(out, "order_attempt:"+a.ClientOrderID)
		case messages.RecordOrderOutcome:
			var o messages.OrderOutcomeEvent
			json.Unmarshal(r.Payload, &o)
			out = append(out, "order_outcome:"+o.ClientOrderID+":"+o.Status+":"+o.ResultSource)
		case messages.RecordVenueUpdate:
			var v messages.VenueUpdateEvent
			json.Unmarshal(r.Payload, &v)
			for _, o := range v.Orders {
				out = append(out, "venue_update:"+o.ClientOrderID+":"+o.Origin)
			}
		}
	}
	return out
}

// waitJournal polls the journal until it holds want (a record line).
func waitJournal(t testing.TB, dir, want string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := journalOf(t, dir)
		for _, g := range got {
			if g == want {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal never held %q: %v", want, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The attempt is durable before the order leaves, the outcome after the
// venue answered, the answer after that; the client order id is
// "gx-<process prefix>-<action>"; the stream's push of the order is
// journaled as a venue_update that marks it ours.
func TestExecuteJournalsAttemptThenOutcome(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	r := te.exec(t, limitArgs("0.010", "30000"))
	if r.Err != nil || r.OrderID == "" || r.ResultSource != "venue" {
		t.Fatalf("result %+v err %v", r, r.Err)
	}
	id := r.ClientOrderID
	if !strings.HasPrefix(id, "gx-"+clientIDPrefix+"-") || len(id) > 36 {
		t.Fatalf("client order id %q", id)
	}
	if n := te.simOrders(t, id); n != 1 {
		t.Fatalf("%d orders on the venue for %s", n, id)
	}
	var orderRecs []string
	for _, g := range waitJournal(t, dir, "venue_update:"+id+":system") {
		if strings.HasPrefix(g, "order_") {
			orderRecs = append(orderRecs, g)
		}
	}
	if len(orderRecs) != 2 || orderRecs[0] != "order_attempt:"+id || orderRecs[1] != "order_outcome:"+id+":accepted:venue" {
		t.Fatalf("order records %v", orderRecs)
	}
	// Nothing is open, and the order counts in the rolling window.
	st := te.snapshot(t)
	daily, perMinute, _ := st.Counters.Window(time.Now(), "paper")
	if len(st.Attempts) != 0 || perMinute != 1 || !daily.Equal(decimal.NewFromInt(300)) {
		t.Fatalf("state: %d open, %d per minute, daily %s", len(st.Attempts), perMinute, daily)
	}
}

// An unknown outcome is settled, never resent: a lost answer to an order
// the venue placed is found (result source reconnaissance); a 5xx for an
// order it never placed is outcome_unknown with the client order id, and
// the venue holds no order for it.
func TestExecuteSettlesUnknownOutcomes(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})

	te.fault(t, "drop_response", venue.PathOrderCreate)
	found := te.exec(t, limitArgs("0.010", "30001"))
	if found.Err != nil || found.ResultSource != messages.ResultSourceReconnaissance || found.OrderID == "" {
		t.Fatalf("dropped answer: %+v err %v", found, found.Err)
	}
	if n := te.simOrders(t, found.ClientOrderID); n != 1 {
		t.Fatalf("%d orders for the dropped answer", n)
	}

	te.fault(t, "http_5xx", venue.PathOrderCreate)
	lost := te.exec(t, limitArgs("0.010", "30002"))
	if messages.CodeOf(lost.Err) != messages.CodeOutcomeUnknown || !strings.HasPrefix(lost.ClientOrderID, "gx-") ||
		lost.Err.Details["reconnaissance"] != "not_found" || lost.Err.NextStep == "" {
		t.Fatalf("5xx not applied: %+v err %+v", lost, lost.Err)
	}
	if n := te.simOrders(t, lost.ClientOrderID); n != 0 {
		t.Fatalf("%d orders for an order the venue never placed", n)
	}

	te.fault(t, "rate_limit", venue.PathOrderCreate)
	refused := te.exec(t, limitArgs("0.010", "30003"))
	if messages.CodeOf(refused.Err) != messages.CodeRateLimited || !strings.HasPrefix(refused.ClientOrderID, "gx-") {
		t.Fatalf("rate limited: %+v err %v", refused, refused.Err)
	}
	got := journalOf(t, dir)
	want := []string{
		"order_outcome:" + found.ClientOrderID + ":found:reconnaissance",
		"order_outcome:" + lost.ClientOrderID + ":not_found:reconnaissance",
		"order_outcome:" + refused.ClientOrderID + ":rejected:venue",
	}
	for _, w := range want {
		if !contains(got, w) {
			t.Fatalf("journal %v lacks %s", got, w)
		}
	}
	// The refused order does not count against the daily notional.
	daily, _, _ := te.snapshot(t).Counters.Window(time.Now(), "paper")
	if !daily.Equal(decimal.RequireFromString("600.03")) {
		t.Fatalf("daily notional %s, want 600.03 (found + unknown)", daily)
	}
}

// An unknown outcome whose look-up also fails stays open; after the
// stream reconnects, the attempt is reconciled by REST and its outcome
// journaled, and an order placed by someone else shows as external.
func TestStreamReconnectReconcilesOpenAttempts(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	te.fault(t, "http_5xx", venue.PathOrderCreate)
	te.simPost(t, "/sim/faults", `{"kind":"http_5xx","path":"/v5/order/realtime","count":50}`)
	open := te.exec(t, limitArgs("0.010", "29001"))
	te.clearFaults(t)
	if messages.CodeOf(open.Err) != messages.CodeOutcomeUnknown || open.Err.Details["reconnaissance"] != "failed" || open.ClientOrderID == "" {
		t.Fatalf("look-up failure: %+v err %+v", open, open.Err)
	}
	if st := te.snapshot(t); len(st.Attempts) != 1 {
		t.Fatalf("%d open attempts, want 1", len(st.Attempts))
	}
	if contains(journalOf(t, dir), "order_outcome:"+open.ClientOrderID+":not_found:reconnaissance") {
		t.Fatal("an outcome was journaled although nothing could be looked up")
	}
	// Drop the stream: the next push (an order placed outside this
	// server) closes the connection instead.
	te.simPost(t, "/sim/faults", `{"kind":"ws_disconnect","path":"/v5/private","count":1}`)
	c := te.outside(t)
	if _, err := c.CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.01"), Price: decimal.RequireFromString("28000"), OrderLinkID: "manual-1"}); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, dir, "order_outcome:"+open.ClientOrderID+":not_found:reconnaissance")
	if st := te.snapshot(t); len(st.Attempts) != 0 {
		t.Fatalf("%d open attempts after the reconcile", len(st.Attempts))
	}
	// After the reconnect, a later push of the outside order is external.
	if _, err := c.CancelOrder(context.Background(), messages.CancelOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: "manual-1"}); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, dir, "venue_update:manual-1:external")
}

// snapshot is the user's committed state.
func (te *tradeEnv) snapshot(t testing.TB) *state.User {
	t.Helper()
	st, err := te.UserState(te.user)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// scanAll reads every record of the journal in dir, on a snapshot (the
// server may be writing).
func scanAll(t testing.TB, dir string) []wal.Record {
	t.Helper()
	cp, cleanup, err := wal.Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	return rig.Records(t, cp)
}

// UserState rebuilds the user's state from what the journal holds now,
// through the same replay as start-up.
func (te *tradeEnv) UserState(user string) (*state.User, error) {
	replay := NewUserReplay()
	for _, r := range scanAll(te.t, te.dir) {
		if err := replay.OnRecord(r); err != nil {
			return nil, err
		}
	}
	states, err := replay.states(time.Now())
	if err != nil {
		return nil, err
	}
	return states[user], nil
}
