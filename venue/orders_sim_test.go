package venue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// tradingSim is a standalone simulator on loopback (with its /sim/ test
// API) and a funded key.
type tradingSim struct {
	srv *sim.Server
	ann sim.Announcement
	key sim.Key
}

func startTradingSim(t *testing.T, cfg sim.Config) *tradingSim {
	t.Helper()
	if cfg.Seed == 0 {
		cfg.Seed = 7
	}
	srv, err := sim.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ts := &tradingSim{srv: srv, ann: srv.Announcement()}
	ts.key = sim.Key{APIKey: ts.ann.APIKey, APISecret: ts.ann.APISecret}
	ts.simPost(t, "/sim/accounts/"+ts.key.APIKey+"/balances", `{"USDT":"100000","BTC":"2"}`)
	return ts
}

// simPost calls a /sim/ endpoint and fails the test unless it answers 200.
func (ts *tradingSim) simPost(t *testing.T, path, body string) {
	t.Helper()
	resp, err := http.Post(ts.ann.REST+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b.String())
	}
}

func (ts *tradingSim) fault(t *testing.T, kind, path string, extra string) {
	t.Helper()
	body := `{"kind":"` + kind + `","path":"` + path + `","count":1` + extra + `}`
	ts.simPost(t, "/sim/faults", body)
}

func (ts *tradingSim) clearFaults(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, ts.ann.REST+"/sim/faults", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

type simOrderRow struct {
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
	Status      string `json:"status"`
	Price       string `json:"price"`
}

// ordersFor lists GET /sim/orders rows with orderLinkId id.
func (ts *tradingSim) ordersFor(t *testing.T, id string) []simOrderRow {
	t.Helper()
	resp, err := http.Get(ts.ann.REST + "/sim/orders")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all []simOrderRow
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	var out []simOrderRow
	for _, r := range all {
		if r.OrderLinkID == id {
			out = append(out, r)
		}
	}
	return out
}

func (ts *tradingSim) client(t *testing.T, timeout time.Duration) *venue.Client {
	t.Helper()
	c, err := venue.NewClient(venue.Config{BaseURL: ts.ann.REST, APIKey: ts.key.APIKey, APISecret: ts.key.APISecret,
		HTTPClient: &http.Client{Timeout: timeout}, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func limitBuy(id string) messages.CreateOrderRequest {
	return messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy",
		OrderType: "Limit", Qty: dec("0.010"), Price: dec("30000"), OrderLinkID: id}
}

// Every fault kind on order/create is classified, and the simulator never
// holds more than one order per client order id: nothing is resent.
func TestCreateOrderClassification(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	c := ts.client(t, 2*time.Second)
	short := ts.client(t, 300*time.Millisecond)
	ctx := context.Background()

	cases := []struct {
		name     string
		fault    string
		extra    string
		client   *venue.Client
		class    venue.WriteClass
		code     messages.Code
		orders   int // orders the simulator holds for the id afterwards
		settleOK bool
	}{
		{name: "accepted", class: "", orders: 1, settleOK: true},
		{name: "drop_response", fault: "drop_response", class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, orders: 1, settleOK: true},
		{name: "http_5xx_not_applied", fault: "http_5xx", class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, orders: 0},
		{name: "http_5xx_applied", fault: "http_5xx", extra: `,"apply":true`, class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, orders: 1, settleOK: true},
		{name: "delay_beyond_deadline", fault: "delay", extra: `,"delay_ms":1500`, client: short, class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, orders: 1, settleOK: true},
		{name: "rate_limit", fault: "rate_limit", class: venue.WriteRefused, code: messages.CodeRateLimited, orders: 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts.clearFaults(t)
			if tc.fault != "" {
				ts.fault(t, tc.fault, venue.PathOrderCreate, tc.extra)
			}
			cl := c
			if tc.client != nil {
				cl = tc.client
			}
			id := "gx-create-" + string(rune('a'+i))
			ack, err := cl.CreateOrder(ctx, limitBuy(id))
			if got := venue.ClassifyWrite(err); got != tc.class {
				t.Fatalf("class %q, want %q (err %v)", got, tc.class, err)
			}
			if tc.class == "" {
				if ack == nil || ack.OrderID == "" || ack.OrderLinkID != id {
					t.Fatalf("ack %+v", ack)
				}
			} else {
				if messages.CodeOf(err) != tc.code {
					t.Fatalf("code %s, want %s (%v)", messages.CodeOf(err), tc.code, err)
				}
				if (tc.class == venue.WriteUnknown) != errors.Is(err, venue.ErrOutcomeUnknown) {
					t.Fatalf("errors.Is(ErrOutcomeUnknown) wrong for %v", err)
				}
			}
			if tc.fault == "delay" {
				time.Sleep(1500 * time.Millisecond) // let the held answer finish
			}
			if got := ts.ordersFor(t, id); len(got) != tc.orders {
				t.Fatalf("simulator holds %d orders for the id, want %d: %+v", len(got), tc.orders, got)
			}
			if tc.class != venue.WriteUnknown {
				return
			}
			ts.clearFaults(t)
			st, _, err := venue.Settle(ctx, c, nil, linkExpect(id), 0)
			if tc.settleOK {
				if err != nil || st.ResultSource != "reconnaissance" || st.Order.OrderLinkID != id || st.FoundBy != venue.FoundInOpenOrders {
					t.Fatalf("settle: %+v %v", st, err)
				}
				if !st.FilledQty.Known || !st.FilledQty.Qty.IsZero() {
					t.Fatalf("resting order filled %s", st.FilledQty)
				}
			} else {
				e := messages.AsError(err)
				if e.Code != messages.CodeOutcomeUnknown || e.Details["reconnaissance"] != "not_found" ||
					e.Details["client_order_id"] != id || e.NextStep == "" || !errors.Is(err, venue.ErrOutcomeUnknown) {
					t.Fatalf("settle of an order never applied: %+v", e)
				}
			}
			if got := ts.ordersFor(t, id); len(got) != tc.orders {
				t.Fatalf("after settling the simulator holds %d orders, want %d", len(got), tc.orders)
			}
		})
	}

	t.Run("duplicate_link_id", func(t *testing.T) {
		ts.clearFaults(t)
		id := "gx-create-dup"
		if _, err := c.CreateOrder(ctx, limitBuy(id)); err != nil {
			t.Fatal(err)
		}
		_, err := c.CreateOrder(ctx, limitBuy(id))
		if venue.ClassifyWrite(err) != venue.WriteUnknown || messages.CodeOf(err) != messages.CodeOutcomeUnknown {
			t.Fatalf("duplicate: %v", err)
		}
		if got := ts.ordersFor(t, id); len(got) != 1 {
			t.Fatalf("%d orders for a duplicated id", len(got))
		}
	})

	t.Run("not_sent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		dead, err := venue.NewClient(venue.Config{BaseURL: "http://" + addr, APIKey: "K123", APISecret: "S123"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = dead.CreateOrder(ctx, limitBuy("gx-not-sent"))
		if venue.ClassifyWrite(err) != venue.WriteNotSent || !errors.Is(err, venue.ErrNotSent) ||
			messages.CodeOf(err) != messages.CodeExchangeUnavailable {
			t.Fatalf("dial refused: class %s, %v", venue.ClassifyWrite(err), err)
		}
		// Invalid input and a missing key are refused before sending.
		bad := limitBuy("gx-bad")
		bad.Qty = dec("-1")
		if _, err := c.CreateOrder(ctx, bad); venue.ClassifyWrite(err) != venue.WriteNotSent || messages.CodeOf(err) != messages.CodeInvalidParams {
			t.Fatalf("bad qty: %v", err)
		}
		keyless, _ := venue.NewClient(venue.Config{BaseURL: ts.ann.REST})
		if _, err := keyless.CreateOrder(ctx, limitBuy("gx-nokey")); venue.ClassifyWrite(err) != venue.WriteNotSent ||
			messages.CodeOf(err) != messages.CodeExchangeCredentialsInvalid {
			t.Fatalf("no key: %v", err)
		}
		// A cancelled context before sending: not sent either.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := c.CreateOrder(cctx, limitBuy("gx-cancelled")); venue.ClassifyWrite(err) != venue.WriteNotSent {
			t.Fatalf("cancelled before sending: %s %v", venue.ClassifyWrite(err), err)
		}
		for _, id := range []string{"gx-bad", "gx-nokey", "gx-cancelled"} {
			if got := ts.ordersFor(t, id); len(got) != 0 {
				t.Fatalf("%s reached the simulator", id)
			}
		}
	})
}

// Amend and cancel: each fault kind is classified, the simulator shows
// what really happened, and an accepted change is reported only as far as
// the order shows it.
func TestAmendCancelClassification(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	c := ts.client(t, 2*time.Second)
	short := ts.client(t, 300*time.Millisecond)
	ctx := context.Background()
	place := func(t *testing.T, id string) {
		t.Helper()
		if _, err := c.CreateOrder(ctx, limitBuy(id)); err != nil {
			t.Fatal(err)
		}
	}
	status := func(t *testing.T, id string) simOrderRow {
		t.Helper()
		rows := ts.ordersFor(t, id)
		if len(rows) != 1 {
			t.Fatalf("%d orders for %s", len(rows), id)
		}
		return rows[0]
	}

	faults := []struct {
		name    string
		fault   string
		extra   string
		client  *venue.Client
		class   venue.WriteClass
		code    messages.Code
		applied bool
	}{
		{name: "drop_response", fault: "drop_response", class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, applied: true},
		{name: "http_5xx_not_applied", fault: "http_5xx", class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown},
		{name: "http_5xx_applied", fault: "http_5xx", extra: `,"apply":true`, class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, applied: true},
		{name: "delay_beyond_deadline", fault: "delay", extra: `,"delay_ms":1500`, client: short, class: venue.WriteUnknown, code: messages.CodeOutcomeUnknown, applied: true},
		{name: "rate_limit", fault: "rate_limit", class: venue.WriteRefused, code: messages.CodeRateLimited},
	}
	for i, tc := range faults {
		cl := c
		if tc.client != nil {
			cl = tc.client
		}
		t.Run("amend_"+tc.name, func(t *testing.T) {
			ts.clearFaults(t)
			id := "gx-amend-" + string(rune('a'+i))
			place(t, id)
			ts.fault(t, tc.fault, venue.PathOrderAmend, tc.extra)
			_, err := cl.AmendOrder(ctx, messages.AmendOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
				OrderLinkID: id, Price: decimal.NewNullDecimal(dec("31000"))})
			if venue.ClassifyWrite(err) != tc.class || messages.CodeOf(err) != tc.code {
				t.Fatalf("class %s code %s: %v", venue.ClassifyWrite(err), messages.CodeOf(err), err)
			}
			if tc.fault == "delay" {
				time.Sleep(1500 * time.Millisecond)
			}
			status(t, id) // exactly one order
			ts.clearFaults(t)
			o, _, err := c.OrderByLinkID(ctx, messages.CategoryLinear, "BTCUSDT", id)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Price.Equal(dec("31000")); got != tc.applied {
				t.Fatalf("amend applied = %v (price %s), want %v", got, o.Price, tc.applied)
			}
		})
		t.Run("cancel_"+tc.name, func(t *testing.T) {
			ts.clearFaults(t)
			id := "gx-cancel-" + string(rune('a'+i))
			place(t, id)
			ts.fault(t, tc.fault, venue.PathOrderCancel, tc.extra)
			_, err := cl.CancelOrder(ctx, messages.CancelOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: id})
			if venue.ClassifyWrite(err) != tc.class || messages.CodeOf(err) != tc.code {
				t.Fatalf("class %s code %s: %v", venue.ClassifyWrite(err), messages.CodeOf(err), err)
			}
			if tc.fault == "delay" {
				time.Sleep(1500 * time.Millisecond)
			}
			if got := status(t, id).Status == "Cancelled"; got != tc.applied {
				t.Fatalf("cancel applied = %v, want %v", got, tc.applied)
			}
		})
	}

	t.Run("cancel_unknown_order_is_not_found", func(t *testing.T) {
		ts.clearFaults(t)
		_, err := c.CancelOrder(ctx, messages.CancelOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: "gx-never"})
		if venue.ClassifyWrite(err) != venue.WriteRefused || messages.CodeOf(err) != messages.CodeNotFound {
			t.Fatalf("%s %v", venue.ClassifyWrite(err), err)
		}
	})

	t.Run("accepted_and_applied", func(t *testing.T) {
		ts.clearFaults(t)
		id := "gx-applied"
		place(t, id)
		req := messages.AmendOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: id,
			Qty: decimal.NewNullDecimal(dec("0.02"))}
		if _, err := c.AmendOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
		o, _, err := c.OrderByLinkID(ctx, messages.CategoryLinear, "BTCUSDT", id)
		if err != nil {
			t.Fatal(err)
		}
		if r := venue.AmendResult(req, o); r.Status != messages.ChangeAmended || !r.FilledQty.Known {
			t.Fatalf("amend result %+v", r)
		}
		if _, err := c.CancelOrder(ctx, messages.CancelOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: id}); err != nil {
			t.Fatal(err)
		}
		o, where, err := c.OrderByLinkID(ctx, messages.CategoryLinear, "BTCUSDT", id)
		if err != nil {
			t.Fatal(err)
		}
		if r := venue.CancelResult(o); r.Status != messages.ChangeCancelled {
			t.Fatalf("cancel result %+v (found in %s)", r, where)
		}
	})
}

// With a visibility delay the venue accepts a change before it shows:
// the answer is *_requested and filled_qty unknown, never cancelled/0.
func TestAcceptedIsNotApplied(t *testing.T) {
	ts := startTradingSim(t, sim.Config{VisibilityDelay: time.Hour})
	c := ts.client(t, 2*time.Second)
	ctx := context.Background()
	id := "gx-slow"
	if _, err := c.CreateOrder(ctx, limitBuy(id)); err != nil {
		t.Fatal(err)
	}
	o, _, err := c.OrderByLinkID(ctx, messages.CategoryLinear, "BTCUSDT", id)
	if messages.CodeOf(err) != messages.CodeNotFound || o != nil {
		t.Fatalf("an order not yet applied was read back: %+v %v", o, err)
	}
	if f := venue.FilledOf(o); f.Known || f.String() != "unknown" {
		t.Fatalf("filled %s", f)
	}
	_, err = c.CancelOrder(ctx, messages.CancelOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderLinkID: id})
	if err != nil {
		t.Fatal(err)
	}
	r := venue.CancelResult(o)
	if r.Status != messages.ChangeCancelRequested || r.FilledQty.Known {
		t.Fatalf("cancel of an unapplied order reported %+v", r)
	}
	b, _ := json.Marshal(r.FilledQty)
	if string(b) != `"unknown"` {
		t.Fatalf("filled_qty JSON %s", b)
	}
	if got := ts.ordersFor(t, id); len(got) != 1 || got[0].Status != "Created" {
		t.Fatalf("simulator rows %+v", got)
	}
}

// SetLeverage: the same value again is 110043, a success that changed
// nothing. SetTradingStop on a position sets TP/SL; the same again is
// 34040, also "not modified".
func TestPositionWrites(t *testing.T) {
	ts := startTradingSim(t, sim.Config{})
	c := ts.client(t, 2*time.Second)
	ctx := context.Background()
	lev := messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Leverage: dec("5")}
	ack, err := c.SetLeverage(ctx, lev)
	if err != nil || !ack.Modified {
		t.Fatalf("first set-leverage: %+v %v", ack, err)
	}
	ack, err = c.SetLeverage(ctx, lev)
	if err != nil || ack.Modified {
		t.Fatalf("same leverage again: %+v %v", ack, err)
	}
	pos, err := c.Positions(ctx, venue.PositionQuery{Symbol: "BTCUSDT"})
	if err != nil || len(pos.Items) != 1 || !pos.Items[0].Leverage.Equal(dec("5")) {
		t.Fatalf("position after leverage %+v %v", pos.Items, err)
	}
	if _, err := c.SetLeverage(ctx, messages.SetLeverageRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Leverage: dec("1000")}); venue.ClassifyWrite(err) != venue.WriteRefused {
		t.Fatalf("leverage beyond the filter: %v", err)
	}

	if _, err := c.CreateOrder(ctx, messages.CreateOrderRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Buy",
		OrderType: "Market", Qty: dec("0.01"), OrderLinkID: "gx-pos"}); err != nil {
		t.Fatal(err)
	}
	tk, err := c.Ticker(ctx, messages.CategoryLinear, "BTCUSDT")
	if err != nil {
		t.Fatal(err)
	}
	sl := tk.LastPrice.Mul(dec("0.5")).Round(0)
	stop := messages.TradingStopRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", StopLoss: decimal.NewNullDecimal(sl)}
	if ack, err := c.SetTradingStop(ctx, stop); err != nil || !ack.Modified {
		t.Fatalf("trading stop: %+v %v", ack, err)
	}
	pos, err = c.Positions(ctx, venue.PositionQuery{Symbol: "BTCUSDT"})
	if err != nil || !pos.Items[0].StopLoss.Equal(sl) {
		t.Fatalf("stop loss not set: %+v %v", pos.Items, err)
	}
	if ack, err := c.SetTradingStop(ctx, stop); err != nil || ack.Modified {
		t.Fatalf("same trading stop again: %+v %v", ack, err)
	}
	if _, err := c.SetTradingStop(ctx, messages.TradingStopRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT"}); messages.CodeOf(err) != messages.CodeInvalidParams {
		t.Fatalf("empty trading stop: %v", err)
	}
}
