package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// A hostile private stream that rewrites the create's own order push (its
// client order id and order id kept) to show it Filled cannot make the
// answer or the journal say so: the order rests, the answer says New and
// 0 filled, the journal's outcome is the REST read-back's, and
// get_my_orders shows no fill (D161).
func TestPlaceForgedFillOfTheCreatesOwnPushAnswersNothing(t *testing.T) {
	dir := t.TempDir()
	fe := newFeedEnv(t, dir, feedOpts{privateProxy: true})
	fe.tradeReady(t, messages.PolicySettings{})
	fe.warm(t)
	fe.privProxy.SetFilter(rewriteOwnOrderPushes(func(o map[string]any) {
		o["orderStatus"], o["cumExecQty"], o["leavesQty"], o["cumExecValue"], o["avgPrice"] = "Filled", o["qty"], "0", "20.004", "20004"
	}))
	readBacks := fe.rest.count(venue.PathOrderRealtime, venue.PathOrderHistory)
	ans, e := fe.place(t, limitArgs("0.001", "20004"))
	if e != nil {
		t.Fatal(e)
	}
	if ans.OrderStatus != "New" || ans.FilledQty.String() != "0" {
		t.Fatalf("a forged fill of the create's own push answered it: %s %s", ans.OrderStatus, ans.FilledQty)
	}
	if fe.rest.count(venue.PathOrderRealtime, venue.PathOrderHistory) == readBacks {
		t.Fatal("the create was not read back by REST")
	}
	for _, g := range journalOf(t, dir) {
		if strings.HasPrefix(g, "order_outcome:"+ans.ClientOrderID+":") && strings.Contains(g, "Filled") {
			t.Fatalf("the journal records the forged fill: %s", g)
		}
	}
	o, _, err := fe.outside(t).OrderByLinkID(context.Background(), messages.CategoryLinear, "BTCUSDT", ans.ClientOrderID)
	if err != nil || o == nil || o.Status != "New" {
		t.Fatalf("the venue's order: %+v %v", o, err)
	}
}

// A hostile private stream that withholds the position pushes while the
// symbol's leverage is raised outside the server (on the venue's site, by
// another key) cannot let an order through at a leverage above
// max_leverage: the decision reads the position by REST, sees the
// leverage, and lowers it first (a flat position) as it would have
// without the stream (D162).
func TestPlaceWithheldLeveragePushStillKeepsMaxLeverage(t *testing.T) {
	fe := newFeedEnv(t, t.TempDir(), feedOpts{privateProxy: true})
	fe.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("10")})
	fe.warm(t) // reads the flat position at the venue's 10x
	fe.privProxy.SetFilter(func(msg []byte) [][]byte {
		if bytes.Contains(msg, []byte(`"topic":"position"`)) {
			return nil
		}
		return [][]byte{msg}
	})
	out := fe.outside(t)
	if _, err := out.SetLeverage(context.Background(), messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Leverage: decimal.NewFromInt(50)}); err != nil {
		t.Fatal(err)
	}
	if _, e := fe.place(t, limitArgs("0.001", "20005")); e != nil && e.Details["limit"] != "max_leverage" {
		t.Fatal(e)
	}
	page, err := out.Positions(context.Background(), venue.PositionQuery{Category: messages.CategoryLinear, Symbol: "BTCUSDT"})
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("positions %+v %v", page, err)
	}
	if lev := page.Items[0].Leverage; lev.GreaterThan(decimal.NewFromInt(10)) {
		t.Fatalf("an order went out at %sx, above max_leverage 10", lev)
	}
}

// A flood of public pushes (20,000 a second, for the watched symbol with a
// forged wide band and for symbols nobody watches) costs the public
// stream's reader only: a decision still answers (and the forged band
// lets nothing above the venue's through), the kill switch answers and
// then refuses the next order, and the stream keeps a quote for none of
// the unwatched symbols (D148: no push reaches an actor, a push for an
// unwatched symbol is dropped).
func TestKillSwitchAnswersDuringAPublicStreamFlood(t *testing.T) {
	fe := newFeedEnv(t, t.TempDir(), feedOpts{publicProxy: true})
	fe.tradeReady(t, messages.PolicySettings{})
	fe.warm(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const perSecond = 20000
	before := fe.pub.Pushes()
	flooded := make(chan int, 1)
	go func() {
		flooded <- fe.pubProxy.Flood(ctx, perSecond, 6*time.Second, func(i int) []byte {
			sym := "BTCUSDT"
			if i%2 == 1 {
				sym = fmt.Sprintf("X%dUSDT", i)
			}
			return []byte(fmt.Sprintf(`{"topic":"priceLimit.%s","ts":%d,"data":[{"symbol":%q,"buyLmt":"99999999","sellLmt":"0.1"}]}`, sym, time.Now().UnixMilli(), sym))
		})
	}()
	for deadline := time.Now().Add(20 * time.Second); fe.pub.Pushes()-before < perSecond/2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood did not get going: %d pushes", fe.pub.Pushes()-before)
		}
	}
	band, err := fe.outside(t).PriceLimit(context.Background(), messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	if _, e := fe.place(t, limitArgs("0.001", band.BuyLimit.Mul(decimal.RequireFromString("1.1")).Round(0).String())); e == nil || e.Details["rule"] != "price_band" {
		t.Fatalf("a buy above the band during the flood: %+v", e)
	}
	fe.must(t, &messages.SetKillSwitchRequest{User: fe.user, On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if _, e := fe.place(t, limitArgs("0.001", "20006")); e == nil || e.Code != messages.CodeKillSwitchActive {
		t.Fatalf("an order after the kill switch, during the flood: %+v", e)
	}
	flooding := fe.pub.Pushes()-before < 6*perSecond*9/10
	cancel()
	if n := <-flooded; n < perSecond/2 {
		t.Fatalf("the flood sent %d pushes", n)
	}
	if !flooding {
		t.Log("the flood had ended before the kill switch answered")
	}
	for _, s := range []string{"X1USDT", "X3USDT", "X19999USDT"} {
		if _, ok := fe.pub.Quote(s); ok {
			t.Fatalf("the stream keeps a quote of %s, which nobody watches", s)
		}
	}
}

// A public stream that stays connected (its pings answered) but holds
// back one symbol's pushes while it forwards the others' is not fresh for
// that symbol past the bound: the decision reads its band by REST, and
// refuses a buy above the band as it is now.
func TestPlaceReadsRESTWhenOneSymbolFreezesOnALiveStream(t *testing.T) {
	fe := newFeedEnv(t, t.TempDir(), feedOpts{publicProxy: true})
	fe.tradeReady(t, messages.PolicySettings{})
	fe.warm(t)
	var held atomic.Int64
	fe.pubProxy.SetFilter(func(msg []byte) [][]byte {
		if bytes.Contains(msg, []byte(`.BTCUSDT"`)) {
			held.Add(1)
			return nil
		}
		return [][]byte{msg}
	})
	// Another symbol keeps flowing (forged for it: the simulator pushes
	// only what is watched).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go fe.pubProxy.Flood(ctx, 50, 10*time.Second, func(int) []byte {
		return []byte(fmt.Sprintf(`{"topic":"tickers.ETHUSDT","type":"snapshot","ts":%d,"data":{"symbol":"ETHUSDT","bid1Price":"2000","ask1Price":"2001"}}`, time.Now().UnixMilli()))
	})
	pushes := fe.pub.Pushes()
	time.Sleep(feedStaleAfter + 1200*time.Millisecond)
	if !fe.pub.Connected() || held.Load() == 0 || fe.pub.Pushes()-pushes < 50 {
		t.Fatalf("connected %v, %d pushes of the symbol held, %d others came", fe.pub.Connected(), held.Load(), fe.pub.Pushes()-pushes)
	}
	// The price falls a fifth: a buy a tenth below the old price is above
	// the band as it is now (on the held band it would pass).
	old, err := fe.outside(t).Ticker(context.Background(), messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	fe.simPost(t, "/sim/price", fmt.Sprintf(`{"category":"linear","symbol":"BTCUSDT","price":%q}`, old.LastPrice.Mul(decimal.RequireFromString("0.8")).Round(1).String()))
	creates := fe.rest.count(venue.PathOrderCreate)
	_, e := fe.place(t, limitArgs("0.001", old.LastPrice.Mul(decimal.RequireFromString("0.9")).Round(0).String()))
	if e == nil || e.Details["rule"] != "price_band" || fe.rest.count(venue.PathOrderCreate) != creates {
		t.Fatalf("a buy above the band as it is now, while the symbol is held back: %+v", e)
	}
}

// rewriteOwnOrderPushes is a hostile private stream's filter: every order
// push of this server's orders (client order id gx-…) has each row
// rewritten by rewrite before it is passed on; other messages pass as
// they are.
func rewriteOwnOrderPushes(rewrite func(row map[string]any)) func([]byte) [][]byte {
	return func(msg []byte) [][]byte {
		if !bytes.Contains(msg, []byte(`"topic":"order"`)) || !bytes.Contains(msg, []byte(`"orderLinkId":"gx-`)) {
			return [][]byte{msg}
		}
		var m map[string]any
		if json.Unmarshal(msg, &m) != nil {
			return [][]byte{msg}
		}
		rows, _ := m["data"].([]any)
		for _, r := range rows {
			if o, ok := r.(map[string]any); ok {
				rewrite(o)
			}
		}
		b, _ := json.Marshal(m)
		return [][]byte{b}
	}
}
