package actors

import (
	"context"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
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
