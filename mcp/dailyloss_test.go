package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/internal/testkit"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// lossStack is a posture stack over one simulator and one journal
// directory that can be stopped and started again, as a serve restart.
type lossStack struct {
	srv       *testkit.Sim
	dir       string
	masterKey []byte
	// streamURL is the private stream to open (empty: the simulator's).
	streamURL string
	// environment and venue are the venue the server serves (empty:
	// paper).
	environment string
	venue       messages.VenueLevel
}

func newLossStack(t *testing.T) *lossStack {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return &lossStack{srv: testkit.StartSim(t, testkit.SimOptions{}), dir: t.TempDir(), masterKey: key}
}

// start replays the journal and starts the actor system over it.
func (s *lossStack) start(t *testing.T) *env {
	t.Helper()
	return envOf(testkit.Start(t, testkit.Options{
		Sim: s.srv, Dir: s.dir, MasterKey: s.masterKey, WatchDisk: true,
		StreamVia: func(simWS string) string {
			if s.streamURL != "" {
				return s.streamURL
			}
			return simWS
		},
		StreamPing: 200 * time.Millisecond, StreamBackoff: 200 * time.Millisecond,
		Configure: func(c *actors.Config) {
			if s.environment != "" {
				c.Environment, c.Venue = s.environment, s.venue
			}
			c.PostureEvery, c.PositionPoll = 50*time.Millisecond, 100*time.Millisecond
		},
	}))
}

// wsURL is the simulator's private stream.
func (s *lossStack) wsURL() string {
	return s.srv.PrivateWS()
}

func lossOf(p map[string]any) decimal.Decimal {
	return decimal.RequireFromString(p["daily_loss"].(map[string]any)["loss_usdt"].(string))
}

func positionsShown(p map[string]any) int {
	ps, _ := p["exposure"].(map[string]any)["positions"].([]any)
	return len(ps)
}

// lossAfterClose buys 0.01 BTC, lets the price fall 10 % (about 80 USDT,
// over max_daily_loss_usdt 50) and closes qty of it. It returns the stack
// and the session.
func lossAfterClose(t *testing.T, s *lossStack, qty string) (*env, *sdk.ClientSession) {
	t.Helper()
	e := s.start(t)
	if _, err := e.sys.Handle(context.Background(), &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	e.tradeUser(t, "alice", messages.PolicySettings{MaxDailyLossUSDT: decp("50")})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	buy, isErr := callJSON(t, cs, "place_order", marketBuy())
	if isErr {
		t.Fatalf("buy: %v", buy)
	}
	entry := decimal.RequireFromString(buy["price"].(string))
	simDo(t, http.MethodPost, s.srv.URL+"/sim/price", map[string]any{"category": "linear", "symbol": "BTCUSDT", "price": entry.Mul(decimal.RequireFromString("0.9")).StringFixed(1)}, nil)
	waitPosture(t, cs, 5*time.Second, "REDUCING for daily_loss", stateIs("REDUCING", messages.CauseDailyLoss))
	if out, isErr := callJSON(t, cs, "close_position", map[string]any{"category": "linear", "symbol": "BTCUSDT", "qty": qty}); isErr {
		t.Fatalf("close: %v", out)
	}
	want := 0
	if qty != "0.01" {
		want = 1
	}
	waitPosture(t, cs, 5*time.Second, "showing the close", func(p map[string]any) bool { return positionsShown(p) == want })
	return e, cs
}

// wantLossKept checks, for a second (20 posture evaluations), that the
// day's loss is still counted: REDUCING for daily_loss, a loss of at least
// 50 USDT, and a risk-increasing order refused.
func wantLossKept(t *testing.T, cs *sdk.ClientSession, what string) {
	t.Helper()
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		p := posture(t, cs)
		if !stateIs("REDUCING", messages.CauseDailyLoss)(p) || lossOf(p).LessThan(decimal.NewFromInt(50)) {
			t.Fatalf("%s: the day's realised loss was forgotten: %v %v loss %s", what, p["state"], p["why"], lossOf(p))
		}
	}
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, out, isErr, messages.CauseDailyLoss)
}

// Closing a losing position in full (a risk-reducing action) keeps its
// realised loss in the day's count: the position push after the close
// carries the flat row's cumRealisedPnl, as on Bybit.
func TestDailyLossKeepsAFullyClosedLoss(t *testing.T) {
	s := newLossStack(t)
	_, cs := lossAfterClose(t, s, "0.01")
	wantLossKept(t, cs, "after the full close")
}

// The day's realised loss survives a restart (every stdio serve start):
// the count is journaled (daily_pnl_noted) and restored, for a position
// still open (seen again after the restart) and for one closed in full
// (a read by settleCoin no longer lists it).
func TestDailyLossSurvivesARestart(t *testing.T) {
	for _, qty := range []string{"0.009", "0.01"} {
		t.Run("closed "+qty, func(t *testing.T) {
			s := newLossStack(t)
			e, cs := lossAfterClose(t, s, qty)
			before := lossOf(posture(t, cs))
			// Ten posture evaluations: the count after the close is
			// journaled at the first.
			time.Sleep(500 * time.Millisecond)
			cs.Close()
			recs := e.records(t)
			var noted *messages.DailyPnlEvent
			for _, r := range recs {
				if messages.RecordType(r.Type) == messages.RecordDailyPnlNoted && r.User == "alice" {
					noted = &messages.DailyPnlEvent{}
					if err := json.Unmarshal(r.Payload, noted); err != nil {
						t.Fatal(err)
					}
				}
			}
			if noted == nil || len(noted.Rows) != 1 || noted.Rows[0].Symbol != "BTCUSDT" || !noted.Rows[0].RealisedUSDT.LessThan(decimal.NewFromInt(-50)) {
				t.Fatalf("the journal does not hold the day's realised loss: %+v", noted)
			}
			e = s.start(t)
			cs = connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
			want := 0
			if qty != "0.01" {
				want = 1
			}
			p := waitPosture(t, cs, 10*time.Second, "connected again", func(p map[string]any) bool {
				st, _ := p["stream"].(map[string]any)
				return st["connected"] == true && positionsShown(p) == want
			})
			// Nothing was realised while the server was down: the count
			// goes on from where it was (the open rest's mark moves a
			// little).
			if got := lossOf(p); got.LessThan(before.Sub(decimal.NewFromInt(5))) {
				t.Fatalf("loss %s after the restart, %s before", got, before)
			}
			wantLossKept(t, cs, "after the restart")
		})
	}
}

// A position closed while no push reached the cache (the stream was
// down) is read again by symbol when a read of every open position no
// longer lists it: it leaves the exposure, and the loss its close
// realised counts.
func TestDailyLossCountsAPositionClosedWhileTheStreamWasDown(t *testing.T) {
	s := newLossStack(t)
	e := s.start(t)
	if _, err := e.sys.Handle(context.Background(), &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	key := e.addKey(t, "alice")
	e.seed(t, key, "balances", map[string]string{"USDT": "100000"}, nil)
	paper := messages.VenuePaper
	if _, err := e.sys.Handle(context.Background(), &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{
		Profile: profp(messages.ProfileTrade), Allow: stringsp("linear:BTCUSDT"), ConfirmActions: stringsp(), VenueCeiling: &paper, MaxDailyLossUSDT: decp("50"),
	}}, messages.ActorCLIAdmin); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	if buy, isErr := callJSON(t, cs, "place_order", marketBuy()); isErr {
		t.Fatalf("buy: %v", buy)
	}
	waitPosture(t, cs, 5*time.Second, "showing the position", func(p map[string]any) bool { return positionsShown(p) == 1 })
	simDo(t, http.MethodPost, s.srv.URL+"/sim/faults", map[string]any{"kind": "ws_disconnect", "path": "/v5/private"}, nil)
	waitPosture(t, cs, 10*time.Second, "the stream down", func(p map[string]any) bool {
		st, _ := p["stream"].(map[string]any)
		return st["connected"] == false
	})
	// Closed outside the stream's sight, with 80 USDT realised.
	e.seed(t, key, "positions", []map[string]any{{"symbol": "BTCUSDT", "side": "", "size": "0", "avgPrice": "0", "positionIdx": 0, "leverage": "10", "cumRealisedPnl": "-80"}}, nil)
	simDo(t, http.MethodDelete, s.srv.URL+"/sim/faults", nil, nil)
	p := waitPosture(t, cs, 15*time.Second, "the close seen", func(p map[string]any) bool {
		st, _ := p["stream"].(map[string]any)
		return st["connected"] == true && positionsShown(p) == 0
	})
	if !stateIs("REDUCING", messages.CauseDailyLoss)(p) {
		waitPosture(t, cs, time.Second, "REDUCING for daily_loss", stateIs("REDUCING", messages.CauseDailyLoss))
	}
	if got := lossOf(posture(t, cs)); got.LessThan(decimal.NewFromInt(79)) {
		t.Fatalf("loss %s after a close of 80 USDT realised", got)
	}
}
