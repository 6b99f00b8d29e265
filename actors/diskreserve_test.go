package actors

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// freeOf is the free space of dir's file system, as the journal measures it.
func freeOf(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize)
}

// readCall is the tool_call the MCP guard queues for a get_posture call.
func readCall() *messages.ToolCalled {
	return &messages.ToolCalled{User: "alice", Profile: "read_only", Tool: "get_posture", Admitted: true,
		ArgsSHA256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}
}

// reserveUser creates alice, then starts the system again with the given
// last reserve over the journal's directory.
func reserveUser(t *testing.T, floor func(dir string) uint64) *testSystem {
	t.Helper()
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	ts.stop()
	f := floor(dir)
	return startUsersWith(t, dir, func(c *Config) { c.JournalDir, c.DiskFloorBytes = dir, f })
}

func wantDiskReserve(t *testing.T, what string, err error) {
	t.Helper()
	if e := messages.AsError(err); e == nil || e.Details["reason"] != "disk_reserve" {
		t.Fatalf("%s: want internal_error with reason disk_reserve, got %v", what, err)
	}
}

// In the last reserve (the free space is between half the floor and the
// floor) the agent's read calls are answered but their tool_call records
// are not journaled, so reads alone cannot use up the reserve; a call of a
// tool that is not a read is still journaled (closing and cancelling must
// work there).
func TestDiskReserveDoesNotJournalAgentReads(t *testing.T) {
	ts := reserveUser(t, func(dir string) uint64 { return freeOf(t, dir) / 2 * 3 })
	ctx := context.Background()
	const reads = 200
	for i := 0; i < reads; i++ {
		wait, err := ts.ToolCalled(ctx, readCall(), false)
		if err != nil || wait != nil {
			t.Fatalf("a read tool's call in the last reserve: wait %v, err %v", wait != nil, err)
		}
	}
	if n := ts.readsNotJournaled.Load(); n != reads {
		t.Fatalf("reads counted as not journaled: %d, want %d", n, reads)
	}
	write := &messages.ToolCalled{User: "alice", Profile: "trade", Tool: "cancel_order", Admitted: true, ArgsSHA256: strings.Repeat("0", 64)}
	wait, err := ts.ToolCalled(ctx, write, true)
	if err != nil {
		t.Fatalf("a cancel's call in the last reserve: %v", err)
	}
	if err := wait(ctx); err != nil {
		t.Fatalf("a cancel's tool_call in the last reserve: %v", err)
	}
	var calls int
	for _, r := range ts.records(t) {
		if messages.RecordType(r.Type) == messages.RecordToolCall {
			calls++
		}
	}
	if calls != 1 {
		t.Fatalf("tool_call records: %d, want the cancel's alone", calls)
	}
}

// In the inner half of the last reserve no call of the agent is journaled
// (it cannot eat what is left; a call that could change something is
// refused, except activate_kill_switch, which goes on without its
// tool_call), while a human still turns the kill switch
// on and the journal still takes the dead-man switch's and the action
// path's records.
func TestDiskInnerReserveKeepsTheKillSwitchAndRefusesTheAgent(t *testing.T) {
	ts := reserveUser(t, func(string) uint64 { return 1 << 62 })
	ctx := context.Background()
	write := &messages.ToolCalled{User: "alice", Profile: "trade", Tool: "close_position", Admitted: true, ArgsSHA256: strings.Repeat("0", 64)}
	_, err := ts.ToolCalled(ctx, write, true)
	wantDiskReserve(t, "an agent's close in the inner reserve", err)
	if wait, err := ts.ToolCalled(ctx, readCall(), false); err != nil || wait != nil {
		t.Fatalf("a read in the inner reserve: wait %v, err %v", wait != nil, err)
	}
	agentKill := &messages.ToolCalled{User: "alice", Profile: "trade", Tool: "activate_kill_switch", Admitted: true, ArgsSHA256: strings.Repeat("0", 64)}
	if wait, err := ts.ToolCalled(ctx, agentKill, true); err != nil || wait != nil {
		t.Fatalf("the agent's activate_kill_switch in the inner reserve: wait %v, err %v", wait != nil, err)
	}
	agentKill.Admitted = false
	_, err = ts.ToolCalled(ctx, agentKill, true)
	wantDiskReserve(t, "a refused activate_kill_switch in the inner reserve", err)
	hb := 60
	_, err = ts.Handle(ctx, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{HeartbeatS: &hb}}, messages.ActorCLIUser)
	wantDiskReserve(t, "a policy change in the inner reserve", err)
	if _, err := ts.Handle(ctx, &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		t.Fatalf("the kill switch in the inner reserve: %v", err)
	}
	for _, typ := range []messages.RecordType{messages.RecordDeadmanTriggered, messages.RecordOrderAttempt, messages.RecordOrderOutcome} {
		if ts.System.disk.Refuses(typ) {
			t.Errorf("the inner reserve refuses %s", typ)
		}
	}
	// The private stream's audit trail stays out of the inner reserve: a
	// flood of pushes cannot use it up.
	for _, typ := range []messages.RecordType{messages.RecordVenueUpdate, messages.RecordStreamDropped} {
		if !ts.System.disk.Refuses(typ) {
			t.Errorf("the inner reserve takes %s", typ)
		}
	}
	if !ts.System.disk.Refuses(messages.RecordToolCall) {
		t.Error("the inner reserve takes a tool_call")
	}
	var kill bool
	for _, r := range ts.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordKillSwitchOn:
			kill = true
		case messages.RecordToolCall, messages.RecordPolicyTightened:
			t.Errorf("journaled in the inner reserve: %s", messages.RecordType(r.Type))
		}
	}
	if !kill {
		t.Fatal("the kill switch going on was not journaled in the inner reserve")
	}
}

// In the disk's last reserve the dead-man switch still journals its
// trigger (and so goes on to its cancels): deadman_triggered is written
// down to the inner floor.
func TestDeadmanJournalsItsTriggerInTheLastReserve(t *testing.T) {
	dir := t.TempDir()
	ts := startUsers(t, dir)
	ts.must(t, &messages.CreateUserRequest{User: "alice"}, messages.ActorCLIAdmin)
	on := true
	ts.must(t, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{CancelOnDisconnect: &on}}, messages.ActorCLIUser)
	ts.stop()
	ts = startUsersWith(t, dir, func(c *Config) { c.JournalDir, c.DiskFloorBytes = dir, 1<<62 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts.SessionEvent(ctx, "alice", messages.SessionOpened)
	ts.SessionEvent(ctx, "alice", messages.SessionClosed)
	if strings.Contains(ts.buf.String(), "could not journal its trigger") {
		t.Fatalf("the dead-man switch could not journal its trigger in the last reserve: %s", ts.buf.String())
	}
	var triggers int
	for _, r := range ts.records(t) {
		if messages.RecordType(r.Type) == messages.RecordDeadmanTriggered {
			triggers++
		}
	}
	if triggers == 0 {
		t.Fatal("no deadman_triggered record in the last reserve")
	}
}

// In the last reserve the counts of refused calls and refused sessions
// are not written: the journal writer refuses every record that is not
// essential, whichever path queued it (both are queued without waiting).
func TestDiskReserveDropsRefusalCounts(t *testing.T) {
	ts := reserveUser(t, func(dir string) uint64 { return freeOf(t, dir) + 1<<30 })
	ctx := context.Background()
	now := time.Now().UTC()
	if err := ts.CallsRateLimited(&messages.CallsRateLimitedEvent{User: "alice", TokenID: "tok_a", Count: 3, Since: now, Until: now}); err != nil {
		t.Fatal(err)
	}
	if err := ts.SessionsRefused(&messages.SessionsRefusedEvent{User: "alice", TokenID: "tok_a", Count: 3, Since: now, Until: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Handle(ctx, &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		t.Fatalf("the kill switch in the last reserve: %v", err)
	}
	for _, r := range ts.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordCallsRateLimited, messages.RecordSessionsRefused:
			t.Errorf("journaled in the last reserve: %s", messages.RecordType(r.Type))
		}
	}
}
