package sim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/shopspring/decimal"
)

// paperKey is the key the durable-state tests provision.
var paperKey = Key{APIKey: "PAPERKEYSTATE01234", APISecret: "paper-state-secret-0123456789abcdefg"}

// startDurable starts an in-process simulator on the state file path with
// the given id nonce and provisions paperKey with 10000 USDT (a stored
// account ignores it).
func startDurable(t *testing.T, path string, nonce uint64, clock *fakeClock) (*InProcessServer, *tradeSim) {
	t.Helper()
	p, err := StartInProcess(Config{Seed: 1, Now: clock.Now, StatePath: path, IDNonce: nonce})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := p.Sim().ProvisionKey(paperKey, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}); err != nil {
		t.Fatal(err)
	}
	return p, &tradeSim{t: t, s: p.Sim(), clock: clock, k: paperKey}
}

// restingBuyPrice is a BTCUSDT buy price inside the price band but below
// the book: the order rests at the clock's second.
func restingBuyPrice(ts *tradeSim) string {
	in := ts.s.catalog.get(catLinear, "BTCUSDT")
	last := ts.s.model.last(in, ts.clock.ms()/1000)
	return roundToTick(last.Mul(decimal.RequireFromString("0.995")), in.tick).String()
}

// An account's orders, fills, position (leverage, TP/SL, realised PnL) and
// wallet survive a restart of the simulator on the same state file; the
// leverage set before is still the leverage after; a new order gets an id
// never handed out before.
func TestDurableStateSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paper", "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 11, clock)
	resting := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"` + restingBuyPrice(ts) + `","orderLinkId":"rest-1"}`)
	mustOK(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"5","sellLeverage":"5"}`))
	filled := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1","orderLinkId":"fill-1"}`)
	mustOK(t, ts.post("/v5/position/trading-stop", `{"category":"linear","symbol":"ETHUSDT","positionIdx":0,"stopLoss":"1000"}`))
	spot := ts.create(`{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"50"}`)
	before, err := p.Sim().Account(paperKey.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	execsBefore := ts.executions("linear", filled)
	if len(before.OpenOrders) != 1 || len(before.Positions) != 1 || len(execsBefore) == 0 {
		t.Fatalf("before the restart: %+v, %d fills", before, len(execsBefore))
	}
	seen := map[string]bool{resting: true, filled: true, spot: true}
	p.Close()

	clock.Advance(2e9) // two seconds
	p2, ts2 := startDurable(t, path, 12, clock)
	after, err := p2.Sim().Account(paperKey.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalized(before), normalized(after)) {
		t.Fatalf("the account changed over the restart:\nbefore %+v\nafter  %+v", before, after)
	}
	wantField(t, "resting order", ts2.order("linear", resting), "orderLinkId", "rest-1")
	wantField(t, "filled order", ts2.order("linear", filled), "orderStatus", "Filled")
	if got := ts2.executions("linear", filled); !reflect.DeepEqual(got, execsBefore) {
		t.Fatalf("fills changed: %v, was %v", got, execsBefore)
	}
	pos := ts2.position("ETHUSDT")
	wantDec(t, "position", pos, "leverage", "5")
	wantDec(t, "position", pos, "stopLoss", "1000")
	wantCode(t, ts2.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"5","sellLeverage":"5"}`), codeLeverageSame)
	wantCode(t, ts2.post("/v5/order/create", `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"`+restingBuyPrice(ts2)+`","orderLinkId":"rest-1"}`), codeDuplicateLink)
	for range 3 {
		id := ts2.create(`{"category":"linear","symbol":"ETHUSDT","side":"Sell","orderType":"Market","qty":"0.01","reduceOnly":true}`)
		if seen[id] {
			t.Fatalf("order id %s handed out twice", id)
		}
		seen[id] = true
		for _, e := range ts2.executions("linear", id) {
			if x := field(t, e, "execId"); seen[x] {
				t.Fatalf("execution id %s handed out twice", x)
			}
		}
	}
}

// normalized drops the representation differences of decimals (1.0 vs 1)
// so two accounts compare by value.
func normalized(a PaperAccount) PaperAccount {
	n := func(d decimal.Decimal) decimal.Decimal { return decimal.RequireFromString(d.String()) }
	out := PaperAccount{Balances: map[string]decimal.Decimal{}}
	for c, v := range a.Balances {
		out.Balances[c] = n(v)
	}
	for _, o := range a.OpenOrders {
		o.Price, o.Qty, o.LeavesQty = n(o.Price), n(o.Qty), n(o.LeavesQty)
		out.OpenOrders = append(out.OpenOrders, o)
	}
	for _, p := range a.Positions {
		p.Size, p.AvgPrice, p.Leverage, p.TakeProfit, p.StopLoss, p.CumRealisedPnl = n(p.Size), n(p.AvgPrice), n(p.Leverage), n(p.TakeProfit), n(p.StopLoss), n(p.CumRealisedPnl)
		out.Positions = append(out.Positions, p)
	}
	return out
}

// The stored forms keep every field of an order, a fill and a position: a
// field added to the engine's structs without a stored twin fails here.
func TestStoredFormsKeepEveryField(t *testing.T) {
	for _, c := range []struct{ engine, stored any }{
		{simOrder{}, storedOrder{}}, {simExecution{}, storedExec{}}, {simPosition{}, storedPosition{}},
	} {
		e, s := reflect.TypeOf(c.engine), reflect.TypeOf(c.stored)
		if e.NumField() != s.NumField() {
			t.Fatalf("%s has %d fields, %s %d", e.Name(), e.NumField(), s.Name(), s.NumField())
		}
		for i := range e.NumField() {
			if !strings.EqualFold(e.Field(i).Name, s.Field(i).Name) {
				t.Fatalf("%s field %d is %s, %s has %s", e.Name(), i, e.Field(i).Name, s.Name(), s.Field(i).Name)
			}
		}
	}
}

// Two runs with the same seed but different id nonces hand out different
// order and execution ids; with no nonce the ids are the seed's own.
func TestIDNonceSeparatesRuns(t *testing.T) {
	ids := func(nonce uint64) (string, string) {
		clock := newClock(testNow)
		p, err := StartInProcess(Config{Seed: 1, Now: clock.Now, IDNonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Sim().ProvisionKey(paperKey, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}); err != nil {
			t.Fatal(err)
		}
		ts := &tradeSim{t: t, s: p.Sim(), clock: clock, k: paperKey}
		id := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`)
		return id, field(t, ts.executions("linear", id)[0], "execId")
	}
	o0, e0 := ids(0)
	o0b, e0b := ids(0)
	if o0 != o0b || e0 != e0b {
		t.Fatal("without a nonce the same seed gave different ids")
	}
	o1, e1 := ids(1)
	o2, e2 := ids(2)
	if o1 == o0 || o1 == o2 || e1 == e0 || e1 == e2 {
		t.Fatalf("nonces did not separate the ids: %s %s %s / %s %s %s", o0, o1, o2, e0, e1, e2)
	}
}

// A reset cancels the open orders (CancelByAdmin), closes the positions
// without a fill, forgets leverage, replaces the wallet and keeps the
// history; it survives a restart.
func TestResetAccount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 1, clock)
	resting := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"` + restingBuyPrice(ts) + `"}`)
	mustOK(t, ts.post("/v5/position/set-leverage", `{"category":"linear","symbol":"ETHUSDT","buyLeverage":"5","sellLeverage":"5"}`))
	filled := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`)
	if _, err := p.Sim().ResetAccount("unknown", nil); err != ErrUnknownKey {
		t.Fatalf("reset of an unknown key: %v", err)
	}
	lost, err := p.Sim().ResetAccount(paperKey.APIKey, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)})
	if err != nil {
		t.Fatal(err)
	}
	if len(lost.OpenOrders) != 1 || len(lost.Positions) != 1 || lost.Balances["USDT"].Equal(decimal.NewFromInt(10000)) {
		t.Fatalf("what the reset lost: %+v", lost)
	}
	check := func(ts *tradeSim) {
		t.Helper()
		o := ts.order("linear", resting)
		wantField(t, "reset order", o, "orderStatus", "Cancelled")
		wantField(t, "reset order", o, "cancelType", "CancelByAdmin")
		wantField(t, "filled order", ts.order("linear", filled), "orderStatus", "Filled")
		pos := ts.position("ETHUSDT")
		wantDec(t, "position", pos, "size", "0")
		wantDec(t, "position", pos, "leverage", "10")
		wantDec(t, "wallet", ts.coin("USDT"), "walletBalance", "10000")
	}
	check(ts)
	p.Close()
	_, ts2 := startDurable(t, path, 2, clock)
	check(ts2)
}

// A state file that cannot be written makes private requests answer
// 10016 (the change is not durable), and the next successful write
// clears it.
func TestDurableStateWriteFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "paper")
	path := filepath.Join(dir, "state.json")
	clock := newClock(testNow)
	_, ts := startDurable(t, path, 1, clock)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode(t, ts.post("/v5/order/create", `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`), codeInternal)
	wantCode(t, ts.get("/v5/order/realtime", url.Values{"category": {"linear"}}), codeInternal)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := do(t, ts.s, http.MethodPost, "/v5/order/create", []byte(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`),
		signedHeader(paperKey, clock.ms(), "5000", `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`))
	mustOK(t, r)
}

// The time the state file was not served is evaluated when it is opened
// again: a resting buy whose price the market touched only while the
// simulator was down is filled after the restart, at its own price.
func TestDowntimeIsEvaluated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 1, clock)
	in := ts.s.catalog.get(catLinear, "BTCUSDT")
	down := clock.ms() / 1000
	// A downtime whose lowest price is below the market at both ends: a
	// buy there rests before and after, and fills only in between.
	var gap int64
	var low decimal.Decimal
	for g := int64(30); g <= 600 && gap == 0; g++ {
		low = ts.s.model.last(in, down+1)
		for sec := down + 1; sec < down+g; sec++ {
			low = decimal.Min(low, ts.s.model.last(in, sec))
		}
		if ts.s.model.last(in, down).GreaterThan(low) && ts.s.model.last(in, down+g).GreaterThan(low) && ts.s.model.last(in, down+g+1).GreaterThan(low) {
			gap = g
		}
	}
	if gap == 0 {
		t.Fatal("no downtime of 30 to 600 s has its low inside")
	}
	id := ts.create(`{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"` + low.String() + `"}`)
	wantField(t, "before", ts.order("linear", id), "orderStatus", "New")
	p.Close()

	clock.Advance(time.Duration(gap) * time.Second)
	_, ts2 := startDurable(t, path, 2, clock)
	o := ts2.order("linear", id)
	wantField(t, "after the restart", o, "orderStatus", "Filled")
	wantDec(t, "after the restart", o, "avgPrice", low.String())
}

// A change whose state write failed is not pushed on the private stream:
// the server would journal a fill the simulator forgets in a crash. The
// pushes go out once a later write succeeds.
func TestDurableStateWriteFailureHoldsPushes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "paper")
	path := filepath.Join(dir, "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 1, clock)
	d := websocket.Dialer{NetDialContext: p.DialContext, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial(p.WSPrivateURL(), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	defer c.Close()
	sendWS(t, c, authMsg(paperKey, clock.ms()+5000, ""))
	if m, raw := readWS(t, c); string(m["success"]) != "true" {
		t.Fatalf("auth %s", raw)
	}
	sendWS(t, c, `{"op":"subscribe","args":["order"]}`)
	if m, raw := readWS(t, c); string(m["success"]) != "true" {
		t.Fatalf("subscribe %s", raw)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	order := `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1","orderLinkId":"held-1"}`
	wantCode(t, ts.post("/v5/order/create", order), codeInternal)
	// Pushes and answers share the connection's queue: a push of the
	// failed change would arrive before this pong.
	sendWS(t, c, `{"req_id":"after","op":"ping"}`)
	if m, raw := readWS(t, c); str(m["op"]) != "pong" {
		t.Fatalf("a change that is not on disk was pushed: %s", raw)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mustOK(t, ts.get("/v5/order/realtime", url.Values{"category": {"linear"}, "settleCoin": {"USDT"}}))
	m, raw := readWS(t, c)
	if str(m["topic"]) != "order" || !strings.Contains(string(raw), "held-1") {
		t.Fatalf("the held push did not follow the successful write: %s", raw)
	}
}

// A reset is in the transaction log, as a wallet movement of its own
// (TRANSFER_IN or TRANSFER_OUT to the opening wallet), and ends the
// positions it closed: every row's cashBalance follows from the opening
// wallet, the position size after a later fill counts from flat, and the
// closed PnL of a later round trip charges only its own opening fee. It
// survives a restart.
func TestResetIsInTheTransactionLogAndClosedPnl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clock := newClock(testNow)
	opening := decimal.NewFromInt(10000)
	p, ts := startDurable(t, path, 1, clock)
	ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`)
	clock.Advance(40 * time.Minute)
	if _, err := p.Sim().ResetAccount(paperKey.APIKey, map[string]decimal.Decimal{"USDT": opening}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(40 * time.Minute)
	open := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`)
	clock.Advance(40 * time.Minute)
	closing := ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Sell","orderType":"Market","qty":"0.1"}`)
	clock.Advance(time.Second)
	openFee := dec(t, ts.executions("linear", open)[0]["execFee"])

	check := func(ts *tradeSim) []map[string]json.RawMessage {
		t.Helper()
		log := listOf(t, ts.get("/v5/account/transaction-log", url.Values{"accountType": {"UNIFIED"}, "currency": {"USDT"}}))
		if len(log) != 4 {
			t.Fatalf("transaction log has %d rows, want 3 fills and the reset: %v", len(log), log)
		}
		if typ := jstr(t, log[2]["type"]); typ != "TRANSFER_IN" {
			t.Errorf("the reset's row is %s: %v", typ, log[2])
		}
		balance := opening
		for i := len(log) - 1; i >= 0; i-- {
			balance = balance.Add(dec(t, log[i]["change"]))
			if got := dec(t, log[i]["cashBalance"]); !got.Equal(balance) {
				t.Errorf("row %d (%s): cashBalance %s, want %s from the opening wallet", i, log[i]["type"], got, balance)
			}
		}
		if wallet := dec(t, ts.coin("USDT")["walletBalance"]); !balance.Equal(wallet) {
			t.Errorf("the log ends at %s, the wallet is %s", balance, wallet)
		}
		if size := jstr(t, log[1]["size"]); jstr(t, log[1]["orderId"]) != open || size != "0.10" {
			t.Errorf("position after the fill after the reset: %s, want 0.10 (%v)", size, log[1])
		}
		rows := listOf(t, ts.get("/v5/position/closed-pnl", url.Values{"category": {"linear"}}))
		if len(rows) != 1 || jstr(t, rows[0]["orderId"]) != closing {
			t.Fatalf("closed pnl %v, want the closing order after the reset", rows)
		}
		if got := dec(t, rows[0]["openFee"]); !got.Equal(openFee) {
			t.Errorf("openFee %s, want the fee of the order it closed (%s)", got, openFee)
		}
		return log
	}
	before := check(ts)
	p.Close()
	_, ts2 := startDurable(t, path, 2, clock)
	if after := check(ts2); !reflect.DeepEqual(after, before) {
		t.Errorf("the transaction log changed over a restart:\n%v\n%v", before, after)
	}
}

// A reset closes positions without a fill, so it realises nothing: a
// position's cumRealisedPnl stays what it was. The server counts the day's
// realised PnL as the move of that value (actors/posturecache.go); a reset
// that zeroed it would show a loss, or hide one, that no trade made.
func TestResetKeepsRealisedPnl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 1, clock)
	ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.2"}`)
	clock.Advance(40 * time.Minute)
	ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Sell","orderType":"Market","qty":"0.1","reduceOnly":true}`)
	realised := dec(t, ts.position("ETHUSDT")["cumRealisedPnl"])
	if realised.IsZero() {
		t.Fatal("the partial close realised nothing")
	}
	if _, err := p.Sim().ResetAccount(paperKey.APIKey, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}); err != nil {
		t.Fatal(err)
	}
	pos := ts.position("ETHUSDT")
	wantDec(t, "position", pos, "size", "0")
	if got := dec(t, pos["cumRealisedPnl"]); !got.Equal(realised) {
		t.Fatalf("cumRealisedPnl after the reset %s, was %s", got, realised)
	}
}

// The state file names accounts by the SHA-256 of their key: neither the
// key nor its secret is written, and only the owner may read the file
// and its directory.
func TestStateFileHoldsNoSecrets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "paper")
	path := filepath.Join(dir, "state.json")
	clock := newClock(testNow)
	_, ts := startDurable(t, path, 1, clock)
	ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), paperKey.APIKey) || strings.Contains(string(b), paperKey.APISecret) {
		t.Fatal("the state file holds the API key or its secret")
	}
	if !strings.Contains(string(b), keyHash(paperKey.APIKey)) {
		t.Fatal("the state file does not name the account by its key's hash")
	}
	for name, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", name, got, want)
		}
	}
}

// Two accounts never share a uid, so never an id: an account opened while
// a stored account is parked (its key not provisioned in this run) does
// not take the parked account's uid, and both trading in a later run hand
// out different order and execution ids.
func TestNewAccountAvoidsStoredUIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clock := newClock(testNow)
	other := Key{APIKey: "PAPERKEYSTATE99999", APISecret: "paper-state-secret-other-0123456789"}
	wallet := map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}
	uidOf := func(s *Sim, k Key) int64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.keys[k.APIKey].acct.uid
	}
	market := `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.01"}`

	// Run 1: paperKey's account trades.
	p, ts := startDurable(t, path, 1, clock)
	first := uidOf(p.Sim(), paperKey)
	ts.create(market)
	p.Close()

	// Run 2: only the other key is provisioned; paperKey's account is
	// parked in the file.
	p2, err := StartInProcess(Config{Seed: 1, Now: clock.Now, StatePath: path, IDNonce: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Sim().ProvisionKey(other, wallet); err != nil {
		t.Fatal(err)
	}
	if got := uidOf(p2.Sim(), other); got == first {
		t.Fatalf("the new account took the parked account's uid %d", got)
	}
	p2.Close()

	// Run 3: both trade; no id is handed out twice.
	p3, err := StartInProcess(Config{Seed: 1, Now: clock.Now, StatePath: path, IDNonce: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p3.Close() })
	for _, k := range []Key{other, paperKey} {
		if _, err := p3.Sim().ProvisionKey(k, wallet); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := uidOf(p3.Sim(), paperKey), uidOf(p3.Sim(), other); a == b {
		t.Fatalf("two accounts share uid %d", a)
	}
	seen := map[string]bool{}
	for range 8 {
		for _, k := range []Key{paperKey, other} {
			tk := &tradeSim{t: t, s: p3.Sim(), clock: clock, k: k}
			id := tk.create(market)
			ids := []string{id}
			for _, e := range tk.executions("linear", id) {
				ids = append(ids, field(t, e, "execId"))
			}
			for _, x := range ids {
				if seen[x] {
					t.Fatalf("id %s handed out twice", x)
				}
				seen[x] = true
			}
		}
	}
}

// A temporary file a crash left behind in the middle of a write is removed
// when the state file is opened again; the state file itself is read.
func TestStaleTemporaryStateFilesAreRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "paper")
	path := filepath.Join(dir, "state.json")
	clock := newClock(testNow)
	p, ts := startDurable(t, path, 1, clock)
	ts.create(`{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Market","qty":"0.1"}`)
	p.Close()
	stale := filepath.Join(dir, ".state-12345.tmp")
	if err := os.WriteFile(stale, []byte(`{"version":1,"acc`), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ts2 := startDurable(t, path, 2, clock)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale temporary file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file that is not the state's own was removed: %v", err)
	}
	wantDec(t, "position", ts2.position("ETHUSDT"), "size", "0.1")
}
