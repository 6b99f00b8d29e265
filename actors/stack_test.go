package actors

import (
	"context"
	"log/slog"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// stack is what startStack builds: the parts under the system come from
// internal/testkit/rig, which imports no actors, so these internal tests
// may use it (docs/decisions.md D142); Configure changes the actor
// configuration last.
type stack = rig.Options[Config]

// startStack starts a system with a users supervisor over the stack o
// describes: a journal (o.Dir, or a fresh one) it replays and, unless
// o.NoVenue, the paper venue on a loopback simulator. It logs into ts.buf,
// creates o.Users, and stops when the test ends.
func startStack(t testing.TB, o stack) *testSystem {
	t.Helper()
	replay := NewUserReplay()
	r := rig.Open(t, &o, replay.OnRecord)
	buf := &syncBuffer{}
	cfg := Config{Journal: r.Log, Users: replay, JournalDir: r.JournalDir, Venue: messages.VenuePaper, Logger: slog.New(slog.NewJSONHandler(buf, nil))}
	if r.Sim != nil {
		cfg.Environment, cfg.MasterKey, cfg.Clients, cfg.Streams, cfg.Market = "paper", r.MasterKey, r.Clients, r.Streams, r.Market
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	sys, err := Start(cfg)
	if err != nil {
		_ = r.Log.Close()
		t.Fatal(err)
	}
	ts := &testSystem{System: sys, log: r.Log, dir: o.Dir, buf: buf, sim: o.Sim, opts: o}
	t.Cleanup(ts.stop)
	for _, u := range o.Users {
		ts.must(t, &messages.CreateUserRequest{User: u}, messages.ActorCLIAdmin)
	}
	return ts
}

// funded is the simulator most of these tests trade on: seed 9, its
// default key holding 10,000 USDT, its public rate limit kept.
var funded = rig.SimOptions{Seed: 9, Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}, PublicRateLimit: true}

// restart stops ts and starts it again on the same journal, simulator and
// master key, replaying the journal; the users are not created again.
func (ts *testSystem) restart(t testing.TB) *testSystem {
	t.Helper()
	ts.stop()
	return startStack(t, ts.opts.Again())
}

// addDefaultKey stores the simulator's default key, on paper, for user.
func (ts *testSystem) addDefaultKey(t testing.TB, user string) {
	t.Helper()
	key := ts.sim.DefaultKey()
	if _, err := ts.Handle(context.Background(), &messages.AddCredentialRequest{User: user, Environment: "paper", APIKey: key.APIKey,
		APISecret: messages.NewSecret(key.APISecret)}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
}
