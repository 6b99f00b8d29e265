package actors

import (
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// An approval in the journal's last reserve is refused as the reserve
// refuses it (disk_reserve), and nothing is applied: the approval record is
// not essential there, and refusing it must not take the journal down, or
// the human could no longer turn the kill switch on.
func TestApprovalInDiskReserveKeepsTheJournal(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	ce.stop()
	prev := ce.configure
	floor := freeOf(t, ce.dir) / 2 * 3 // the last reserve's outer half
	ce.configure = func(c *Config) {
		prev(c)
		c.JournalDir, c.DiskFloorBytes = ce.dir, floor
	}
	ce.testSystem = ce.start(t, ce.dir)
	_, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	wantDiskReserve(t, "an approval in the last reserve", e)
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusPending {
		t.Fatalf("status after a refused approval: %s, want pending", st.Status)
	}
	if _, err := ce.Handle(context.Background(), &messages.SetKillSwitchRequest{User: ce.user, On: true, Level: messages.KillSwitchUser}, messages.ActorCLIUser); err != nil {
		t.Fatalf("the kill switch after an approval in the last reserve: %v", err)
	}
	if ce.simCount(t, "gx-cf-") != 0 {
		t.Fatal("an approval refused by the reserve was sent")
	}
}

// An approved order whose outcome is unknown (the venue answered 5xx and
// the order was not found by its client order id) is settled by its
// order_outcome alone, as before the run's end rode that outcome: no end
// record claims the run failed with outcome_unknown; the decider gets
// outcome_unknown.
func TestApprovedUnknownOutcomeJournalsNoEnd(t *testing.T) {
	ce := newConfirmEnv(t, true, "place_order")
	p := ce.park(t, limitArgs("0.01", "30000"))
	ce.fault(t, "http_5xx", venue.PathOrderCreate)
	_, e := ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	if e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["reconnaissance"] != "not_found" {
		t.Fatalf("approval of an order the venue never placed: %v", e)
	}
	exe, _ := recordsOf[messages.ConfirmationExecutedEvent](t, ce.dir, messages.RecordConfirmationExecuted)
	if len(exe) != 1 || exe[0].Status != messages.ConfirmStatusExecuting {
		t.Fatalf("confirmation_executed records %+v, want the executing one alone", exe)
	}
	if st := ce.status(t, p.ConfirmationID); st.Status != messages.ConfirmStatusFailed || st.Error != nil {
		t.Fatalf("status %s error %v, want failed as the outcome settled it", st.Status, st.Error)
	}
}
