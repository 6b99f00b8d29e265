package actors

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

func num(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func linPos(symbol string, idx int, size, cum, upl string) messages.Position {
	side := "Buy" // one-way mode (0) and a hedge's buy leg (1)
	if idx == 2 {
		side = "Sell"
	}
	return messages.Position{Category: messages.CategoryLinear, Symbol: symbol, PositionIdx: idx, Side: side, Size: num(size), CumRealisedPnl: num(cum), UnrealisedPnl: num(upl)}
}

func wantLoss(t *testing.T, c *streamCache, now time.Time, want string) {
	t.Helper()
	if got := c.dailyLoss(now); !got.Equal(num(want)) {
		t.Fatalf("daily loss %s, want %s", got, want)
	}
}

// The day's realised PnL of a position is its cumulative realised PnL's
// move since the day's first sight: a fill's loss counts (at once when
// pushed), a later gain offsets it once a REST read confirms it, a flat
// row's value stays counted, and a new UTC day starts from zero.
func TestDailyLossCountsTheDaysRealisedMove(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	c.seed(nil, []messages.Position{linPos("BTCUSDT", 0, "0.01", "-100", "-3")}, now)
	wantLoss(t, c, now, "3") // yesterday's -100 is not today's
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("BTCUSDT", 0, "0", "-180", "0")}}, now)
	wantLoss(t, c, now, "80")
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("BTCUSDT", 0, "0.01", "-150", "2")}}, now)
	wantLoss(t, c, now, "80") // a pushed gain waits for REST
	c.seed(nil, []messages.Position{linPos("BTCUSDT", 0, "0.01", "-150", "2")}, now)
	wantLoss(t, c, now, "48")
	// A full positions read that no longer lists the flat row forgets nothing.
	c.seed(nil, []messages.Position{}, now)
	wantLoss(t, c, now, "48")
	next := now.Add(24 * time.Hour)
	wantLoss(t, c, next, "-2")
	ev, _, ok := c.pendingDay(next)
	if !ok || ev.Day != "2026-12-02" || len(ev.Rows) != 1 || !ev.Rows[0].RealisedUSDT.IsZero() || !ev.Rows[0].CumRealisedPnl.Equal(num("-150")) {
		t.Fatalf("the new day's count to journal: %+v %v", ev, ok)
	}
}

// In hedge mode a symbol has two positions (positionIdx 1 and 2): each is
// counted, neither overwrites the other.
func TestDailyLossCountsBothHedgeLegs(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	c.seed(nil, []messages.Position{linPos("BTCUSDT", 1, "0.01", "0", "-5"), linPos("BTCUSDT", 2, "0.01", "0", "-7")}, now)
	wantLoss(t, c, now, "12")
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("BTCUSDT", 1, "0", "-20", "0")}}, now)
	wantLoss(t, c, now, "27")
	if got := c.exposure(func(string) string { return "" }, 6); len(got.Positions) != 1 {
		t.Fatalf("open positions %+v, want the Sell leg only", got.Positions)
	}
}

// A restart restores the day's count as journaled: a position never seen
// again keeps its loss, a loss realised while the server was down counts,
// and a value that fell back toward zero (a paper venue that restarted)
// does not erase the loss: fail closed. A record of an earlier day counts
// nothing; the count is journaled again only when it changes.
func TestDailyLossRestoredAfterARestart(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	noted := messages.DailyPnlEvent{Day: "2026-12-01", Rows: []messages.DailyPnlRow{
		{Category: messages.CategoryLinear, Symbol: "BTCUSDT", CumRealisedPnl: num("-80"), RealisedUSDT: num("-80")},
		{Category: messages.CategoryLinear, Symbol: "ETHUSDT", CumRealisedPnl: num("-30"), RealisedUSDT: num("-10")},
		{Category: messages.CategoryLinear, Symbol: "SOLUSDT", CumRealisedPnl: num("5"), RealisedUSDT: num("-1")},
	}}
	cases := []struct {
		name string
		seen []messages.Position
		want string
	}{
		{"nothing seen again", nil, "91"},
		{"seen unchanged", []messages.Position{linPos("BTCUSDT", 0, "0", "-80", "0"), linPos("ETHUSDT", 0, "0", "-30", "0")}, "91"},
		{"a loss realised while down", []messages.Position{linPos("BTCUSDT", 0, "0", "-95", "0")}, "106"},
		{"the venue forgot the value", []messages.Position{linPos("BTCUSDT", 0, "0", "0", "0"), linPos("ETHUSDT", 0, "0", "0", "0")}, "91"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newStreamCache()
			c.restoreDay(noted, now)
			if _, _, ok := c.pendingDay(now); ok {
				t.Fatal("a restored count is journaled again unchanged")
			}
			if tc.seen != nil {
				c.seed(nil, tc.seen, now)
			}
			wantLoss(t, c, now, tc.want)
			if tc.seen == nil {
				return
			}
			ev, version, ok := c.pendingDay(now)
			if !ok || len(ev.Rows) != 3 {
				t.Fatalf("count to journal after a sight: %+v %v", ev, ok)
			}
			// What is journaled restores to the same loss.
			again := newStreamCache()
			again.restoreDay(ev, now)
			wantLoss(t, again, now, tc.want)
			c.notedDay(ev, version)
			if _, _, ok := c.pendingDay(now); ok {
				t.Fatal("a journaled count is journaled again")
			}
		})
	}
	c := newStreamCache()
	c.restoreDay(messages.DailyPnlEvent{Day: "2026-11-30", Rows: noted.Rows}, now)
	wantLoss(t, c, now, "0")
}

// What the stream pushes may make the day's loss larger at once, never
// smaller: a pushed gain (a forged flat row with a realised gain of
// 1,000,000, on the traded symbol or on one the account never traded)
// counts nothing until a REST read shows it, and a pushed loss that a
// REST read does not show is dropped at that read. Only what REST
// confirmed is journaled (daily_pnl_noted), so no pushed figure survives
// a restart.
func TestStreamCannotLoosenTheDaysLoss(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	push := func(c *streamCache, p messages.Position) {
		c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{p}}, now)
	}
	c := newStreamCache()
	c.seed(nil, []messages.Position{linPos("BTCUSDT", 0, "0.01", "-100", "-30")}, now)
	wantLoss(t, c, now, "30")
	push(c, linPos("BTCUSDT", 0, "0", "-180", "0")) // a real close at a loss
	wantLoss(t, c, now, "80")
	push(c, linPos("BTCUSDT", 0, "0", "1000000", "0"))
	push(c, linPos("ETHUSDT", 0, "0", "0", "0"))
	push(c, linPos("ETHUSDT", 0, "0", "1000000", "0"))
	wantLoss(t, c, now, "80")
	if ev, _, ok := c.pendingDay(now); !ok || len(ev.Rows) != 1 || !ev.Rows[0].RealisedUSDT.IsZero() {
		t.Fatalf("journaled before REST confirmed: %+v", ev)
	}
	// REST confirms the close; the flat ETHUSDT row the account never
	// traded counts nothing, even as REST shows it.
	c.polled([]messages.Position{linPos("BTCUSDT", 0, "0", "-180", "0"), linPos("ETHUSDT", 0, "0", "0", "0")}, now)
	c.polled([]messages.Position{linPos("ETHUSDT", 0, "0", "1000000", "0")}, now)
	wantLoss(t, c, now, "80")
	// A forged loss counts at once, and is gone at the next REST read.
	push(c, linPos("BTCUSDT", 0, "0", "-1000000", "0"))
	wantLoss(t, c, now, "999900")
	ev, _, ok := c.pendingDay(now)
	if !ok || len(ev.Rows) != 1 || ev.Rows[0].Symbol != "BTCUSDT" || !ev.Rows[0].RealisedUSDT.Equal(num("-80")) {
		t.Fatalf("the count to journal is not REST's: %+v %v", ev, ok)
	}
	c.polled([]messages.Position{linPos("BTCUSDT", 0, "0", "-180", "0")}, now)
	wantLoss(t, c, now, "80")
	again := newStreamCache()
	again.restoreDay(ev, now)
	wantLoss(t, again, now, "80")
}

// get_posture stays within 2 KB whatever the venue's figures: with six
// positions whose every decimal is as long as the parser lets through,
// positions are left out (counted in more_positions) until it fits.
func TestPostureAnswerIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	big := "-" + strings.Repeat("9", 24) + "." + strings.Repeat("9", 18)
	var rows []messages.Position
	for i := range 6 {
		p := linPos("A"+strings.Repeat("B", 26)+string(rune('A'+i))+"USDT"[:2], 0, strings.Repeat("9", 24)+"."+strings.Repeat("9", 18), big, big)
		p.MarkPrice = num(strings.Repeat("9", 24) + "." + strings.Repeat("9", 18))
		rows = append(rows, p)
	}
	c.seed(nil, rows, now)
	v := &messages.PostureView{User: strings.Repeat("u", 32), Venue: "bybit-mainnet", State: messages.PostureReducing, Why: []string{"kill_switch_admin", "daily_loss"},
		Limits: map[string]messages.LimitUse{"daily_notional_cap_usdt": {Used: big, Left: big}}, Loss: messages.DailyLoss{LossUSDT: c.dailyLoss(now), MaxUSDT: num(big)},
		Exposure: c.exposure(func(string) string { return messages.OriginSystem }, maxPosturePositions)}
	boundPosture(v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxPostureBytes || v.Exposure.More == 0 || len(v.Exposure.Positions)+v.Exposure.More != 6 {
		t.Fatalf("posture of %d bytes, %d positions shown and %d more", len(b), len(v.Exposure.Positions), v.Exposure.More)
	}
}

// A pushed position that a REST read of its symbol does not list is not
// there: a forged open position's unrealised loss counts at once, and is
// gone once the read answers without it.
func TestPushedPositionAbsentFromRESTIsDropped(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("SOLUSDT", 0, "10", "0", "-1000000")}}, now)
	wantLoss(t, c, now, "1000000")
	if got := c.vanished(nil); len(got) != 1 || got[0] != "SOLUSDT" {
		t.Fatalf("symbols to read by REST: %v, want SOLUSDT", got)
	}
	c.absentIn(messages.CategoryLinear, "SOLUSDT", nil)
	wantLoss(t, c, now, "0")
	if x := c.exposure(func(string) string { return "" }, 6); len(x.Positions) != 0 {
		t.Fatalf("a position REST does not list is still shown: %+v", x.Positions)
	}
}

// Position rows apply only for instruments the venue lists: a row waits
// for the look-up, a listed one applies, one not listed is dropped, and a
// REST read's row keeps waiting while the venue cannot answer (its loss
// counts meanwhile).
func TestPositionRowsWaitForTheListing(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	answers := map[string]error{"ETHUSDT": nil, "FAKEUSDT": nil, "SOLUSDT": errors.New("venue down")}
	c.setListing(func(_ context.Context, _ messages.Category, symbol string) (bool, error) {
		return symbol == "ETHUSDT" || symbol == "SOLUSDT", answers[symbol]
	})
	c.seed(nil, []messages.Position{linPos("ETHUSDT", 0, "1", "0", "-10"), linPos("SOLUSDT", 0, "1", "0", "-20")}, now)
	c.note(messages.StreamEvent{Kind: messages.StreamPositions, Positions: []messages.Position{linPos("FAKEUSDT", 0, "1", "0", "-30")}}, now)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		_, fakeHeld := c.held[posKey(messages.CategoryLinear, "FAKEUSDT", 0)]
		_, ethHeld := c.held[posKey(messages.CategoryLinear, "ETHUSDT", 0)]
		_, solHeld := c.held[posKey(messages.CategoryLinear, "SOLUSDT", 0)]
		c.mu.Unlock()
		if !fakeHeld && !ethHeld && solHeld {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("held: FAKEUSDT %v ETHUSDT %v SOLUSDT %v", fakeHeld, ethHeld, solHeld)
		}
		time.Sleep(10 * time.Millisecond)
	}
	x := c.exposure(func(string) string { return "" }, 6)
	if len(x.Positions) != 1 || x.Positions[0].Symbol != "ETHUSDT" || x.Known {
		t.Fatalf("exposure %+v: want ETHUSDT only, not known while SOLUSDT's read waits", x)
	}
	wantLoss(t, c, now, "30")
}

// A REST read of the open orders may be taken before pushes that arrive
// while it runs: an order created and one closed meanwhile keep their
// pushed state when the read replaces the cached orders.
func TestOrdersPushedDuringASeedAreNotLost(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newStreamCache()
	c.seed([]messages.Order{pushedOrder("old", "gx-1", "New")}, nil, now)
	c.beginSeed()
	c.note(messages.StreamEvent{Kind: messages.StreamOrders, Orders: []messages.Order{pushedOrder("new", "gx-2", "New")}}, now)
	c.note(messages.StreamEvent{Kind: messages.StreamOrders, Orders: []messages.Order{pushedOrder("old", "gx-1", "Cancelled")}}, now)
	c.seed([]messages.Order{pushedOrder("old", "gx-1", "New")}, nil, now) // read before both pushes
	byLink := func(link string) string {                                  // gx-2 is the new order, gx-1 the cancelled one
		if link == "gx-2" {
			return messages.OriginSystem
		}
		return messages.OriginExternal
	}
	exp := c.exposure(byLink, 10)
	if exp.Orders[messages.OriginSystem].Count != 1 || exp.Orders[messages.OriginExternal].Count != 0 {
		t.Fatalf("open orders after the seed %+v, want only the one created while it ran", exp.Orders)
	}
	// A later read applies alone: nothing pushed since it began.
	c.beginSeed()
	c.seed([]messages.Order{}, nil, now)
	if got := c.exposure(func(string) string { return messages.OriginSystem }, 10).Orders[messages.OriginSystem].Count; got != 0 {
		t.Fatalf("%d open orders after an empty read, want 0", got)
	}
}
