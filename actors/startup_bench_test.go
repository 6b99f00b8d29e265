package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// buildJournal writes users user_created records, then policy_tightened
// and tool_call records until total records, in large batches.
func buildJournal(tb testing.TB, dir string, users, total int) {
	tb.Helper()
	l, _, err := wal.Open(dir, wal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	now := time.Now().UTC()
	batch := make([]wal.Entry, 0, 8192)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := l.Append(batch); err != nil {
			tb.Fatal(err)
		}
		batch = batch[:0]
	}
	tightened, _ := json.Marshal(messages.PolicyChangedEvent{Fields: []string{"max_leverage"},
		After: messages.PolicySettings{MaxPending: intp(3)}})
	toolCall, _ := json.Marshal(messages.ToolCalled{User: "u", Profile: "read_only", Tool: "get_ticker", ArgsSHA256: fmt.Sprintf("%064d", 0), Admitted: true})
	for i := range total {
		e := wal.Entry{Time: now, Actor: messages.ActorCLIAdmin}
		switch {
		case i < users:
			e.Type, e.User = uint16(messages.RecordUserCreated), fmt.Sprintf("user%06d", i)
			e.Payload, _ = json.Marshal(state.NewUserEvent(e.User, messages.PolicySettings{}).Payload)
		case i%2 == 0:
			e.Type, e.User, e.Actor, e.Payload = uint16(messages.RecordPolicyTightened), fmt.Sprintf("user%06d", i%users), messages.ActorCLIUser, tightened
		default:
			e.Type, e.User, e.Actor, e.Payload = uint16(messages.RecordToolCall), fmt.Sprintf("user%06d", i%users), messages.ActorAgent, toolCall
		}
		batch = append(batch, e)
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
}

// BenchmarkStartup100kUsers1MRecords measures start-up to ready: open and
// verify the whole journal, replay every user record through Apply, and
// spawn one actor per user. Set GX_BENCH_STARTUP_RECORDS to change the size.
func BenchmarkStartup100kUsers1MRecords(b *testing.B) {
	users, total := 100_000, 1_000_000
	if v := os.Getenv("GX_BENCH_STARTUP_RECORDS"); v != "" {
		fmt.Sscan(v, &total)
	}
	dir := b.TempDir()
	buildJournal(b, dir, users, total)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		replay := NewUserReplay()
		l, _, err := wal.Open(dir, wal.Options{OnRecord: replay.OnRecord})
		if err != nil {
			b.Fatal(err)
		}
		opened := time.Since(start)
		sys, err := Start(Config{Journal: l, Users: replay, Venue: messages.VenuePaper})
		if err != nil {
			b.Fatal(err)
		}
		ready := time.Since(start)
		b.ReportMetric(opened.Seconds(), "open+replay-s")
		b.ReportMetric(ready.Seconds(), "ready-s")
		b.StopTimer()
		sys.Stop()
		l.Close()
		b.StartTimer()
	}
}

// BenchmarkIdleUserActorMemory reports the heap held per idle user actor
// with its state.
func BenchmarkIdleUserActorMemory(b *testing.B) {
	const users = 20_000
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		buildJournal(b, dir, users, users)
		replay := NewUserReplay()
		l, _, err := wal.Open(dir, wal.Options{OnRecord: replay.OnRecord})
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		sys, err := Start(Config{Journal: l, Users: replay, Venue: messages.VenuePaper})
		if err != nil {
			b.Fatal(err)
		}
		// User actors start on first use: touch every one.
		for i := range users {
			if _, err := sys.Handle(context.Background(), &messages.ShowPolicyRequest{User: fmt.Sprintf("user%06d", i)}, messages.ActorCLIUser); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		replay = nil
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/users, "B/user")
		sys.Stop()
		l.Close()
		b.StartTimer()
	}
}
