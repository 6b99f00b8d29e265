package venue

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func TestCancelResult(t *testing.T) {
	cases := []struct {
		order  *messages.Order
		status messages.ChangeStatus
		filled string
	}{
		{nil, messages.ChangeCancelRequested, "unknown"},
		{&messages.Order{Status: "Created"}, messages.ChangeCancelRequested, "unknown"},
		{&messages.Order{Status: "New"}, messages.ChangeCancelRequested, "0"},
		{&messages.Order{Status: "PartiallyFilled", CumExecQty: d("0.4")}, messages.ChangeCancelRequested, "0.4"},
		{&messages.Order{Status: "Cancelled", CumExecQty: d("0.4")}, messages.ChangeCancelled, "0.4"},
		{&messages.Order{Status: "PartiallyFilledCanceled", CumExecQty: d("0.1")}, messages.ChangeCancelled, "0.1"},
		{&messages.Order{Status: "Filled", CumExecQty: d("1")}, messages.ChangeFilled, "1"},
	}
	for _, tc := range cases {
		r := CancelResult(tc.order)
		if r.Status != tc.status || r.FilledQty.String() != tc.filled {
			t.Errorf("%+v: got %s/%s, want %s/%s", tc.order, r.Status, r.FilledQty, tc.status, tc.filled)
		}
	}
}

func TestAmendResult(t *testing.T) {
	price := messages.AmendOrderRequest{Price: decimal.NewNullDecimal(d("31000"))}
	tp := messages.AmendOrderRequest{TakeProfit: decimal.NewNullDecimal(d("40000"))}
	cases := []struct {
		name   string
		req    messages.AmendOrderRequest
		order  *messages.Order
		status messages.ChangeStatus
	}{
		{"unread", price, nil, messages.ChangeAmendRequested},
		{"old price", price, &messages.Order{Status: "New", Price: d("30000")}, messages.ChangeAmendRequested},
		{"new price", price, &messages.Order{Status: "New", Price: d("31000.0")}, messages.ChangeAmended},
		{"filled first", price, &messages.Order{Status: "Filled", Price: d("30000")}, messages.ChangeFilled},
		{"cancelled first", price, &messages.Order{Status: "Cancelled", Price: d("30000")}, messages.ChangeOrderClosed},
		{"tp not visible", tp, &messages.Order{Status: "New", Price: d("30000")}, messages.ChangeAmendRequested},
	}
	for _, tc := range cases {
		if r := AmendResult(tc.req, tc.order); r.Status != tc.status {
			t.Errorf("%s: got %s, want %s", tc.name, r.Status, tc.status)
		}
	}
}

func TestFilledQtyJSON(t *testing.T) {
	for _, tc := range []struct {
		f    messages.FilledQty
		json string
	}{
		{messages.FilledQty{}, `"unknown"`},
		{messages.KnownFilled(decimal.Zero), `"0"`},
		{messages.KnownFilled(d("0.015")), `"0.015"`},
	} {
		b, err := json.Marshal(tc.f)
		if err != nil || string(b) != tc.json {
			t.Fatalf("%+v → %s %v", tc.f, b, err)
		}
		var back messages.FilledQty
		if err := json.Unmarshal(b, &back); err != nil || back.Known != tc.f.Known || !back.Qty.Equal(tc.f.Qty) {
			t.Fatalf("round trip of %s: %+v %v", b, back, err)
		}
	}
	var f messages.FilledQty
	if err := json.Unmarshal([]byte(`0.5`), &f); err == nil {
		t.Fatal("a JSON number was accepted")
	}
}

// Pushes are decoded strictly: one bad row refuses the whole push.
func TestDecodePush(t *testing.T) {
	good := `{"topic":"order","creationTime":1700000000000,"data":[{"category":"linear","symbol":"BTCUSDT","orderId":"1","orderLinkId":"gx-1","orderStatus":"New","qty":"0.010","price":"30000","cumExecQty":"0"}]}`
	cases := []struct {
		name string
		msg  string
		kind messages.StreamEventKind
		bad  string
	}{
		{name: "order", msg: good, kind: messages.StreamOrders},
		{name: "order_linear_topic", msg: strings.Replace(good, `"order"`, `"order.linear"`, 1), kind: messages.StreamOrders},
		{name: "bad_decimal", msg: strings.Replace(good, `"0.010"`, `"abc"`, 1), bad: "qty"},
		{name: "float_not_string_ok", msg: strings.Replace(good, `"0.010"`, `0.010`, 1), kind: messages.StreamOrders},
		{name: "inverse_skipped", msg: strings.Replace(good, `"linear"`, `"inverse"`, 1)},
		{name: "bogus_category", msg: strings.Replace(good, `"linear"`, `"futures"`, 1), bad: "category"},
		{name: "missing_category", msg: strings.Replace(good, `"category":"linear",`, ``, 1), bad: "category"},
		{name: "missing_order_id", msg: strings.Replace(good, `"orderId":"1",`, ``, 1), bad: "orderId"},
		{name: "data_not_list", msg: `{"topic":"order","creationTime":1,"data":{}}`, bad: "list"},
		{name: "bad_time", msg: `{"topic":"order","creationTime":"x","data":[]}`, bad: "creationTime"},
		{name: "position_entry_price", msg: `{"topic":"position","creationTime":1,"data":[{"category":"linear","symbol":"BTCUSDT","side":"Buy","size":"0.01","entryPrice":"60000"}]}`, kind: messages.StreamPositions},
		{name: "negative_size", msg: `{"topic":"position","creationTime":1,"data":[{"category":"linear","symbol":"BTCUSDT","side":"Buy","size":"-1"}]}`, bad: "size"},
		{name: "wallet", msg: `{"topic":"wallet","creationTime":1,"data":[{"accountType":"UNIFIED","totalEquity":"10","coin":[{"coin":"USDT","walletBalance":"10"}]}]}`, kind: messages.StreamWalletEvent},
		{name: "wallet_no_unified", msg: `{"topic":"wallet","creationTime":1,"data":[{"accountType":"CONTRACT"}]}`, bad: "UNIFIED"},
		{name: "execution", msg: `{"topic":"execution","creationTime":1,"data":[{"category":"spot","symbol":"BTCUSDT","execId":"e1","execQty":"0.5","execPrice":"60000","isMaker":false}]}`, kind: messages.StreamExecutions},
		{name: "other_topic_ignored", msg: `{"topic":"greeks","creationTime":1,"data":[{}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m wireStreamMsg
			if err := json.Unmarshal([]byte(tc.msg), &m); err != nil {
				if tc.bad == "" {
					t.Fatal(err)
				}
				return
			}
			ev, err := decodePush(&m)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("want an error naming %s, got %v / %+v", tc.bad, err, ev)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.kind == "" {
				if ev != nil {
					t.Fatalf("ignored topic gave %+v", ev)
				}
				return
			}
			if ev.Kind != tc.kind {
				t.Fatalf("kind %s", ev.Kind)
			}
			switch ev.Kind {
			case messages.StreamOrders:
				if len(ev.Orders) != 1 || !ev.Orders[0].Qty.Equal(d("0.01")) || ev.Orders[0].Category != messages.CategoryLinear {
					t.Fatalf("%+v", ev.Orders)
				}
			case messages.StreamPositions:
				if !ev.Positions[0].AvgPrice.Equal(d("60000")) {
					t.Fatalf("entryPrice not read: %+v", ev.Positions[0])
				}
			case messages.StreamWalletEvent:
				if !ev.Wallet.Coins[0].WalletBalance.Equal(d("10")) {
					t.Fatalf("%+v", ev.Wallet)
				}
			case messages.StreamExecutions:
				if !ev.Executions[0].ExecQty.Equal(d("0.5")) || ev.Executions[0].Category != messages.CategorySpot {
					t.Fatalf("%+v", ev.Executions)
				}
			}
		})
	}
}

// Request bodies are built from decimals with exact spellings, in a fixed
// order, and invalid requests never reach the wire.
func TestCreateBody(t *testing.T) {
	r := messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Sell", OrderType: "Limit",
		Qty: d("0.00100"), Price: d("65000.5"), TimeInForce: "PostOnly", OrderLinkID: "gx-abc", ReduceOnly: true, StopLoss: d("70000")}
	b, err := createBody(r)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := b.marshal()
	want := `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Limit","qty":"0.001","price":"65000.5","timeInForce":"PostOnly","orderLinkId":"gx-abc","reduceOnly":true,"stopLoss":"70000","positionIdx":0}`
	if string(raw) != want {
		t.Fatalf("body\n%s\nwant\n%s", raw, want)
	}
	bad := []struct {
		field string
		edit  func(*messages.CreateOrderRequest)
	}{
		{"side", func(r *messages.CreateOrderRequest) { r.Side = "buy" }},
		{"order_type", func(r *messages.CreateOrderRequest) { r.OrderType = "Stop" }},
		{"price", func(r *messages.CreateOrderRequest) { r.Price = decimal.Zero }},
		{"price", func(r *messages.CreateOrderRequest) { r.OrderType = "Market" }},
		{"qty", func(r *messages.CreateOrderRequest) { r.Qty = decimal.Zero }},
		{"time_in_force", func(r *messages.CreateOrderRequest) { r.TimeInForce = "GTD" }},
		{"order_link_id", func(r *messages.CreateOrderRequest) { r.OrderLinkID = "" }},
		{"order_link_id", func(r *messages.CreateOrderRequest) { r.OrderLinkID = strings.Repeat("a", 37) }},
		{"order_link_id", func(r *messages.CreateOrderRequest) { r.OrderLinkID = "gx abc" }},
		{"reduce_only", func(r *messages.CreateOrderRequest) { r.Category = messages.CategorySpot; r.StopLoss = decimal.Zero }},
		{"symbol", func(r *messages.CreateOrderRequest) { r.Symbol = "btc" }},
		{"market_unit", func(r *messages.CreateOrderRequest) { r.MarketUnit = "baseCoin" }},
	}
	for _, tc := range bad {
		rr := r
		tc.edit(&rr)
		_, err := createBody(rr)
		e := messages.AsError(err)
		if e.Code != messages.CodeInvalidParams || e.Details["field"] != tc.field {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
}
