package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

func (te *tradeEnv) cancelAllOrders(t testing.TB, key string, dry bool) (*messages.CancelAllAnswer, *messages.Error) {
	t.Helper()
	res, err := te.askUser(context.Background(), te.user, &userCommand{ctx: context.Background(), origin: agentOrigin,
		cmd: &messages.CancelAllCommand{User: te.user, Args: messages.CancelAllArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", IdempotencyKey: key, DryRun: dry}}})
	if err != nil {
		e := messages.AsError(err)
		if e.Code == messages.CodeInternalError {
			t.Fatalf("cancel_all_orders: %v", err)
		}
		return nil, e
	}
	return res.(*messages.CancelAllAnswer), nil
}

// cancel_all_orders reads the open orders, cancels each by id (under the
// kill switch too), counts the ones this server did not place, and a key
// replays the whole answer.
func TestCancelAllOrders(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	// waitStream's probe orders are open too; cancel them first.
	if _, e := te.cancelAllOrders(t, "", false); e != nil {
		t.Fatal(e)
	}
	for _, p := range []string{"30000", "30000.1"} {
		if _, e := te.place(t, limitArgs("0.01", p)); e != nil {
			t.Fatal(e)
		}
	}
	if _, err := te.outside(t).CreateOrder(context.Background(), messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.01"), Price: decimal.RequireFromString("29000"), OrderLinkID: "by-hand-1"}); err != nil {
		t.Fatal(err)
	}
	te.must(t, &messages.SetKillSwitchRequest{User: te.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	prev, e := te.cancelAllOrders(t, "all-1", true)
	if e != nil || prev.Status != messages.AnswerPreview || prev.Count != 3 || prev.ExternalCount != 1 {
		t.Fatalf("preview: %+v %v", prev, e)
	}
	ans, e := te.cancelAllOrders(t, "all-1", false)
	if e != nil || ans.Status != "done" || ans.Count != 3 || ans.ExternalCount != 1 || ans.HasMore {
		t.Fatalf("cancel all: %+v %v", ans, e)
	}
	for _, r := range ans.Orders {
		if r.Status != "cancelled" {
			t.Fatalf("row %+v", r)
		}
		if (r.Origin == "system") != (r.ClientOrderID != "") {
			t.Fatalf("origin and client id disagree: %+v", r)
		}
	}
	rep, e := te.cancelAllOrders(t, "all-1", false)
	if e != nil || rep.ResultSource != messages.ResultSourceReplay || rep.Count != 3 {
		t.Fatalf("replay: %+v %v", rep, e)
	}
	again, e := te.cancelAllOrders(t, "", false)
	if e != nil || again.Count != 0 {
		t.Fatalf("nothing left: %+v %v", again, e)
	}
}

// seedOpen puts n resting linear BTCUSDT orders on the account directly
// (the simulator's test API: no rate limit) and returns their ids.
func (te *tradeEnv) seedOpen(t testing.TB, prefix string, n int) []string {
	t.Helper()
	var orders []string
	for i := range n {
		orders = append(orders, fmt.Sprintf(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"%d","orderLinkId":"%s-%d"}`, 25000+i, prefix, i))
	}
	resp, err := http.Post(te.ann.REST+"/sim/accounts/"+te.ann.APIKey+"/orders", "application/json", strings.NewReader("["+strings.Join(orders, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []struct {
		OrderID string `json:"orderId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out) != n {
		t.Fatalf("seed: %v %d", err, len(out))
	}
	ids := make([]string, n)
	for i, o := range out {
		ids[i] = o.OrderID
	}
	return ids
}

// cancelOutcomes counts the cancel attempts of cancel_all_orders (the
// children: no key, no argument hash) and those the venue's rate limit
// refused (rejected, nothing decided: the outcome releases the key).
func cancelOutcomes(t testing.TB, dir string) (attempts, rateLimited int) {
	t.Helper()
	open := map[string]bool{}
	for _, r := range scanAll(t, dir) {
		switch messages.RecordType(r.Type) {
		case messages.RecordOrderAttempt:
			var a messages.OrderAttemptEvent
			if json.Unmarshal(r.Payload, &a) == nil && a.Tool == risk.ToolCancelAll && a.IdempotencyKey == "" && a.ArgsSHA256 == "" {
				attempts++
				open[a.ClientOrderID] = true
			}
		case messages.RecordOrderOutcome:
			var o messages.OrderOutcomeEvent
			if json.Unmarshal(r.Payload, &o) == nil && open[o.ClientOrderID] && o.Status == messages.OutcomeRejected && o.ReleaseKey {
				rateLimited++
			}
		}
	}
	return attempts, rateLimited
}

// cancel_all_orders cancels its 20 orders within the venue's cancel rate
// limit (10 a second per key): paced, none refused, each cancelled once.
// When another client has just spent the limit, the 10006 refusal (nothing
// applied) is waited out and that cancel is sent again; a cancel whose
// outcome is unknown never is.
func TestCancelAllPacesItsCancels(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	if _, e := te.cancelAllOrders(t, "", false); e != nil { // waitStream's probes
		t.Fatal(e)
	}
	check := func(ans *messages.CancelAllAnswer, e *messages.Error, ids []string) {
		t.Helper()
		if e != nil || ans.Status != "done" || ans.Count != len(ids) {
			t.Fatalf("cancel all: %+v %v", ans, e)
		}
		for _, r := range ans.Orders {
			if r.Status != "cancelled" {
				t.Fatalf("row %+v of %+v", r, ans.Orders)
			}
		}
		open, err := te.outside(t).OpenOrders(context.Background(), venue.OrderQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Limit: 50})
		if err != nil || len(open.Items) != 0 {
			t.Fatalf("open after cancel all: %d %v", len(open.Items), err)
		}
	}

	ids := te.seedOpen(t, "first", 20)
	before, _ := cancelOutcomes(t, dir)
	ans, e := te.cancelAllOrders(t, "", false)
	check(ans, e, ids)
	attempts, limited := cancelOutcomes(t, dir)
	if attempts-before != 20 || limited != 0 {
		t.Fatalf("20 orders took %d cancel attempts, %d rate limited: not paced", attempts-before, limited)
	}

	// Another client spends the cancel limit just before the call.
	ids = te.seedOpen(t, "second", 5)
	c := te.outside(t)
	for i := 0; i < 12; i++ {
		_, _ = c.CancelOrder(context.Background(), messages.CancelOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: fmt.Sprintf("none-%d", i)})
	}
	// On a loaded machine the second those cancels spent may be over
	// before the call starts; the venue's next cancel is refused with
	// 10006 either way, as it would be while the limit is spent.
	te.fault(t, "rate_limit", venue.PathOrderCancel)
	before, _ = cancelOutcomes(t, dir)
	ans, e = te.cancelAllOrders(t, "", false)
	check(ans, e, ids)
	attempts, limited = cancelOutcomes(t, dir)
	if limited == 0 || attempts-before != 5+limited {
		t.Fatalf("after the limit was spent: %d attempts, %d rate limited (want 5 + one per refusal)", attempts-before, limited)
	}
}
