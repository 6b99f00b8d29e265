package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

func dec(s string) *decimal.Decimal             { d := decimal.RequireFromString(s); return &d }
func intp(v int) *int                           { return &v }
func strs(v ...string) *[]string                { return &v }
func prof(p messages.Profile) *messages.Profile { return &p }

// startUsers starts a system with a users supervisor over a journal in dir,
// replaying what the journal already holds.
func startUsers(t testing.TB, dir string) *testSystem {
	return startUsersWith(t, dir, nil)
}

// startUsersWith is startUsers with a hook to change the config.
func startUsersWith(t testing.TB, dir string, configure func(*Config)) *testSystem {
	t.Helper()
	return startStack(t, stack{NoVenue: true, Dir: dir, Configure: configure})
}

func view(t testing.TB, res any, err error) *messages.PolicyView {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected refusal: %v", err)
	}
	v, ok := res.(*messages.PolicyView)
	if !ok {
		t.Fatalf("answer %T", res)
	}
	return v
}

func (ts *testSystem) do(t testing.TB, cmd messages.Command, origin string) (*messages.PolicyView, error) {
	t.Helper()
	res, err := ts.Handle(context.Background(), cmd, origin)
	if err != nil {
		return nil, err
	}
	return view(t, res, nil), nil
}

func (ts *testSystem) must(t testing.TB, cmd messages.Command, origin string) *messages.PolicyView {
	t.Helper()
	v, err := ts.do(t, cmd, origin)
	if err != nil {
		t.Fatalf("%s: %v", cmd.CommandName(), err)
	}
	return v
}

// userRecords reads the journal's records of user-changing types.
func userRecords(t *testing.T, dir string) []wal.Record {
	t.Helper()
	var out []wal.Record
	err := wal.Scan(dir, func(r wal.Record) error {
		if _, ok, _ := state.DecodeEvent(messages.RecordType(r.Type), r.Payload); ok {
			r.Payload = append([]byte(nil), r.Payload...)
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTightenRefusesLooserAndNamesFields(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetCeilingRequest{User: "alice", Settings: messages.PolicySettings{
		Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT", "spot:ETHUSDT"), MaxLeverage: dec("5"),
	}}, messages.ActorCLIAdmin)

	_, err := ts.do(t, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{
		MaxLeverage: dec("8"), Allow: strs("linear:SOLUSDT"), MaxOrderNotionalUSDT: dec("100"),
	}}, messages.ActorCLIUser)
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodePermissionDenied {
		t.Fatalf("looser tighten: %v", err)
	}
	fields, _ := e.Details["fields"].([]string)
	if fmt.Sprint(fields) != "[allow max_leverage]" {
		t.Fatalf("named fields %v", fields)
	}

	v := ts.must(t, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{
		MaxLeverage: dec("2"), Allow: strs("linear:BTCUSDT"),
	}}, messages.ActorCLIUser)
	if !v.Changed || !v.Effective.MaxLeverage.Equal(decimal.NewFromInt(2)) || fmt.Sprint(v.Effective.Allow) != "[linear:BTCUSDT]" {
		t.Fatalf("tighten result %+v", v.Effective)
	}
	// The same tighten again changes nothing and journals nothing.
	before := len(userRecords(t, ts.dir))
	v = ts.must(t, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{MaxLeverage: dec("2.0")}}, messages.ActorCLIUser)
	if v.Changed {
		t.Fatal("a no-op tighten reported a change")
	}
	if after := len(userRecords(t, ts.dir)); after != before {
		t.Fatalf("a no-op tighten journaled %d records", after-before)
	}
}

func TestCeilingBelowUserSettingTakesEffect(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "bob"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.TightenPolicyRequest{User: "bob", Settings: messages.PolicySettings{MaxOrderNotionalUSDT: dec("500")}}, messages.ActorCLIUser)
	v := ts.must(t, &messages.SetCeilingRequest{User: "bob", Settings: messages.PolicySettings{MaxOrderNotionalUSDT: dec("200")}}, messages.ActorCLIAdmin)
	if !v.Effective.MaxOrderNotionalUSDT.Equal(decimal.NewFromInt(200)) {
		t.Fatalf("effective notional %s, want the admin's 200", v.Effective.MaxOrderNotionalUSDT)
	}
	if v.Own.MaxOrderNotionalUSDT == nil || !v.Own.MaxOrderNotionalUSDT.Equal(decimal.NewFromInt(500)) {
		t.Fatal("the user's own setting must be kept")
	}
	// Raising the ceiling again leaves the user's own 500 in force.
	v = ts.must(t, &messages.SetCeilingRequest{User: "bob", Settings: messages.PolicySettings{MaxOrderNotionalUSDT: dec("5000")}}, messages.ActorCLIAdmin)
	if !v.Effective.MaxOrderNotionalUSDT.Equal(decimal.NewFromInt(500)) {
		t.Fatalf("effective notional %s, want the user's 500", v.Effective.MaxOrderNotionalUSDT)
	}
}

func TestResetOverridesRemovesOnlyListedFields(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "carol"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.TightenPolicyRequest{User: "carol", Settings: messages.PolicySettings{
		MaxLeverage: dec("2"), MaxPending: intp(1), SlippagePct: dec("0.5"),
	}}, messages.ActorCLIUser)
	v := ts.must(t, &messages.ResetOverridesRequest{User: "carol", Fields: []string{"max_leverage", "max_pending", "allow"}}, messages.ActorCLIAdmin)
	if fmt.Sprint(v.Removed) != "[max_leverage max_pending]" {
		t.Fatalf("removed %v", v.Removed)
	}
	if fmt.Sprint(v.Own.Fields()) != "[slippage_pct]" {
		t.Fatalf("own after reset %v", v.Own.Fields())
	}
	if _, err := ts.do(t, &messages.ResetOverridesRequest{User: "carol", Fields: []string{"no_such_field"}}, messages.ActorCLIAdmin); messages.CodeOf(err) != messages.CodeInvalidParams {
		t.Fatalf("unknown field: %v", err)
	}
	recs := userRecords(t, ts.dir)
	last := recs[len(recs)-1]
	var ev messages.PolicyChangedEvent
	json.Unmarshal(last.Payload, &ev)
	if messages.RecordType(last.Type) != messages.RecordPolicyOverridesReset || last.Actor != messages.ActorCLIAdmin ||
		fmt.Sprint(ev.Fields) != "[max_leverage max_pending]" || ev.Before.MaxLeverage == nil || ev.After.MaxLeverage != nil {
		t.Fatalf("reset record %s %s %+v", messages.RecordType(last.Type), last.Actor, ev)
	}
}

func TestKillSwitchLevels(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "dave"}, messages.ActorCLIAdmin)
	on := func(level messages.KillSwitch, origin string) *messages.PolicyView {
		return ts.must(t, &messages.SetKillSwitchRequest{User: "dave", On: true, Level: level}, origin)
	}
	off := func(level messages.KillSwitch, origin string) (*messages.PolicyView, error) {
		return ts.do(t, &messages.SetKillSwitchRequest{User: "dave", On: false, Level: level}, origin)
	}
	if v := on(messages.KillSwitchUser, messages.ActorAgent); v.KillSwitch != messages.KillSwitchUser || !v.Changed {
		t.Fatalf("agent on: %+v", v)
	}
	if v := on(messages.KillSwitchUser, messages.ActorAgent); v.Changed {
		t.Fatal("repeating on changed state")
	}
	if v, err := off(messages.KillSwitchUser, messages.ActorCLIUser); err != nil || v.KillSwitch != messages.KillSwitchNone {
		t.Fatalf("user off: %v %+v", err, v)
	}
	on(messages.KillSwitchAdmin, messages.ActorCLIAdmin)
	if v := on(messages.KillSwitchUser, messages.ActorAgent); v.KillSwitch != messages.KillSwitchAdmin || v.Changed {
		t.Fatalf("user on over admin: %+v", v)
	}
	if _, err := off(messages.KillSwitchUser, messages.ActorCLIUser); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("user turned off the admin's switch: %v", err)
	}
	if v, err := off(messages.KillSwitchAdmin, messages.ActorCLIAdmin); err != nil || v.KillSwitch != messages.KillSwitchNone {
		t.Fatalf("admin off: %v", err)
	}
	var kinds []string
	for _, r := range userRecords(t, ts.dir) {
		kinds = append(kinds, messages.RecordType(r.Type).String()+"/"+r.Actor)
	}
	// Each switch change is followed by its posture transition, under the
	// same actor.
	want := "[user_created/cli:admin kill_switch_on/mcp:agent posture_changed/mcp:agent kill_switch_off/cli:user posture_changed/cli:user " +
		"kill_switch_on/cli:admin posture_changed/cli:admin kill_switch_off/cli:admin posture_changed/cli:admin]"
	if fmt.Sprint(kinds) != want {
		t.Fatalf("journal %v\nwant %s", kinds, want)
	}
}

// State is rebuilt from the journal through the same Apply, and equals the
// live state.
func TestReplayRebuildsState(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "erin"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetCeilingRequest{User: "erin", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT")}}, messages.ActorCLIAdmin)
	ts.must(t, &messages.TightenPolicyRequest{User: "erin", Settings: messages.PolicySettings{MaxLeverage: dec("3")}}, messages.ActorCLIUser)
	ts.must(t, &messages.SetKillSwitchRequest{User: "erin", On: true, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
	live := ts.must(t, &messages.ShowPolicyRequest{User: "erin"}, messages.ActorCLIUser)
	ts.stop()

	again := startUsers(t, dir)
	rebuilt := again.must(t, &messages.ShowPolicyRequest{User: "erin"}, messages.ActorCLIUser)
	a, _ := json.Marshal(live)
	b, _ := json.Marshal(rebuilt)
	if string(a) != string(b) {
		t.Fatalf("rebuilt state differs:\nlive    %s\nrebuilt %s", a, b)
	}
	list, err := again.Handle(context.Background(), &messages.ListUsersRequest{}, messages.ActorCLIAdmin)
	if err != nil || len(list.(*messages.UserList).Users) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
}

// A panic injected through a test-only message restarts the user actor
// with its state intact; the crashing message gets internal_error and later
// messages are served.
func TestUserActorCrashKeepsState(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "frank"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.TightenPolicyRequest{User: "frank", Settings: messages.PolicySettings{MaxLeverage: dec("4")}}, messages.ActorCLIUser)
	ts.must(t, &messages.SetKillSwitchRequest{User: "frank", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)

	if _, err := ts.askUser(context.Background(), "frank", &crashRequest{}); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("crash answered with %v", err)
	}
	v := ts.must(t, &messages.ShowPolicyRequest{User: "frank"}, messages.ActorCLIUser)
	if v.KillSwitch != messages.KillSwitchUser || v.Own.MaxLeverage == nil || !v.Own.MaxLeverage.Equal(decimal.NewFromInt(4)) {
		t.Fatalf("state after restart: %+v", v)
	}
	v = ts.must(t, &messages.TightenPolicyRequest{User: "frank", Settings: messages.PolicySettings{MaxLeverage: dec("3")}}, messages.ActorCLIUser)
	if !v.Changed {
		t.Fatal("a change after the restart was not applied")
	}
}

// Commands for one user are applied strictly in order, even when they
// arrive concurrently; every acknowledged change is journaled once.
func TestConcurrentCommandsAreSerialised(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ts.must(t, &messages.CreateUserRequest{User: "gina"}, messages.ActorCLIAdmin)
	var wg sync.WaitGroup
	changed := make(chan bool, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := ts.do(t, &messages.TightenPolicyRequest{User: "gina", Settings: messages.PolicySettings{MaxPending: intp(i % 5)}}, messages.ActorCLIUser)
			if messages.CodeOf(err) == messages.CodePermissionDenied {
				return // a looser value than one already applied: refused, as it must be
			}
			if err != nil {
				t.Error(err)
				return
			}
			changed <- v.Changed
		}()
	}
	wg.Wait()
	close(changed)
	n := 0
	for c := range changed {
		if c {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no change was applied")
	}
	recs := userRecords(t, ts.dir)
	if got := len(recs) - 1; got != n {
		t.Fatalf("%d changes acknowledged, %d journaled", n, got)
	}
	// Replaying the journal gives each record's before = the previous after.
	var prev *messages.PolicySettings
	for _, r := range recs[1:] {
		var ev messages.PolicyChangedEvent
		json.Unmarshal(r.Payload, &ev)
		if prev != nil && !ev.Before.Equal(*prev) {
			t.Fatalf("seq %d: before does not follow the previous after", r.Seq)
		}
		prev = &ev.After
	}
}

func TestUnknownUserAndBadNames(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	if _, err := ts.do(t, &messages.ShowPolicyRequest{User: "nobody"}, messages.ActorCLIUser); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("unknown user: %v", err)
	}
	if _, err := ts.do(t, &messages.CreateUserRequest{User: "../root"}, messages.ActorCLIAdmin); messages.CodeOf(err) != messages.CodeInvalidParams {
		t.Fatalf("bad name: %v", err)
	}
	ts.must(t, &messages.CreateUserRequest{User: "hank"}, messages.ActorCLIAdmin)
	if v := ts.must(t, &messages.CreateUserRequest{User: "hank"}, messages.ActorCLIAdmin); v.Changed {
		t.Fatal("creating an existing user changed something")
	}
	ts.must(t, &messages.DisableUserRequest{User: "hank"}, messages.ActorCLIAdmin)
	if _, err := ts.do(t, &messages.TightenPolicyRequest{User: "hank", Settings: messages.PolicySettings{MaxPending: intp(1)}}, messages.ActorCLIUser); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("disabled user tightened: %v", err)
	}
}

func TestDecideGate(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ts := ke.testSystem
	ts.must(t, &messages.CreateUserRequest{User: "ivy"}, messages.ActorCLIAdmin)
	ctx := context.Background()
	base := messages.DecideActionRequest{User: "ivy", Tool: "place_order", Category: messages.CategoryLinear, Symbol: "BTCUSDT",
		NotionalUSDT: decimal.NewFromInt(100), Leverage: decimal.NewFromInt(2), RiskIncreasing: true}
	check := func(name string, r messages.DecideActionRequest, want messages.Code) {
		t.Helper()
		d, err := ts.Decide(ctx, &r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := messages.Code("")
		if d.Err != nil {
			got = d.Err.Code
		}
		if got != want || d.Allowed != (want == "") {
			t.Fatalf("%s: got %q allowed=%v, want %q", name, got, d.Allowed, want)
		}
	}
	check("read_only profile", base, messages.CodePermissionDenied)
	ts.must(t, &messages.SetCeilingRequest{User: "ivy", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT"), MaxOrderNotionalUSDT: dec("500")}}, messages.ActorCLIAdmin)
	check("no exchange key", base, messages.CodeExchangeCredentialsInvalid)
	if _, err := ke.add(t, "ivy", ke.sim.DefaultKey(), false); err != nil {
		t.Fatal(err)
	}
	check("allowed", base, "")
	r := base
	r.Symbol = "ETHUSDT"
	check("not on allowlist", r, messages.CodePermissionDenied)
	r = base
	r.NotionalUSDT = decimal.NewFromInt(501)
	check("over notional", r, messages.CodeLimitExceeded)
	r = base
	r.Leverage = decimal.NewFromInt(11)
	check("over leverage", r, messages.CodeLimitExceeded)
	ts.must(t, &messages.SetKillSwitchRequest{User: "ivy", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	check("kill switch, risk increasing", base, messages.CodeKillSwitchActive)
	r = base
	r.RiskIncreasing = false
	check("kill switch, risk reducing", r, "")
}

// BenchmarkDecision is one policy decision round trip through the user
// actor, without the journal; it reports the median.
func BenchmarkDecision(b *testing.B) {
	ts := startUsers(b, b.TempDir())
	ts.must(b, &messages.CreateUserRequest{User: "bench"}, messages.ActorCLIAdmin)
	r := &messages.DecideActionRequest{User: "bench", Tool: "place_order", Category: messages.CategoryLinear, Symbol: "BTCUSDT", RiskIncreasing: true}
	timeDecisions(b, ts, r)
}

// BenchmarkDecisionJournaled is a refused decision journaled (order_refused)
// before the answer: one group-commit fsync plus the actor work.
func BenchmarkDecisionJournaled(b *testing.B) {
	ts := startUsers(b, b.TempDir())
	ts.must(b, &messages.CreateUserRequest{User: "bench"}, messages.ActorCLIAdmin)
	ts.must(b, &messages.SetKillSwitchRequest{User: "bench", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	r := &messages.DecideActionRequest{User: "bench", Tool: "place_order", Category: messages.CategoryLinear, Symbol: "BTCUSDT", RiskIncreasing: true, JournalRefusal: true}
	timeDecisions(b, ts, r)
}

// timeDecisions runs r through the user actor b.N times and reports the
// median round trip.
func timeDecisions(b *testing.B, ts *testSystem, r *messages.DecideActionRequest) {
	ctx := context.Background()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := ts.Decide(ctx, r); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(float64(medianDur(ds).Nanoseconds())/1000, "p50-µs")
}

// BenchmarkDecisionsConcurrentUsers has 1,000 users deciding at once.
func BenchmarkDecisionsConcurrentUsers(b *testing.B) {
	const users = 1000
	ts := startUsers(b, b.TempDir())
	for i := range users {
		ts.must(b, &messages.CreateUserRequest{User: fmt.Sprintf("u%d", i)}, messages.ActorCLIAdmin)
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	per := max(1, b.N/users)
	var wg sync.WaitGroup
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &messages.DecideActionRequest{User: fmt.Sprintf("u%d", i), Tool: "place_order", RiskIncreasing: true}
			for range per {
				if _, err := ts.Decide(ctx, r); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*users)/time.Since(start).Seconds(), "decisions/s")
}

func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sortDurations(s)
	return s[len(s)/2]
}

// The compacted replay (only the last record of each part of the state is
// applied) gives exactly the state of applying every record in order.
// The venue is the process's, never the caller's: a live process refuses a
// user whose ceiling is demo, whatever the request says.
func TestDecideUsesTheProcessVenue(t *testing.T) {
	ts := startUsersWith(t, t.TempDir(), func(c *Config) { c.Venue, c.Environment = messages.VenueLive, "bybit-live" })
	ts.must(t, &messages.CreateUserRequest{User: "vic"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetCeilingRequest{User: "vic", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT")}}, messages.ActorCLIAdmin)
	d, err := ts.Decide(context.Background(), &messages.DecideActionRequest{User: "vic", Tool: "place_order", Category: messages.CategoryLinear, Symbol: "BTCUSDT", RiskIncreasing: true})
	if err != nil || d.Err == nil || d.Err.Code != messages.CodeVenueNotArmed {
		t.Fatalf("live process, demo ceiling: %v %+v", err, d)
	}
	pol := ts.must(t, &messages.ShowPolicyRequest{User: "vic"}, messages.ActorCLIUser)
	if !pol.Effective.MaxOrderNotionalUSDT.Equal(decimal.NewFromInt(50)) || !pol.Effective.MaxLeverage.Equal(decimal.NewFromInt(3)) {
		t.Fatalf("live defaults %s / x%s", pol.Effective.MaxOrderNotionalUSDT, pol.Effective.MaxLeverage)
	}
}

// A record appended to the journal under a name that may not cause it (the
// agent turning off the admin's kill switch, setting a ceiling) refuses
// start, and the live path refuses the same commands.
func TestForgedOriginsAreRefused(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "wes"}, messages.ActorCLIAdmin)
	ts.must(t, &messages.SetKillSwitchRequest{User: "wes", On: true, Level: messages.KillSwitchAdmin}, messages.ActorCLIAdmin)
	// Live: the agent's channel cannot turn it off or set a ceiling, even if
	// a bug handed it the command.
	if _, err := ts.do(t, &messages.SetKillSwitchRequest{User: "wes", On: false, Level: messages.KillSwitchAdmin}, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("agent turned off the admin switch: %v", err)
	}
	if _, err := ts.do(t, &messages.SetCeilingRequest{User: "wes", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade)}}, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("agent set a ceiling: %v", err)
	}
	if _, err := ts.do(t, &messages.CreateUserRequest{User: "eve"}, messages.ActorAgent); messages.CodeOf(err) != messages.CodePermissionDenied {
		t.Fatalf("agent created a user: %v", err)
	}
	// Forged: append kill_switch_off {admin -> none} as mcp:agent.
	if _, err := ts.journalJSON(context.Background(), messages.RecordKillSwitchOff, "wes", messages.ActorAgent,
		messages.KillSwitchEvent{Before: messages.KillSwitchAdmin, After: messages.KillSwitchNone}); err != nil {
		t.Fatal(err)
	}
	ts.stop()
	replay := NewUserReplay()
	_, _, err := wal.Open(dir, wal.Options{OnRecord: replay.OnRecord})
	if err == nil || !strings.Contains(err.Error(), "kill_switch_off") || !strings.Contains(err.Error(), "mcp:agent") {
		t.Fatalf("a forged kill_switch_off did not refuse start: %v", err)
	}
}

// A direct journal write refuses every type that is not the server's
// own. (That the record table and the replay code agree is
// TestRecordTableMatchesReplay in actors/state.)
func TestJournalJSONWritesOnlySystemRecords(t *testing.T) {
	ts := startUsers(t, t.TempDir())
	ctx := context.Background()
	for _, info := range messages.RecordTypes {
		_, err := ts.JournalJSON(ctx, info.Type, "", messages.ActorSystem, map[string]any{})
		if (err == nil) != (info.Writer == messages.WriterSystem) {
			t.Errorf("JournalJSON(%s): %v", info.Name, err)
		}
	}
	if _, err := ts.JournalJSON(ctx, messages.RecordServerStarted, "", messages.ActorAgent, map[string]any{}); err == nil {
		t.Error("JournalJSON wrote a system record under the agent's name")
	}
	if _, err := ts.JournalJSON(ctx, messages.RecordServerStarted, "kim", messages.ActorSystem, map[string]any{}); err == nil {
		t.Error("JournalJSON wrote a system record for a user")
	}
}
