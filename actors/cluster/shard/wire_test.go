package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The wire's tests run real actors.Systems, one per shard, each on its own
// journal in a temp directory, and a Transport that calls Serve directly:
// everything but protoactor's cluster between them.

const testShards = 3

// fixedNow is the journal clock of every test system, so that a local
// system and the shards answer the same timestamps.
func fixedNow() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }

// startSystem starts a system on a new journal in a temp directory.
func startSystem(t testing.TB, slot route.Slot) (*actors.System, string) {
	t.Helper()
	dir := t.TempDir()
	rep := actors.NewUserReplay()
	l, _, err := wal.Open(dir, wal.Options{OnRecord: rep.OnRecord})
	if err != nil {
		t.Fatal(err)
	}
	sys, err := actors.Start(actors.Config{Journal: l, Users: rep, Now: fixedNow, Shard: slot, MasterKey: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sys.Stop()
		_ = l.Close()
	})
	return sys, dir
}

// testCluster is testShards shard systems and a Client on them.
type testCluster struct {
	systems []*actors.System
	dirs    []string
	client  *Client
	calls   sync.Map // method → count, to see the wire was used
}

func startCluster(t testing.TB) *testCluster {
	t.Helper()
	c := &testCluster{}
	for i := range testShards {
		s, d := startSystem(t, route.Slot{Index: i, Count: testShards})
		c.systems, c.dirs = append(c.systems, s), append(c.dirs, d)
	}
	c.client = NewClient(testShards, func(ctx context.Context, shard int, b []byte) ([]byte, error) {
		if shard < 0 || shard >= len(c.systems) {
			return nil, fmt.Errorf("no shard %d", shard)
		}
		return Serve(ctx, c.systems[shard], bytes.Clone(b)), nil
	})
	return c
}

// users are the test users; at least two shards of testShards get some.
var users = []string{"alice", "bob", "carol", "dave", "erin", "frank"}

func TestTestUsersSpreadOverShards(t *testing.T) {
	seen := map[int]bool{}
	for _, u := range users {
		seen[route.OfUser(u, testShards)] = true
	}
	if len(seen) < 2 {
		t.Fatalf("the test users all route to one shard: %v", seen)
	}
}

// side is what the parity test sends commands to: a local system, or the
// Client on the shards.
type side struct {
	name   string
	submit func(context.Context, messages.Command, messages.Origin) (any, error)
	// tokenID is the last token id the side issued (for the revoke).
	tokenID string
}

func originFor(cmd messages.Command) messages.Origin {
	if strings.HasPrefix(cmd.CommandName(), "trade.") {
		return messages.Origin{Role: messages.RoleAgent, Channel: messages.ChannelHTTP, PeerUID: -1, PeerPID: -1, TokenID: "tok_0000000000000000"}
	}
	return messages.CLIOrigin(cmd, messages.ChannelSocket, 1000, 4242, false)
}

// samples holds one command for every wire name of messages.Commands; a
// command added to the table without a case here fails
// TestEveryCommandSameOverTheWire.
var samples = map[string]func(s *side) messages.Command{
	"policy.show": func(*side) messages.Command { return &messages.ShowPolicyRequest{User: "alice"} },
	"policy.tighten": func(*side) messages.Command {
		lev := decimal.NewFromInt(3)
		return &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{MaxLeverage: &lev}}
	},
	"admin.policy.set_ceiling": func(*side) messages.Command {
		lev := decimal.NewFromInt(5)
		return &messages.SetCeilingRequest{User: "bob", Settings: messages.PolicySettings{MaxLeverage: &lev}}
	},
	"admin.policy.reset_overrides": func(*side) messages.Command { return &messages.ResetOverridesRequest{User: "alice"} },
	"kill_switch.set": func(*side) messages.Command {
		return &messages.SetKillSwitchRequest{User: "carol", On: true, Level: messages.KillSwitchUser}
	},
	"admin.user.create":  func(*side) messages.Command { return &messages.CreateUserRequest{User: "zed"} },
	"admin.user.list":    func(*side) messages.Command { return &messages.ListUsersRequest{} },
	"admin.user.disable": func(*side) messages.Command { return &messages.DisableUserRequest{User: "zed"} },
	"admin.token.issue":  func(*side) messages.Command { return &messages.IssueTokenRequest{User: "dave"} },
	"admin.token.revoke": func(s *side) messages.Command { return &messages.RevokeTokenRequest{ID: s.tokenID} },
	"admin.token.list":   func(*side) messages.Command { return &messages.ListTokensRequest{User: "dave"} },
	"keys.add": func(*side) messages.Command {
		return &messages.AddCredentialRequest{User: "erin", Environment: "paper", APIKey: "k", APISecret: messages.NewSecret("s")}
	},
	"keys.show": func(*side) messages.Command {
		return &messages.ShowCredentialRequest{User: "erin", Environment: "paper"}
	},
	"keys.delete": func(*side) messages.Command {
		return &messages.DeleteCredentialRequest{User: "erin", Environment: "paper"}
	},
	"keys.recheck": func(*side) messages.Command {
		return &messages.RecheckCredentialRequest{User: "erin", Environment: "paper"}
	},
	"posture.show": func(*side) messages.Command { return &messages.ShowPostureRequest{User: "frank"} },
	"posture.set":  func(*side) messages.Command { return &messages.SetPostureRequest{User: "frank", Reduce: true} },
	"trade.place_order": func(*side) messages.Command {
		return &messages.PlaceOrderCommand{User: "bob", Args: messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
			Side: "Buy", OrderType: "Limit", Qty: decimal.RequireFromString("0.001"), Price: decimal.NewNullDecimal(decimal.NewFromInt(50000))}}
	},
	"trade.cancel_order": func(*side) messages.Command {
		return &messages.CancelOrderCommand{User: "bob", Args: messages.CancelOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: "o-1"}}
	},
	"trade.close_position": func(*side) messages.Command {
		return &messages.ClosePositionCommand{User: "bob", Args: messages.ClosePositionArgs{Symbol: "BTCUSDT"}}
	},
	"trade.set_trading_stop": func(*side) messages.Command {
		sl := decimal.NewNullDecimal(decimal.NewFromInt(40000))
		return &messages.TradingStopCommand{User: "bob", Args: messages.TradingStopArgs{Symbol: "BTCUSDT", StopLoss: sl}}
	},
	"trade.amend_order": func(*side) messages.Command {
		q := decimal.NewNullDecimal(decimal.RequireFromString("0.002"))
		return &messages.AmendOrderCommand{User: "bob", Args: messages.AmendOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", OrderID: "o-1", Qty: q}}
	},
	"trade.cancel_all_orders": func(*side) messages.Command {
		return &messages.CancelAllCommand{User: "bob", Args: messages.CancelAllArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT"}}
	},
	"trade.set_leverage": func(*side) messages.Command {
		return &messages.SetLeverageCommand{User: "bob", Args: messages.SetLeverageArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Leverage: decimal.NewFromInt(2)}}
	},
	"confirm.status": func(*side) messages.Command {
		return &messages.ConfirmationStatusCommand{User: "alice", ConfirmationID: "conf_0000000000000000"}
	},
	"confirm.cancel": func(*side) messages.Command {
		return &messages.CancelConfirmationCommand{User: "alice", ConfirmationID: "conf_0000000000000000"}
	},
	"confirm.list": func(*side) messages.Command { return &messages.ListConfirmationsCommand{User: "alice", All: true} },
	"confirm.decide": func(*side) messages.Command {
		return &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "conf_0000000000000000",
			Decision: messages.DecisionReject, Channel: messages.ConfirmChannelCLI}
	},
	"paper.status": func(*side) messages.Command { return &messages.PaperStatusRequest{User: "erin"} },
	"paper.reset":  func(*side) messages.Command { return &messages.PaperResetRequest{User: "erin"} },
}

// mustSucceed are commands whose sample is answered, not refused, on a
// system without a venue: the parity test checks they were.
var mustSucceed = []string{"policy.show", "policy.tighten", "admin.policy.set_ceiling", "admin.policy.reset_overrides",
	"kill_switch.set", "admin.user.create", "admin.user.list", "admin.user.disable", "admin.token.issue",
	"admin.token.revoke", "admin.token.list", "posture.show", "posture.set", "confirm.list"}

var (
	tokenIDs = regexp.MustCompile(`tok_[0-9a-f]{16}`)
	tokens   = regexp.MustCompile(`gxt_[A-Za-z0-9_-]+`)
)

// masked is v's JSON with the random token ids and tokens masked.
func masked(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return tokens.ReplaceAllString(tokenIDs.ReplaceAllString(string(b), "tok_X"), "gxt_X")
}

// Every command of messages.Commands answers the same through
// Client→Serve on three shards as on one local system: the same answer
// type and JSON (token ids and tokens masked), or the same error (code,
// message, next step, details).
func TestEveryCommandSameOverTheWire(t *testing.T) {
	ctx := context.Background()
	local, _ := startSystem(t, route.Slot{})
	cl := startCluster(t)
	sides := []*side{{name: "local", submit: local.Submit}, {name: "wire", submit: cl.client.Submit}}
	run := func(name string, mk func(*side) messages.Command) (ok bool) {
		t.Helper()
		var ans [2]any
		var errs [2]error
		for i, s := range sides {
			cmd := mk(s)
			ans[i], errs[i] = s.submit(ctx, cmd, originFor(cmd))
			if ti, isIssue := ans[i].(*messages.TokenIssued); isIssue && errs[i] == nil {
				s.tokenID = ti.ID
			}
		}
		if (errs[0] == nil) != (errs[1] == nil) {
			t.Errorf("%s: local answered %v / %v, wire %v / %v", name, ans[0], errs[0], ans[1], errs[1])
			return false
		}
		if errs[0] != nil {
			t.Logf("%s: refused on both sides: %s", name, messages.CodeOf(errs[0]))
			if l, w := masked(t, messages.AsError(errs[0])), masked(t, messages.AsError(errs[1])); l != w {
				t.Errorf("%s: errors differ:\nlocal %s\nwire  %s", name, l, w)
			}
			return false
		}
		if reflect.TypeOf(ans[0]) != reflect.TypeOf(ans[1]) {
			t.Errorf("%s: local answered %T, wire %T", name, ans[0], ans[1])
			return false
		}
		if l, w := masked(t, ans[0]), masked(t, ans[1]); l != w {
			t.Errorf("%s: answers differ:\nlocal %s\nwire  %s", name, l, w)
			return false
		}
		return true
	}
	for _, u := range users {
		if !run("admin.user.create "+u, func(*side) messages.Command { return &messages.CreateUserRequest{User: u} }) {
			t.Fatalf("create %s failed", u)
		}
	}
	succeeded := map[string]bool{}
	for _, info := range messages.Commands {
		mk, ok := samples[info.Name]
		if !ok {
			t.Errorf("command %s has no wire case in this test", info.Name)
			continue
		}
		succeeded[info.Name] = run(info.Name, mk)
	}
	for _, name := range mustSucceed {
		if !succeeded[name] {
			t.Errorf("%s was refused on both sides: the sample does not exercise the answer", name)
		}
	}
	// Each user lives on its own shard only.
	for _, u := range users {
		for i, s := range cl.systems {
			_, err := s.CallerProfile(u)
			home := route.OfUser(u, testShards) == i
			if home && err != nil || !home && messages.CodeOf(err) != messages.CodeInternalError {
				t.Errorf("shard %d, user %s (home %v): %v", i, u, home, err)
			}
		}
	}
	// The reads of the front: the same over the wire as on the shard.
	for _, u := range users {
		home := cl.systems[route.OfUser(u, testShards)]
		p1, e1 := home.CallerProfile(u)
		p2, e2 := cl.client.CallerProfile(u)
		if p1 != p2 || messages.CodeOf(e1) != messages.CodeOf(e2) {
			t.Errorf("CallerProfile(%s): shard %q %v, wire %q %v", u, p1, e1, p2, e2)
		}
		j1, j2 := home.MyJournal(u, 0, 50), cl.client.MyJournal(u, 0, 50)
		if len(j1.Entries) == 0 || masked(t, j1) != masked(t, j2) {
			t.Errorf("MyJournal(%s): shard %d entries, wire %d, or they differ", u, len(j1.Entries), len(j2.Entries))
		}
	}
}

// A token issued through the Client is drawn to route home: the token
// (route.OfToken) and its id (route.OfTokenID) route to its user's shard,
// it authenticates through the Client, and a revoke by id through the
// Client revokes it.
func TestIssuedTokensRouteHome(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t)
	admin := func(cmd messages.Command) any {
		t.Helper()
		res, err := cl.client.Submit(ctx, cmd, originFor(cmd))
		if err != nil {
			t.Fatalf("%s: %v", cmd.CommandName(), err)
		}
		return res
	}
	for _, u := range users {
		admin(&messages.CreateUserRequest{User: u})
	}
	var issued []*messages.TokenIssued
	for i := range 60 {
		u := users[i%len(users)]
		ti, ok := admin(&messages.IssueTokenRequest{User: u}).(*messages.TokenIssued)
		if !ok || ti.User != u || !strings.HasPrefix(ti.Token, messages.TokenPrefix) {
			t.Fatalf("issue for %s answered %+v", u, ti)
		}
		home := route.OfUser(u, testShards)
		if route.OfToken(ti.Token, testShards) != home || route.OfTokenID(ti.ID, testShards) != home {
			t.Fatalf("token of %s (shard %d) routes to %d, its id to %d", u, home, route.OfToken(ti.Token, testShards), route.OfTokenID(ti.ID, testShards))
		}
		user, id, err := cl.client.Authenticate(ti.Token)
		if err != nil || user != u || id != ti.ID {
			t.Fatalf("authenticate %s's token: %q %q %v", u, user, id, err)
		}
		issued = append(issued, ti)
	}
	// The token is known only to its home shard: another shard does not
	// authenticate it.
	ti := issued[0]
	other := cl.systems[(route.OfUser(ti.User, testShards)+1)%testShards]
	if _, _, err := other.Authenticate(ti.Token); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("another shard authenticated a token: %v", err)
	}
	// Revoke by id alone (the revoke carries no user) through the Client.
	res := admin(&messages.RevokeTokenRequest{ID: ti.ID})
	if l, ok := res.(*messages.TokenList); !ok || !l.Changed || l.User != ti.User {
		t.Fatalf("revoke answered %+v", res)
	}
	if _, _, err := cl.client.Authenticate(ti.Token); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("a revoked token authenticates: %v", err)
	}
	if _, err := cl.client.Submit(ctx, &messages.RevokeTokenRequest{ID: "tok_ffffffffffffffff"}, originFor(&messages.RevokeTokenRequest{})); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("revoke of an unknown id: %v", err)
	}
	// The refusal of a bad token names nothing of it.
	const bad = "gxt_not-a-real-token-secret-value"
	_, _, err := cl.client.Authenticate(bad)
	if messages.CodeOf(err) != messages.CodePermissionDenied || strings.Contains(masked(t, messages.AsError(err)), "not-a-real") {
		t.Fatalf("bad token: %v", err)
	}
}

// A shard's system refuses, before anything is journaled, every call for
// a user another shard serves: internal_error, reason wrong_shard.
func TestUserOfAnotherShardIsRefused(t *testing.T) {
	ctx := context.Background()
	sys, dir := startSystem(t, route.Slot{Index: 0, Count: testShards})
	var stranger string
	for _, u := range users {
		if route.OfUser(u, testShards) != 0 {
			stranger = u
			break
		}
	}
	wrong := func(what string, err error) {
		t.Helper()
		e := messages.AsError(err)
		if e == nil || e.Code != messages.CodeInternalError || e.Details["reason"] != actors.ReasonWrongShard {
			t.Errorf("%s for a user of another shard: %v", what, err)
		}
	}
	for _, cmd := range []messages.Command{&messages.CreateUserRequest{User: stranger}, &messages.ShowPolicyRequest{User: stranger},
		&messages.IssueTokenRequest{User: stranger}, &messages.SetKillSwitchRequest{User: stranger, On: true, Level: messages.KillSwitchUser}} {
		_, err := sys.Submit(ctx, cmd, originFor(cmd))
		wrong(cmd.CommandName(), err)
	}
	_, err := sys.ToolCalled(ctx, &messages.ToolCalled{User: stranger, Tool: "get_balances", Admitted: true}, false)
	wrong("ToolCalled", err)
	_, err = sys.ToolCalled(ctx, &messages.ToolCalled{User: stranger, Tool: "place_order", Admitted: true}, true)
	wrong("durable ToolCalled", err)
	_, err = sys.CallerProfile(stranger)
	wrong("CallerProfile", err)
	_, err = sys.Account(ctx, &messages.GetBalancesRequest{User: stranger})
	wrong("Account", err)
	_, err = sys.WaitForUpdate(ctx, &messages.WaitForUpdateRequest{User: stranger, Symbol: "BTCUSDT", Timeout: time.Second})
	wrong("WaitForUpdate", err)
	wrong("CallsRateLimited", sys.CallsRateLimited(&messages.CallsRateLimitedEvent{User: stranger, Count: 1}))
	wrong("SessionsRefused", sys.SessionsRefused(&messages.SessionsRefusedEvent{User: stranger, Count: 1}))
	sys.SessionEvent(ctx, stranger, messages.SessionClosed) // ignored, and does not wait
	// A user of this shard is served.
	var home string
	for _, u := range users {
		if route.OfUser(u, testShards) == 0 {
			home = u
			break
		}
	}
	if home == "" {
		t.Fatal("no test user on shard 0")
	}
	if _, err := sys.Submit(ctx, &messages.CreateUserRequest{User: home}, originFor(&messages.CreateUserRequest{})); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.ToolCalled(ctx, &messages.ToolCalled{User: home, Tool: "get_balances", Admitted: true}, false); err != nil {
		t.Fatal(err)
	}
	for _, r := range recordsIn(t, dir) {
		if r.User == stranger {
			t.Fatalf("a record of the other shard's user was journaled: %+v", r)
		}
	}
}

func recordsIn(t *testing.T, dir string) []wal.Record {
	t.Helper()
	var out []wal.Record
	if err := wal.Scan(dir, func(r wal.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A durable ToolCalled through the Client returns at once with a wait;
// once the wait returns the tool_call record is in the shard's journal
// on disk. A read's record is queued when the call returns.
func TestToolCalledDurableWaitOverTheWire(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t)
	u := "alice"
	if _, err := cl.client.Submit(ctx, &messages.CreateUserRequest{User: u}, originFor(&messages.CreateUserRequest{})); err != nil {
		t.Fatal(err)
	}
	rec := &messages.ToolCalled{User: u, Profile: "trade", Tool: "place_order", ArgsSHA256: strings.Repeat("ab", 32), Admitted: true, TokenID: "tok_0123456789abcdef"}
	wait, err := cl.client.ToolCalled(ctx, rec, true)
	if err != nil || wait == nil {
		t.Fatalf("durable ToolCalled: wait %v, %v", wait != nil, err)
	}
	if err := wait(ctx); err != nil {
		t.Fatal(err)
	}
	dir := cl.dirs[route.OfUser(u, testShards)]
	found := false
	for _, r := range recordsIn(t, dir) {
		if r.Type == uint16(messages.RecordToolCall) && r.User == u && bytes.Contains(r.Payload, []byte(`"tool":"place_order"`)) {
			found = true
		}
	}
	if !found {
		t.Fatal("the durable tool_call is not in the shard's journal after wait returned")
	}
	// The wait is taken once: a second wait finds none.
	if err := wait(ctx); messages.AsError(err) == nil || messages.AsError(err).Details["reason"] != ReasonWaitLost {
		t.Fatalf("a second wait: %v", err)
	}
	// A read: no wait, queued.
	if w, err := cl.client.ToolCalled(ctx, &messages.ToolCalled{User: u, Tool: "get_balances", Admitted: true}, false); err != nil || w != nil {
		t.Fatalf("read ToolCalled: %v %v", w != nil, err)
	}
	// Rate-limit and refused-session counts go to the user's shard.
	if err := cl.client.CallsRateLimited(&messages.CallsRateLimitedEvent{User: u, Count: 3, Since: fixedNow(), Until: fixedNow()}); err != nil {
		t.Fatal(err)
	}
	if err := cl.client.SessionsRefused(&messages.SessionsRefusedEvent{User: u, TokenID: "tok_0123456789abcdef", Scope: "token", Limit: 1, Count: 2}); err != nil {
		t.Fatal(err)
	}
	cl.client.SessionEvent(ctx, u, messages.SessionOpened)
	cl.client.SessionEvent(ctx, u, messages.SessionClosed)
	// The counts reach the shard's journal (queued without waiting: the
	// test waits for the writer's next flush, at most a few seconds).
	want := map[uint16]bool{uint16(messages.RecordCallsRateLimited): false, uint16(messages.RecordSessionsRefused): false}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, r := range recordsIn(t, dir) {
			if _, ok := want[r.Type]; ok && r.User == u {
				want[r.Type] = true
			}
		}
		if want[uint16(messages.RecordCallsRateLimited)] && want[uint16(messages.RecordSessionsRefused)] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counts journaled over the wire are not in the shard's journal: %v", want)
		}
	}
	// The user's page over the wire is the shard's.
	// Records queued above may still land between the two reads, so the
	// pages are compared once the shard's page stops changing.
	home := cl.systems[route.OfUser(u, testShards)]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		before := masked(t, home.MyJournal(u, 0, 20))
		page, err := cl.client.MyJournalContext(ctx, u, 0, 20)
		after := masked(t, home.MyJournal(u, 0, 20))
		if err != nil {
			t.Fatal(err)
		}
		if (before != after || len(page.Entries) < 3) && time.Now().Before(deadline) {
			continue // the shard's journal moved during the read, or its records are still queued
		}
		if masked(t, page) != after || len(page.Entries) < 3 {
			t.Fatalf("page over the wire %+v; on the shard %+v", page, home.MyJournal(u, 0, 20))
		}
		break
	}
}

// Account reads and WaitForUpdate go to the user's shard and back; a
// system without a venue refuses them, and the refusal keeps its code and
// details over the wire.
func TestAccountAndWaitForUpdateOverTheWire(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t)
	u := "bob"
	if _, err := cl.client.Submit(ctx, &messages.CreateUserRequest{User: u}, originFor(&messages.CreateUserRequest{})); err != nil {
		t.Fatal(err)
	}
	start := fixedNow().Add(-time.Hour)
	for _, req := range []messages.AccountRequest{
		&messages.GetBalancesRequest{User: u},
		&messages.GetPositionsRequest{User: u, Symbol: "BTCUSDT", Limit: 5},
		&messages.GetOpenOrdersRequest{User: u, Category: messages.CategoryLinear, Limit: 5},
		&messages.GetOrderHistoryRequest{User: u, Category: messages.CategoryLinear, Start: start, End: fixedNow(), Limit: 5},
		&messages.GetTradesRequest{User: u, Category: messages.CategoryLinear, Start: start, End: fixedNow(), Limit: 5},
		&messages.GetBalancesRequest{User: "nobody"},
	} {
		r1, e1 := cl.systems[route.OfUser(messages.AccountUser(req), testShards)].Account(ctx, req)
		r2, e2 := cl.client.Account(ctx, req)
		if e1 == nil || e2 == nil {
			t.Fatalf("%T on a system without a venue: %v %v / %v %v", req, r1, e1, r2, e2)
		}
		if a, b := masked(t, messages.AsError(e1)), masked(t, messages.AsError(e2)); a != b {
			t.Errorf("%T: shard %s, wire %s", req, a, b)
		}
	}
	for _, r := range []*messages.WaitForUpdateRequest{{User: u, Symbol: "BTCUSDT", Timeout: 50 * time.Millisecond}, {User: "nobody", Symbol: "BTCUSDT", Timeout: time.Second}} {
		a1, e1 := cl.systems[route.OfUser(r.User, testShards)].WaitForUpdate(ctx, r)
		a2, e2 := cl.client.WaitForUpdate(ctx, r)
		if messages.CodeOf(e1) != messages.CodeOf(e2) || masked(t, a1) != masked(t, a2) {
			t.Errorf("WaitForUpdate %s: shard %v %v, wire %v %v", r.User, a1, e1, a2, e2)
		}
		if e1 != nil && masked(t, messages.AsError(e1)) != masked(t, messages.AsError(e2)) {
			t.Errorf("WaitForUpdate %s: errors differ: %v / %v", r.User, e1, e2)
		}
	}
}

// recorder is a Target that keeps what Serve decoded.
type recorder struct {
	Target // nil: only Submit is called
	mu     sync.Mutex
	cmd    messages.Command
	origin messages.Origin
}

func (r *recorder) Submit(_ context.Context, cmd messages.Command, origin messages.Origin) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmd, r.origin = cmd, origin
	return &messages.CredentialView{User: "erin"}, nil
}

// answering is a Target whose Submit answers a given value.
type answering struct {
	Target
	v any
}

func (a answering) Submit(context.Context, messages.Command, messages.Origin) (any, error) {
	return a.v, nil
}

// An answer comes back as the type the shard answered, even where the
// command's declared Result is not it (confirm.decide answers the
// executed tool's answer on an approval).
func TestAnswerKeepsItsType(t *testing.T) {
	cmd := &messages.DecideConfirmationCommand{User: "alice", ConfirmationID: "c", Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI}
	for _, v := range []any{&messages.OrderAnswer{Status: messages.AnswerAccepted, OrderID: "o-1"}, &messages.ConfirmationStatus{ConfirmationID: "c", User: "alice"}} {
		cl := NewClient(1, func(ctx context.Context, _ int, b []byte) ([]byte, error) { return Serve(ctx, answering{v: v}, b), nil })
		got, err := cl.Submit(context.Background(), cmd, originFor(cmd))
		if err != nil || reflect.TypeOf(got) != reflect.TypeOf(v) || masked(t, got) != masked(t, v) {
			t.Fatalf("sent %#v, got %#v, %v", v, got, err)
		}
	}
}

// A key's secret crosses the wire (the control socket's encoding; the
// command's own JSON redacts it), and so does the whole origin.
func TestSubmitCarriesSecretAndOrigin(t *testing.T) {
	r := &recorder{}
	cl := NewClient(1, func(ctx context.Context, _ int, b []byte) ([]byte, error) { return Serve(ctx, r, b), nil })
	origin := messages.Origin{Role: messages.RoleAdmin, Channel: messages.ChannelSocket, PeerUID: 1000, PeerPID: 42, TokenID: "tok_1", FormElicitation: true}
	cmd := &messages.AddCredentialRequest{User: "erin", Environment: "paper", APIKey: "key-1", APISecret: messages.NewSecret("sec-1"), AdminAttest: true}
	if _, err := cl.Submit(context.Background(), cmd, origin); err != nil {
		t.Fatal(err)
	}
	got, ok := r.cmd.(*messages.AddCredentialRequest)
	if !ok || got.APIKey != "key-1" || got.APISecret.Reveal() != "sec-1" || !got.AdminAttest || r.origin != origin {
		t.Fatalf("decoded %#v from %#v", r.cmd, r.origin)
	}
}

// Bytes the shard cannot read are answered internal_error, reason
// bad_call, and nothing of them is echoed.
func TestServeRefusesBadBytes(t *testing.T) {
	sys, _ := startSystem(t, route.Slot{})
	const secret = "gxt_SECRET-in-a-bad-call"
	good, _ := json.Marshal(call{Method: methodAuthenticate, Token: secret})
	for name, b := range map[string][]byte{
		"empty":            nil,
		"garbage":          []byte("\x00\xff not json " + secret),
		"truncated":        good[:len(good)/2],
		"array":            []byte(`[1,2,3]`),
		"unknown method":   []byte(`{"method":"drop_tables","token":"` + secret + `"}`),
		"unknown command":  []byte(`{"method":"submit","type":"admin.everything","body":{},"origin":{}}`),
		"no origin":        []byte(`{"method":"submit","type":"policy.show","body":{"user":"alice"}}`),
		"bad body":         []byte(`{"method":"submit","type":"policy.show","body":[1],"origin":{}}`),
		"bad account kind": []byte(`{"method":"account","kind":"everything","body":{}}`),
		"bad account body": []byte(`{"method":"account","kind":"balances","body":"x"}`),
		"no tool call":     []byte(`{"method":"tool_called","durable":true}`),
		"no wait request":  []byte(`{"method":"wait_for_update"}`),
		"no event":         []byte(`{"method":"calls_rate_limited"}`),
		"wrong types":      []byte(`{"method":42}`),
		"unknown field":    []byte(`{"method":"caller_profile","user":"alice","shard_override":1}`),
		"unknown in body":  []byte(`{"method":"submit","type":"policy.show","body":{"user":"alice","as":"root"},"origin":{}}`),
		"trailing data":    []byte(`{"method":"caller_profile","user":"alice"} {"method":"x"}`),
	} {
		out := Serve(context.Background(), sys, b)
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("%s: answer is not JSON: %q", name, out)
		}
		if a.Error == nil || a.Error.Code != messages.CodeInternalError || a.Error.Details["reason"] != ReasonBadCall {
			t.Errorf("%s: answered %s", name, out)
		}
		if bytes.Contains(out, []byte("SECRET")) {
			t.Errorf("%s: the answer echoes the call: %s", name, out)
		}
	}
	out := Serve(context.Background(), sys, []byte(`{"method":"tool_called_wait","wait_id":"nope"}`))
	if !bytes.Contains(out, []byte(ReasonWaitLost)) {
		t.Errorf("unknown wait id: %s", out)
	}
	// An Authenticate that fails names nothing of the token either.
	out = Serve(context.Background(), sys, good)
	if !bytes.Contains(out, []byte(messages.CodePermissionDenied)) || bytes.Contains(out, []byte("SECRET")) {
		t.Errorf("authenticate answered %s", out)
	}
}

// A transport failure and an unreadable answer are internal_error with
// their reasons; a command that names no user is refused, not guessed.
func TestClientTransportFailures(t *testing.T) {
	ctx := context.Background()
	down := NewClient(2, func(context.Context, int, []byte) ([]byte, error) { return nil, fmt.Errorf("connection refused") })
	_, err := down.Submit(ctx, &messages.ShowPolicyRequest{User: "alice"}, originFor(&messages.ShowPolicyRequest{}))
	if e := messages.AsError(err); e == nil || e.Code != messages.CodeInternalError || e.Details["reason"] != ReasonShardUnreachable {
		t.Fatalf("transport down: %v", err)
	}
	_, err = down.Submit(ctx, &messages.ListUsersRequest{}, originFor(&messages.ListUsersRequest{}))
	if e := messages.AsError(err); e == nil || e.Details["reason"] != ReasonShardUnreachable {
		t.Fatalf("a list with shards down must fail, not be partial: %v", err)
	}
	// A transport that answers a stable error (a shard not ready) keeps it.
	notReady := &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "not ready", Details: map[string]any{"reason": "shard_starting"}}
	nr := NewClient(2, func(context.Context, int, []byte) ([]byte, error) { return nil, notReady })
	if _, err := nr.CallerProfile("alice"); err != notReady {
		t.Fatalf("the transport's own error was not kept: %v", err)
	}
	garbled := NewClient(2, func(context.Context, int, []byte) ([]byte, error) { return []byte("<html>"), nil })
	if _, _, err := garbled.Authenticate("gxt_x"); messages.AsError(err).Details["reason"] != ReasonBadAnswer {
		t.Fatalf("garbled answer: %v", err)
	}
	if p := garbled.MyJournal("alice", 0, 10); len(p.Entries) != 0 {
		t.Fatalf("a failed page has entries: %+v", p)
	}
	// A trading call that may have been served is outcome_unknown, as a
	// local server answers one whose wait ended: never resent blindly.
	order := &messages.PlaceOrderCommand{User: "alice", Args: messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		Side: "Buy", OrderType: "Market", Qty: decimal.RequireFromString("0.001")}}
	for name, cl := range map[string]*Client{"transport down": down, "garbled answer": garbled} {
		_, err := cl.Submit(ctx, order, originFor(order))
		if e := messages.AsError(err); e == nil || e.Code != messages.CodeOutcomeUnknown ||
			(e.Details["reason"] != ReasonShardUnreachable && e.Details["reason"] != ReasonBadAnswer) {
			t.Fatalf("%s: a trading call answered %v", name, err)
		}
	}
	if _, err := nr.Submit(ctx, order, originFor(order)); err != notReady {
		t.Fatalf("a trading call no shard served must keep its error: %v", err)
	}
}

// Validate runs the tool's checks on the member, as the system does.
func TestClientValidatesLikeTheSystem(t *testing.T) {
	sys, _ := startSystem(t, route.Slot{})
	cl := NewClient(testShards, nil)
	bad := &messages.PlaceOrderCommand{User: "bob", Args: messages.PlaceOrderArgs{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Side: "Up", OrderType: "Limit"}}
	e1, e2 := messages.AsError(sys.Validate(bad)), messages.AsError(cl.Validate(bad))
	if e1 == nil || masked(t, e1) != masked(t, e2) {
		t.Fatalf("system %v, client %v", e1, e2)
	}
	if err := cl.Validate(&messages.ShowPolicyRequest{User: "bob"}); err != nil {
		t.Fatal(err)
	}
}

// FuzzServe: whatever the bytes, Serve answers a JSON answer and never
// panics (a panic inside would answer reason serve_panic).
func FuzzServe(f *testing.F) {
	origin := messages.CLIOrigin(&messages.ShowPolicyRequest{}, messages.ChannelSocket, 1, 1, false)
	seeds := []call{
		{Method: methodSubmit, Type: "policy.show", Body: json.RawMessage(`{"user":"alice"}`), Origin: &origin},
		{Method: methodSubmit, Type: "admin.user.create", Body: json.RawMessage(`{"user":"alice"}`), Origin: &origin},
		{Method: methodSubmit, Type: "admin.token.revoke", Body: json.RawMessage(`{"id":"tok_1"}`), Origin: &origin},
		{Method: methodAuthenticate, Token: "gxt_abc"},
		{Method: methodCallerProfile, User: "alice"},
		{Method: methodToolCalled, Call: &messages.ToolCalled{User: "alice", Tool: "get_balances"}},
		{Method: methodToolCalledWait, WaitID: "x"},
		{Method: methodAccount, Kind: "balances", Body: json.RawMessage(`{"User":"alice"}`)},
		{Method: methodMyJournal, User: "alice", Limit: 5},
		{Method: methodSessionEvent, User: "alice", Event: messages.SessionHeard},
		{Method: methodWaitForUpdate, Wait: &messages.WaitForUpdateRequest{User: "nobody", Timeout: time.Millisecond}},
		{Method: methodCallsRateLimit, RateLimited: &messages.CallsRateLimitedEvent{User: "alice", Count: 1}},
		{Method: methodSessionsRefused, SessionsRefused: &messages.SessionsRefusedEvent{User: "alice", Count: 1}},
	}
	for _, s := range seeds {
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"method":"submit","type":"policy.show","body":null,"origin":null}`))
	f.Add([]byte("\x00"))
	sys, _ := startSystem(f, route.Slot{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		out := Serve(ctx, sys, b)
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("answer is not JSON: %q", out)
		}
		if a.Error != nil && (a.Error.Code == "" || a.Error.Details["reason"] == ReasonServePanic) {
			t.Fatalf("bad error answer %s for %q", out, b)
		}
	})
}
