package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// addTrader creates a user with a fresh funded simulator key and a trade
// policy with room for many orders.
func (te *tradeEnv) addTrader(t *testing.T, user string) {
	t.Helper()
	te.must(t, &messages.CreateUserRequest{User: user}, messages.ActorCLIAdmin)
	resp, err := http.Post(te.ann.REST+"/sim/keys", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
	}
	json.NewDecoder(resp.Body).Decode(&k)
	resp.Body.Close()
	te.simPost(t, "/sim/accounts/"+k.APIKey+"/balances", `{"USDT":"1000000"}`)
	if _, err := te.Handle(context.Background(), &messages.AddCredentialRequest{User: user, Environment: "paper",
		APIKey: k.APIKey, APISecret: messages.NewSecret(k.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	te.policyFor(t, user)
}

func (te *tradeEnv) policyFor(t *testing.T, user string) {
	t.Helper()
	paper := messages.VenuePaper
	te.must(t, &messages.SetCeilingRequest{User: user, Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade),
		Allow: strs("linear:BTCUSDT"), ConfirmActions: strs(), VenueCeiling: &paper, DailyNotionalCapUSDT: dec("100000000"),
		MaxOrdersPerMinute: intp(100000), MaxUnconfirmedActionsPerHour: intp(100000)}}, messages.ActorCLIAdmin)
}

// The fault matrix: 1,000 seeded place_order actions from eight users in
// parallel, with the venue dropping answers, failing with 5xx (applied or
// not), rate limiting, and failing the look-ups too; some calls repeat an
// earlier idempotency key. Whatever the faults, no client order id ever
// reaches the venue twice, every order the venue holds under a "gx-" id
// was journaled as an attempt first, an answer that says accepted names
// an order the venue has, a refusal names none, and a key never places two
// orders.
func TestFaultMatrixNoDuplicates(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.policyFor(t, te.user)
	users := []string{te.user}
	for i := 1; i < 8; i++ {
		u := fmt.Sprintf("trader%d", i)
		te.addTrader(t, u)
		users = append(users, u)
	}
	faults := []string{"", "", "", "", "drop_response", "http_5xx", "http_5xx_apply", "rate_limit", "lookup_fails"}
	type step struct {
		fault string
		args  messages.PlaceOrderArgs
	}
	rng := rand.New(rand.NewPCG(10, 20))
	plans := map[string][]step{}
	for i := 0; i < n; i++ {
		u := users[rng.IntN(len(users))]
		prev := plans[u]
		var s step
		s.fault = faults[rng.IntN(len(faults))]
		if len(prev) > 0 && rng.IntN(10) == 0 && prev[len(prev)-1].args.IdempotencyKey != "" {
			s.args = prev[rng.IntN(len(prev))].args // a repeat (with or without a key)
		} else {
			price := decimal.NewFromInt(int64(20000 + rng.IntN(9000))).Add(decimal.New(int64(rng.IntN(10)), -1))
			s.args = limitArgs("0.001", price.String())
			if rng.IntN(2) == 0 {
				s.args.IdempotencyKey = fmt.Sprintf("%s-k%d", u, i)
			}
		}
		plans[u] = append(plans[u], s)
	}
	type outcome struct {
		user string
		key  string
		ans  *messages.OrderAnswer
		err  *messages.Error
	}
	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	for u, steps := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range steps {
				switch s.fault {
				case "":
				case "http_5xx_apply":
					te.simPost(t, "/sim/faults", `{"kind":"http_5xx","path":"/v5/order/create","count":1,"apply":true}`)
				case "lookup_fails":
					te.simPost(t, "/sim/faults", `{"kind":"http_5xx","path":"/v5/order/create","count":1}`)
					te.simPost(t, "/sim/faults", `{"kind":"http_5xx","path":"/v5/order/realtime","count":3}`)
				default:
					te.simPost(t, "/sim/faults", `{"kind":"`+s.fault+`","path":"/v5/order/create","count":1}`)
				}
				res, err := te.askUser(context.Background(), u, &tradingAsk{ctx: context.Background(), tool: placeOrderTool, args: s.args, origin: agentOrigin})
				o := outcome{user: u, key: s.args.IdempotencyKey}
				if err != nil {
					o.err = messages.AsError(err)
				} else {
					o.ans = res.(*messages.OrderAnswer)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	te.clearFaults(t)

	// The venue's orders by client order id.
	resp, err := http.Get(te.ann.REST + "/sim/orders")
	if err != nil {
		t.Fatal(err)
	}
	var all []struct {
		OrderLinkID string `json:"orderLinkId"`
	}
	json.NewDecoder(resp.Body).Decode(&all)
	resp.Body.Close()
	onVenue := map[string]int{}
	for _, o := range all {
		onVenue[o.OrderLinkID]++
		if onVenue[o.OrderLinkID] > 1 {
			t.Fatalf("client order id %s reached the venue twice", o.OrderLinkID)
		}
	}
	attempts := map[string]bool{}
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) == messages.RecordOrderAttempt {
			var a messages.OrderAttemptEvent
			json.Unmarshal(r.Payload, &a)
			attempts[a.ClientOrderID] = true
		}
	}
	for id := range onVenue {
		if len(id) > 3 && id[:3] == "gx-" && !attempts[id] {
			t.Fatalf("order %s is on the venue without a journaled attempt", id)
		}
	}
	byKey := map[string]map[string]bool{}
	counts := map[string]int{}
	for _, o := range outcomes {
		switch {
		case o.ans != nil:
			counts["answered"]++
			if onVenue[o.ans.ClientOrderID] != 1 {
				t.Fatalf("an answer (%s) names %s, which the venue does not hold", o.ans.ResultSource, o.ans.ClientOrderID)
			}
			if o.key != "" {
				if byKey[o.key] == nil {
					byKey[o.key] = map[string]bool{}
				}
				byKey[o.key][o.ans.ClientOrderID] = true
			}
		case o.err.Code == messages.CodeOutcomeUnknown:
			counts["unknown"]++
		default:
			counts[string(o.err.Code)]++
			if id, _ := o.err.Details["client_order_id"].(string); id != "" && onVenue[id] != 0 {
				t.Fatalf("a refusal (%s) names %s, which the venue holds", o.err.Code, id)
			}
		}
	}
	for k, ids := range byKey {
		if len(ids) > 1 {
			t.Fatalf("idempotency key %s placed %d orders", k, len(ids))
		}
	}
	if len(outcomes) != n || counts["answered"] < n/3 || counts["unknown"] == 0 || counts[string(messages.CodeRateLimited)] == 0 {
		t.Fatalf("the matrix did not exercise the faults: %d outcomes, %v", len(outcomes), counts)
	}
	t.Logf("%d actions: %v; %d orders on the venue", n, counts, len(all))
}
