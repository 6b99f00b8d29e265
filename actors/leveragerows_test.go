package actors

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// extraRowProxy is a hostile venue in front of the simulator: every
// position list it passes on ends with a copy of each row changed by
// extra, as if the symbol had a second position row. With swallow, a
// set-leverage write is answered "OK" and never reaches the simulator.
func extraRowProxy(t *testing.T, target string, swallow bool, extra func(row map[string]any)) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != "/v5/position/list" {
			return nil
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		var env map[string]any
		if json.Unmarshal(raw, &env) == nil {
			if res, ok := env["result"].(map[string]any); ok {
				list, _ := res["list"].([]any)
				for _, it := range list {
					row, ok := it.(map[string]any)
					if !ok {
						continue
					}
					cp := map[string]any{}
					for k, v := range row {
						cp[k] = v
					}
					extra(cp)
					list = append(list, cp)
				}
				res["list"] = list
				raw, _ = json.Marshal(env)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		r.ContentLength = int64(len(raw))
		r.Header.Set("Content-Length", strconv.Itoa(len(raw)))
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if swallow && r.URL.Path == "/v5/position/set-leverage" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"retCode":0,"retMsg":"OK","result":{},"retExtInfo":{},"time":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `}`))
			return
		}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// behindProxy restarts te's system with its REST calls going to rest.
func (te *tradeEnv) behindProxy(t *testing.T, rest string) {
	t.Helper()
	te.client = func(c *venue.Config) { c.BaseURL = rest }
	te.stop()
	te.testSystem = te.start(t, te.dir)
}

// refusedNamingSetLeverage checks that an order on BTCUSDT under a
// max_leverage of 5 was refused naming set_leverage and the value, that
// nothing was sent, and that the account keeps its 10x.
func (te *tradeEnv) refusedNamingSetLeverage(t *testing.T, e *messages.Error) {
	t.Helper()
	if e == nil || e.Code != messages.CodeLimitExceeded || e.Details["limit"] != "max_leverage" ||
		e.Details["fix"] != `set_leverage {"category":"linear","symbol":"BTCUSDT","leverage":"5"}` {
		t.Fatalf("want max_leverage naming set_leverage to 5: %v", e)
	}
	for _, a := range attemptsOf(t, te.dir) {
		t.Fatalf("something was sent: %+v", a)
	}
	if lev, _ := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("leverage %s, want the 10 the account had", lev)
	}
}

// A venue that shows the symbol's open position and then a flat row of
// the same symbol does not get the leverage lowered under the open
// position: the row with a position open is the one decided on, so the
// order is refused naming set_leverage and nothing is sent.
func TestLeverageStepNotTakenWhenAnyRowIsOpen(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.behindProxy(t, extraRowProxy(t, te.ann.REST, false, func(row map[string]any) {
		row["size"], row["side"], row["avgPrice"], row["positionValue"], row["unrealisedPnl"] = "0", "", "0", "0", "0"
	}))
	te.openOutside(t, "0.002")
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	_, e := te.place(t, marketArgs("Buy", "0.001"))
	te.refusedNamingSetLeverage(t, e)
	if _, size := te.venueLeverage(t); size.String() != "0.002" {
		t.Fatalf("size %s; want the 0.002 the human had", size)
	}
}

// A venue that shows a second row of the symbol at a lower leverage, and
// answers the lower leverage "OK" without applying it, does not get an
// order sent at the leverage it never lowered: the step is decided on
// the higher leverage shown, and it has taken effect only when every row
// of the symbol shows the lower one. Here none does, so the call answers
// the step's error and sends no order.
func TestLeverageStepTakesEffectOnlyWhenEveryRowShowsIt(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.behindProxy(t, extraRowProxy(t, te.ann.REST, true, func(row map[string]any) { row["leverage"] = "5" }))
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	_, e := te.place(t, marketArgs("Buy", "0.001"))
	if e == nil || e.Details["step"] != risk.ToolLeverage || e.Details["order_sent"] != false {
		t.Fatalf("an order on a venue that shows a lower leverage it never set: %v", e)
	}
	for _, a := range attemptsOf(t, dir) {
		if a.Tool != risk.ToolLeverage {
			t.Fatalf("the order was sent: %+v", a)
		}
	}
	if lev, size := te.venueLeverage(t); !lev.Equal(decimal.NewFromInt(10)) || !size.IsZero() {
		t.Fatalf("leverage %s, size %s; want 10 and no position", lev, size)
	}
}

// A position the private stream shows and the REST read does not (yet)
// is a position open: the stream may make a decision stricter, never
// looser (D94). The order is refused naming set_leverage, and the
// leverage is not lowered under a position the stream just reported.
func TestLeverageStepNotTakenWhenTheStreamShowsAPosition(t *testing.T) {
	dir := t.TempDir()
	te, px := newHostileTradeEnv(t, dir, func(c *Config) { c.PositionPoll = time.Hour })
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	px.Inject(hostile.Push("position", hostile.Position(map[string]any{"side": "Buy", "size": "0.002", "entryPrice": "50000", "positionValue": "100"})))
	for deadline := time.Now().Add(10 * time.Second); len(postureOf(t, te.testSystem, te.user).Exposure.Positions) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pushed position never showed")
		}
	}
	_, e := te.place(t, marketArgs("Buy", "0.001"))
	te.refusedNamingSetLeverage(t, e)
}

// A repeat of the call while its leverage step is at the venue is told
// the order's client order id, the one the call answers with, not the
// step's: an agent that looks the order up by it finds it, instead of
// finding nothing and placing it again.
func TestRepeatDuringTheLeverageStepNamesTheOrder(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5")})
	te.delayFault(t, "/v5/position/set-leverage", 800)
	args := marketArgs("Buy", "0.001")
	args.IdempotencyKey = "during-step"
	type result struct {
		ans *messages.OrderAnswer
		e   *messages.Error
	}
	done := make(chan result, 1)
	go func() {
		ans, e := te.place(t, args)
		done <- result{ans, e}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if seen, _ := te.faultSeen(t, "/v5/position/set-leverage"); seen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the step never reached the venue")
		}
	}
	_, rep := te.place(t, args)
	first := <-done
	if first.e != nil || first.ans.LowersLeverage == nil {
		t.Fatalf("the first call: %+v %v", first.ans, first.e)
	}
	if rep == nil || rep.Details["reason"] != "in_progress" || rep.Details["client_order_id"] != first.ans.ClientOrderID {
		t.Fatalf("a repeat during the step: %v, want in_progress naming %s", rep, first.ans.ClientOrderID)
	}
}

// A policy that has a human confirm every set_leverage is not bypassed by
// the leverage step of an order no human confirms: the order is refused
// naming set_leverage (which then parks for the human), nothing is sent
// and the leverage stays. The dry run says the same.
func TestLeverageStepNeverSkipsTheConfirmationOfSetLeverage(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnvWith(t, dir, func(c *Config) { c.ConfirmCLI = true })
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("5"), ConfirmActions: strs(risk.ToolLeverage), ConfirmationTTLS: intp(60), MaxPending: intp(3)})
	dry := marketArgs("Buy", "0.001")
	dry.DryRun = true
	if plan, e := te.place(t, dry); e == nil || e.Details["limit"] != "max_leverage" {
		t.Fatalf("the dry run: %+v %v", plan, e)
	}
	_, e := te.place(t, marketArgs("Buy", "0.001"))
	te.refusedNamingSetLeverage(t, e)
}
