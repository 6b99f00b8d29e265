package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	fe.privProxy.SetFilter(func(msg []byte) [][]byte {
		if !bytes.Contains(msg, []byte(`"topic":"order"`)) || !bytes.Contains(msg, []byte(`"orderLinkId":"gx-`)) {
			return [][]byte{msg}
		}
		var m map[string]any
		if json.Unmarshal(msg, &m) != nil {
			return [][]byte{msg}
		}
		rows, _ := m["data"].([]any)
		for _, r := range rows {
			o, _ := r.(map[string]any)
			o["orderStatus"], o["cumExecQty"], o["leavesQty"], o["cumExecValue"], o["avgPrice"] = "Filled", o["qty"], "0", "20.004", "20004"
		}
		b, _ := json.Marshal(m)
		return [][]byte{b}
	})
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
