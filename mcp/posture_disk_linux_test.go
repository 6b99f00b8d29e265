package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// freeBytes is the free space of dir's file system, as the server
// measures it.
func freeBytes(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize)
}

// A small disk budget: the margin sits 512 MiB below the free space; a
// 1 GiB file in the journal's directory (allocated for real) takes the
// disk below it, and removing it brings it back.
func TestPostureDiskLowEntersAndLeavesByItself(t *testing.T) {
	probe := t.TempDir()
	const gap, ballast = 512 << 20, 1 << 30
	free := freeBytes(t, probe)
	if free < 2*ballast {
		t.Fatalf("the test needs %d free bytes, the disk has %d", 2*ballast, free)
	}
	e := newPostureEnv(t, postureConfig{diskMargin: free - actors.DefaultDiskFloor - gap})
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)

	release := fillDisk(t, e.dir, ballast)
	p := waitPosture(t, cs, 5*time.Second, "REDUCING for disk_low", stateIs("REDUCING", messages.CauseDiskLow))
	if d := p["disk"].(map[string]any); d["free_bytes"].(float64) >= d["margin_bytes"].(float64) {
		t.Fatalf("disk under disk_low: %v", d)
	}
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, out, isErr, messages.CauseDiskLow)

	release()
	waitPosture(t, cs, 5*time.Second, "ACTIVE once the space is back", stateIs("ACTIVE"))
	if out, isErr := callJSON(t, cs, "place_order", limitBuy("30000")); isErr {
		t.Fatalf("a new order once the disk has room: %v", out)
	}
	recs := postureRecords(t, e)
	if !hasTransition(t, recs, messages.ActorSystem, messages.CauseDiskLow, "ACTIVE", "REDUCING") ||
		!hasTransition(t, recs, messages.ActorSystem, messages.CauseDiskLow+"_cleared", "REDUCING", "ACTIVE") {
		t.Fatalf("the journal does not show disk_low entering and clearing: %d posture records", len(recs))
	}
}

// fillDisk allocates a file of n bytes in dir (for real, so the free
// space drops) and returns a function that removes it.
func fillDisk(t *testing.T, dir string, n int64) func() {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		t.Fatalf("fallocate: %v", err)
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// In the disk's last reserve (here: a floor 512 MiB below the free space,
// and 1 GiB taken), with no margin at all, the journal refuses what can
// wait (a policy change) but still journals the kill switch going on and
// risk-reducing actions.
func TestDiskReserveKeepsTheKillSwitchAndWaysOut(t *testing.T) {
	probe := t.TempDir()
	e := newPostureEnv(t, postureConfig{diskFloor: freeBytes(t, probe) - 512<<20})
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade)}, "")
	waitPosture(t, cs, 10*time.Second, "ACTIVE with the stream connected", streamConnected)
	fillDisk(t, e.dir, 1<<30)
	waitPosture(t, cs, 10*time.Second, "REDUCING for disk_low", stateIs("REDUCING", messages.CauseDiskLow))
	ctx := context.Background()
	lev := decp("3")
	_, err := e.sys.Handle(ctx, &messages.TightenPolicyRequest{User: "alice", Settings: messages.PolicySettings{MaxLeverage: lev}}, messages.ActorCLIUser)
	if d := messages.AsError(err); d == nil || d.Details["reason"] != "disk_reserve" {
		t.Fatalf("a policy change in the disk's last reserve: want disk_reserve, got %v", err)
	}
	out, isErr := callJSON(t, cs, "place_order", limitBuy("30000"))
	refusedForPosture(t, out, isErr, messages.CauseDiskLow)
	if out, isErr := callJSON(t, cs, "set_leverage", map[string]any{"symbol": "BTCUSDT", "category": "linear", "leverage": "1"}); isErr {
		t.Fatalf("lowering leverage in the disk's last reserve: %v", out)
	}
	if out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{}); isErr || out["kill_switch"] != "user" {
		t.Fatalf("kill switch in the disk's last reserve: %v", out)
	}
	if p := posture(t, cs); p["state"] != "HALTED" {
		t.Fatalf("posture after the kill switch: %v", p)
	}
	var kill, lowered bool
	for _, r := range e.records(t) {
		switch messages.RecordType(r.Type) {
		case messages.RecordKillSwitchOn:
			kill = true
		case messages.RecordOrderOutcome:
			lowered = true
		case messages.RecordPolicyTightened:
			t.Fatal("a policy change was journaled in the last reserve")
		}
	}
	if !kill || !lowered {
		t.Fatalf("kill switch journaled %v, leverage outcome journaled %v", kill, lowered)
	}
}

// In the last reserve a human cannot turn the kill switch off (that can
// wait for space), and no posture record claims it went off.
func TestDiskReserveKeepsTheKillSwitchOn(t *testing.T) {
	probe := t.TempDir()
	e := newPostureEnv(t, postureConfig{diskFloor: freeBytes(t, probe) - 512<<20})
	ctx := context.Background()
	if _, err := e.sys.Handle(ctx, &messages.SetKillSwitchRequest{User: "alice", On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		t.Fatal(err)
	}
	fillDisk(t, e.dir, 1<<30)
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(postureOf(t, e, "alice").Why, messages.CauseDiskLow) {
		if time.Now().After(deadline) {
			t.Fatal("disk_low never showed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err := e.sys.Handle(ctx, &messages.SetKillSwitchRequest{User: "alice", On: false, Level: messages.KillSwitchUser}, messages.ActorCLIUser)
	if d := messages.AsError(err); d == nil || d.Details["reason"] != "disk_reserve" {
		t.Fatalf("kill switch off in the last reserve: want disk_reserve, got %v", err)
	}
	res, err := e.sys.Handle(ctx, &messages.ShowPostureRequest{User: "alice"}, messages.ActorCLIUser)
	if err != nil || res.(*messages.PostureView).State != messages.PostureHalted {
		t.Fatalf("posture: %v %+v", err, res)
	}
	for _, r := range postureRecords(t, e) {
		var p messages.PostureChangedEvent
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Reason == "kill_switch_off" {
			t.Fatalf("a posture record says the switch went off: %s", r.Payload)
		}
	}
}
