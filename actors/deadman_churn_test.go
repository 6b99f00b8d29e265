package actors

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// In the inner half of the disk's last reserve every agent call is refused
// before anything is journaled, and sessions opened and closed in a loop
// (cancel_on_disconnect on, nothing to cancel) journal nothing either: a
// trigger that cancels nothing is logged, not journaled (D86), so the space
// kept for the human's kill switch stays free.
func TestSessionChurnLeavesTheInnerReserve(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	on := true
	te.must(t, &messages.TightenPolicyRequest{User: te.user, Settings: messages.PolicySettings{CancelOnDisconnect: &on}}, messages.ActorCLIUser)
	te.stop()
	te.configure = func(c *Config) { c.JournalDir, c.DiskFloorBytes = dir, 1<<62 }
	te.testSystem = te.start(t, dir)
	time.Sleep(time.Second) // let the venue session come up after the restart
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// the agent itself is refused in the inner reserve
	_, err := te.ToolCalled(ctx, &messages.ToolCalled{User: te.user, Profile: "trader", Tool: "place_order", Admitted: true,
		ArgsSHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}, true)
	wantDiskReserve(t, "agent place_order", err)
	before := countRecords(t, dir, messages.RecordDeadmanTriggered)
	const cycles = 40
	start := time.Now()
	for i := 0; i < cycles; i++ {
		te.SessionEvent(ctx, te.user, messages.SessionOpened)
		te.SessionEvent(ctx, te.user, messages.SessionClosed)
	}
	el := time.Since(start)
	after := countRecords(t, dir, messages.RecordDeadmanTriggered)
	sz := 0
	for _, r := range scanAll(t, dir) {
		if messages.RecordType(r.Type) == messages.RecordDeadmanTriggered {
			sz = len(r.Payload) + len(r.Actor) + len(r.User)
		}
	}
	t.Logf("payload+actor+user of one record: %d B", sz)
	t.Logf("%d session cycles in %v wrote %d deadman_triggered records in the inner reserve", cycles, el, after-before)
	if after-before <= 2 {
		t.Logf("log: %s", te.buf.String())
	}
	if after-before > 2 {
		t.Fatalf("agent-driven session churn journaled %d records below the inner floor (no tool call, nothing to cancel)", after-before)
	}
}

// Between the floor and the inner floor a call of a tool that does not
// exist (or is not offered to the profile) is refused by the MCP guard
// without doing anything, and its tool_call is not journaled: the agent
// cannot spend the last reserve on no-ops (D86).
func TestRefusedToolCallsAreNotJournaledInTheReserve(t *testing.T) {
	ts := reserveUser(t, func(dir string) uint64 { return freeOf(t, dir) / 2 * 3 })
	ctx := context.Background()
	const n = 50
	for i := 0; i < n; i++ {
		call := &messages.ToolCalled{User: "alice", Profile: "read_only", Tool: "(unknown)", Admitted: false, ArgsSHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}
		wait, err := ts.ToolCalled(ctx, call, true) // the guard passes durable=true for unknown tools
		if err != nil {
			t.Fatalf("unknown tool in reserve: %v", err)
		}
		if wait != nil {
			if err := wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	var calls int
	for _, r := range ts.records(t) {
		if messages.RecordType(r.Type) == messages.RecordToolCall {
			calls++
		}
	}
	if calls > 0 {
		t.Fatalf("%d tool_call records of an unknown tool journaled in the last reserve", calls)
	}
}

// A daily_pnl_noted record appended outside the server that drops a
// position the day's record before it counted (to erase the day's realised
// loss) refuses start (D86), like a forged posture record (D83).
func TestForgedDailyPnlCannotEraseTheDaysLoss(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	day := time.Now().UTC().Format(time.DateOnly)
	row := messages.DailyPnlRow{Category: messages.CategoryLinear, Symbol: "BTCUSDT", CumRealisedPnl: decimal.RequireFromString("-5000"), RealisedUSDT: decimal.RequireFromString("-5000")}
	forge(t, ts.log, messages.RecordDailyPnlNoted, "alice", messages.ActorSystem, messages.DailyPnlEvent{Day: day, Rows: []messages.DailyPnlRow{row}})
	forge(t, ts.log, messages.RecordDailyPnlNoted, "alice", messages.ActorSystem, messages.DailyPnlEvent{Day: day, Rows: []messages.DailyPnlRow{}})
	ts.stop()
	r, err := reopen(t, dir)
	if err != nil {
		t.Logf("start refused: %v", err)
		return
	}
	st, err := r.states(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := newStreamCache()
	c.restoreDay(st["alice"].DailyPnlOn("paper"), time.Now())
	if loss := c.dailyLoss(time.Now()); !loss.Equal(decimal.RequireFromString("5000")) {
		t.Fatalf("after a forged daily_pnl_noted the day's loss is %s, want 5000 (start was not refused)", loss)
	}
}

// The first message for a user whose actor is not running goes through
// the user's supervisor, which forwards it; the next one goes straight to
// the user actor. A session that opens and ends at once right after start
// can have its end counted before its open: the count goes below zero for
// a moment and the open that brings it back ends the last session (D86),
// so a later session's end still fires cancel_on_disconnect.
func TestSessionEndOvertakingItsOpenStillFires(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	on := true
	te.must(t, &messages.TightenPolicyRequest{User: te.user, Settings: messages.PolicySettings{CancelOnDisconnect: &on}}, messages.ActorCLIUser)
	te.stop()
	te.testSystem = te.start(t, dir) // the user's actor is not started: no heartbeat, nothing live
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a session that opens and ends at once, as the first thing after start
	te.SessionEvent(ctx, te.user, messages.SessionOpened)
	te.SessionEvent(ctx, te.user, messages.SessionClosed)
	time.Sleep(1500 * time.Millisecond)
	first := strings.Count(te.buf.String(), `"msg":"dead-man switch fired"`)
	// later, an ordinary session: opens, lives, ends
	te.SessionEvent(ctx, te.user, messages.SessionOpened)
	time.Sleep(200 * time.Millisecond)
	te.SessionEvent(ctx, te.user, messages.SessionClosed)
	time.Sleep(500 * time.Millisecond)
	total := strings.Count(te.buf.String(), `"msg":"dead-man switch fired"`)
	t.Logf("fired after the first session: %d, after the second: %d", first, total-first)
	if total-first != 1 {
		t.Fatalf("the second session's end did not fire cancel_on_disconnect (fired %d times in all)", total)
	}
}
