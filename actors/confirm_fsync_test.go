package actors

import (
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// An approval of a single order costs two journal fsyncs, counted on the
// writer: the order_attempt, which carries the approval and the start of
// the execution (both NoSync), and the order_outcome, which carries the
// run's end. Every record is durable when the decider is answered, in the
// order approval, start, attempt, outcome, end.
func TestApprovalCostsTwoFsyncs(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnvWith(t, dir, func(c *Config) {
		c.ConfirmCLI = true
		c.PostureEvery = -1 // no posture record of its own in between
	})
	te.tradeReady(t, messages.PolicySettings{ConfirmActions: strs("place_order"), ConfirmationTTLS: intp(60), MaxPending: intp(3)})
	ce := &confirmEnv{tradeEnv: te, dir: dir}
	for i, key := range []string{"fs-1", "fs-2"} {
		p := ce.park(t, cfMarketArgs("0.001", key))
		before := ce.Flushes()
		res, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
		if e != nil {
			t.Fatal(e)
		}
		if ans, ok := res.(*messages.OrderAnswer); !ok || ans.Status != messages.AnswerAccepted {
			t.Fatalf("approval %d answered %+v", i, res)
		}
		n := ce.Flushes() - before
		var got []messages.RecordType
		// The private stream's venue_update may come in between (at most
		// one every 200 ms): it may take an fsync of its own.
		pushed := 0
		err := wal.Scan(dir, func(r wal.Record) error {
			switch typ := messages.RecordType(r.Type); typ {
			case messages.RecordVenueUpdate:
				if len(got) > 5*i {
					pushed++
				}
			case messages.RecordConfirmationDecided, messages.RecordConfirmationExecuted, messages.RecordOrderAttempt, messages.RecordOrderOutcome:
				got = append(got, typ)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 2 || n > uint64(2+pushed) {
			t.Fatalf("approval %d took %d fsyncs (%d of them may be the stream's), want 2", i, n, pushed)
		}
		want := []messages.RecordType{messages.RecordConfirmationDecided, messages.RecordConfirmationExecuted,
			messages.RecordOrderAttempt, messages.RecordOrderOutcome, messages.RecordConfirmationExecuted}
		if len(got) != 5*(i+1) {
			t.Fatalf("approval %d: journal holds %v", i, got)
		}
		for j, typ := range got[5*i:] {
			if typ != want[j] {
				t.Fatalf("approval %d: records %v, want %v", i, got[5*i:], want)
			}
		}
	}
}

// A crash after an approved order's outcome and before the run's end
// (they share an fsync, but the outcome may go in the batch before) leaves
// the outcome alone: replay settles the confirmation from it, executed
// with the order's answer, and nothing is sent again.
func TestApprovedOutcomeWithoutItsEndReplays(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, cfMarketArgs("0.001", "k-cut"))
	if _, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin); e != nil {
		t.Fatal(e)
	}
	ce.stop()
	var recs []wal.Record
	if err := wal.Scan(ce.dir, func(r wal.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	end := -1
	for i, r := range recs {
		if messages.RecordType(r.Type) == messages.RecordConfirmationExecuted {
			end = i // the last one: the run's end
		}
	}
	if end < 1 || messages.RecordType(recs[end-1].Type) != messages.RecordOrderOutcome {
		t.Fatalf("the run's end is not right behind its outcome (at %d)", end)
	}
	cut := t.TempDir()
	l, _, err := wal.Open(cut, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []wal.Entry
	for i, r := range recs {
		if i != end {
			entries = append(entries, wal.Entry{Time: r.Time, Type: r.Type, User: r.User, Actor: r.Actor, Channel: r.Channel, Payload: r.Payload})
		}
	}
	if _, err := l.Append(entries); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ce.dir = cut
	ce.testSystem = ce.start(t, cut)
	st := ce.status(t, p.ConfirmationID)
	if st.Status != messages.ConfirmStatusExecuted || len(st.Result) == 0 {
		t.Fatalf("replayed without the end: %+v", st)
	}
	if n := ce.simCount(t, confirmClientOrderID(p.ConfirmationID, 1)); n != 1 {
		t.Fatalf("%d orders on the venue, want 1", n)
	}
}
