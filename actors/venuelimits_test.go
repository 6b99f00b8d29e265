package actors

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The rolling counters count each venue's orders against that venue's
// limits only; an order whose record names no venue (written before
// records named one) counts on every venue (D100).
func TestRollingCountersArePerVenue(t *testing.T) {
	now := time.Now()
	mark := func(env string, notional int64, ago time.Duration, confirmed bool) state.OrderMark {
		return state.OrderMark{At: now.Add(-ago), NotionalUSDT: decimal.NewFromInt(notional), RiskIncreasing: true, Rated: true, Confirmed: confirmed, Environment: env}
	}
	c := state.RollingCounters{Orders: []state.OrderMark{
		mark("paper", 400, 2*time.Hour, false),
		mark("", 50, 30*time.Minute, false),
		mark("bybit-demo", 100, 20*time.Minute, true),
		mark("paper", 300, 10*time.Second, false),
		mark("bybit-demo", 70, 5*time.Second, false),
	}}
	for _, tc := range []struct {
		env                string
		daily              string
		perMinute, perHour int
	}{
		{"paper", "750", 1, 2},
		{"bybit-demo", "220", 1, 2},
		{"bybit-testnet", "50", 0, 1},
	} {
		daily, perMinute, perHour := c.Window(now, tc.env)
		if daily.String() != tc.daily || perMinute != tc.perMinute || perHour != tc.perHour {
			t.Errorf("%s: daily %s, %d a minute, %d unconfirmed an hour; want %s, %d, %d", tc.env, daily, perMinute, perHour, tc.daily, tc.perMinute, tc.perHour)
		}
	}
}

// The day's realised PnL is journaled per venue and replayed per venue: a
// record of another venue neither replaces nor, when it counts other
// positions the same day, refuses start; a record that names no venue
// stands for a venue without one of its own (D100).
func TestDailyPnlIsReplayedPerVenue(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "vera"}, messages.ActorCLIAdmin)
	day := time.Now().UTC().Format(time.DateOnly)
	row := func(symbol, realised string) messages.DailyPnlRow {
		return messages.DailyPnlRow{Category: messages.CategoryLinear, Symbol: symbol, CumRealisedPnl: decimal.RequireFromString(realised),
			RealisedUSDT: decimal.RequireFromString(realised)}
	}
	now := time.Now().UTC()
	for _, ev := range []messages.DailyPnlEvent{
		{Day: day, Rows: []messages.DailyPnlRow{row("SOLUSDT", "-5")}},
		{Day: day, Environment: "paper", Rows: []messages.DailyPnlRow{row("BTCUSDT", "-40")}},
		{Day: day, Environment: "bybit-demo", Rows: []messages.DailyPnlRow{row("ETHUSDT", "-7")}},
	} {
		payload, _ := json.Marshal(ev)
		if _, err := ts.log.Append([]wal.Entry{{Time: now, Type: uint16(messages.RecordDailyPnlNoted), User: "vera", Actor: messages.ActorSystem, Payload: payload}}); err != nil {
			t.Fatal(err)
		}
	}
	ts.stop()
	replay := NewUserReplay()
	l, _, err := wal.Open(dir, wal.Options{OnRecord: replay.OnRecord})
	if err != nil {
		t.Fatalf("a venue's record after another venue's refused start: %v", err)
	}
	defer l.Close()
	states, err := replay.states(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st := states["vera"]
	for env, want := range map[string]string{"paper": "BTCUSDT", "bybit-demo": "ETHUSDT", "bybit-testnet": "SOLUSDT"} {
		if got := st.DailyPnlOn(env); len(got.Rows) != 1 || got.Rows[0].Symbol != want {
			t.Errorf("%s: the day's count %+v, want %s's row", env, got, want)
		}
	}
}

// Through the real system and journal: orders on paper use up paper's
// daily cap; the same server restarted on another venue (GX_VENUE: the
// process's Venue and Environment) shows and applies a fresh cap there,
// and restarted on paper again shows paper's numbers as before (D100).
func TestDailyCapBelongsToTheVenue(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	limits := messages.PolicySettings{MaxLeverage: dec("10"), DailyNotionalCapUSDT: dec("1000"), MaxOrderNotionalUSDT: dec("400")}
	te.tradeReady(t, limits)
	for i, p := range []string{"30000", "30000.1"} {
		if _, e := te.place(t, limitArgs("0.012", p)); e != nil {
			t.Fatalf("order %d on paper: %v", i, e)
		}
	}
	if _, e := te.place(t, limitArgs("0.012", "30000.3")); e == nil || e.Details["limit"] != "daily_notional_cap_usdt" {
		t.Fatalf("third order on paper past the cap: %v", e)
	}
	paper := postureOf(t, te.testSystem, te.user)
	if paper.Venue != "paper" || paper.Limits["daily_notional_cap_usdt"].Used != "720.0012" || paper.Limits["max_orders_per_minute"].Used != "2" {
		t.Fatalf("paper's posture %+v", paper)
	}

	// The same server, restarted on the demo venue (the simulator stands
	// in for it), with a key of its own.
	te.stop()
	te.configure = func(c *Config) { c.Environment, c.Venue = "bybit-demo", messages.VenueDemo }
	te.testSystem = te.start(t, dir)
	te.tradeReady(t, messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo)}.Merge(limits))
	if _, err := te.Handle(context.Background(), &messages.AddCredentialRequest{User: te.user, Environment: "bybit-demo",
		APIKey: te.ann.APIKey, APISecret: messages.NewSecret(te.ann.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	demo := postureOf(t, te.testSystem, te.user)
	if demo.Venue != "bybit-demo" || demo.Limits["daily_notional_cap_usdt"].Used != "0" || demo.Limits["daily_notional_cap_usdt"].Left != "1000" ||
		demo.Limits["max_orders_per_minute"].Used != "0" {
		t.Fatalf("demo's posture after paper's orders %+v", demo)
	}
	if _, e := te.place(t, limitArgs("0.012", "30000.3")); e != nil {
		t.Fatalf("an order on demo refused by paper's use: %v", e)
	}

	// Back on paper: paper's numbers are what they were.
	te.stop()
	te.configure = nil
	te.testSystem = te.start(t, dir)
	again := postureOf(t, te.testSystem, te.user)
	if again.Venue != "paper" || again.Limits["daily_notional_cap_usdt"] != paper.Limits["daily_notional_cap_usdt"] ||
		again.Limits["max_orders_per_minute"] != paper.Limits["max_orders_per_minute"] {
		t.Fatalf("paper's posture after a day on demo %+v, before %+v", again, paper)
	}
	if _, e := te.place(t, limitArgs("0.012", "30000.4")); e == nil || e.Details["limit"] != "daily_notional_cap_usdt" {
		t.Fatalf("paper's cap after demo's order: %v", e)
	}
}

// The safety net for identical keyless orders belongs to a venue too: the
// same order sent again within its window, after the server moved from
// paper to demo, is a new order on demo, not paper's answer replayed.
func TestSafetyNetBelongsToTheVenue(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{MaxLeverage: dec("10")})
	first, e := te.place(t, limitArgs("0.012", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	if again, e := te.place(t, limitArgs("0.012", "30000")); e != nil || again.ClientOrderID != first.ClientOrderID {
		t.Fatalf("the same order again on paper is not the safety net's repeat: %+v %v", again, e)
	}

	te.stop()
	te.configure = func(c *Config) { c.Environment, c.Venue = "bybit-demo", messages.VenueDemo }
	te.testSystem = te.start(t, dir)
	te.tradeReady(t, messages.PolicySettings{VenueCeiling: venueLevel(messages.VenueDemo), MaxLeverage: dec("10")})
	if _, err := te.Handle(context.Background(), &messages.AddCredentialRequest{User: te.user, Environment: "bybit-demo",
		APIKey: te.ann.APIKey, APISecret: messages.NewSecret(te.ann.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	onDemo, e := te.place(t, limitArgs("0.012", "30000"))
	if e != nil {
		t.Fatal(e)
	}
	if onDemo.ClientOrderID == first.ClientOrderID {
		t.Fatalf("the order on demo was answered with paper's order %s", first.ClientOrderID)
	}
}
