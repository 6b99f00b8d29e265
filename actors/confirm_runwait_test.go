package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// TestApprovedCancelAllKeepsItsNumberingPastItsWait: an approved
// cancel_all_orders runs up to its own bound (stepBounds.cancelAll: 20
// paced writes). Should the wait for its answer still end first, the run
// goes on sending, so its numbering must stay: a reset one gave a child
// cancel the parent's client order id, its order_attempt overwrote the
// parent's open attempt, and the key's entry never settled.
//
// The wait's end is not waited for here: the confirmDone that the
// executor's future goroutine sends when it times out is sent while the
// run is in flight, exactly as it would be.
func TestApprovedCancelAllKeepsItsNumberingPastItsWait(t *testing.T) {
	ce := newConfirmEnv(t, true, "cancel_all_orders")
	for _, p := range []string{"30000", "30000.1", "30000.2", "30000.3"} {
		if _, e := ce.place(t, limitArgs("0.01", p)); e != nil {
			t.Fatal(e)
		}
	}
	res, e := ce.call(t, &messages.CancelAllCommand{User: ce.user, Args: messages.CancelAllArgs{Category: messages.CategoryLinear,
		Symbol: "BTCUSDT", IdempotencyKey: "runwait-k1"}})
	if e != nil {
		t.Fatal(e)
	}
	p := res.(*messages.ConfirmationPending)
	// Each cancel answers slowly (inside its own bound).
	ce.simPost(t, "/sim/faults", `{"kind":"delay","path":"/v5/order/cancel","count":4,"delay_ms":700}`)

	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ce.decide(p.ConfirmationID, messages.DecisionApprove, cliOrigin)
	}()
	// Once the first cancel is on the wire, the run's 2-minute future
	// "times out".
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if seen, _ := ce.faultSeen(t, "/v5/order/cancel"); seen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no cancel was sent")
		}
	}
	pid := ce.registry.get(ce.user)
	if pid == nil {
		t.Fatal("no user actor")
	}
	ce.sys.Root.Send(pid, &confirmDone{id: p.ConfirmationID, err: actor.ErrTimeout})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("approval did not answer")
	}
	// Let the run finish its remaining cancels: every delayed cancel
	// sent, and every attempt journaled has its outcome.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		seen, _ := ce.faultSeen(t, "/v5/order/cancel")
		attempts, outcomes := 0, 0
		for _, g := range journalOf(t, ce.dir) {
			switch {
			case strings.HasPrefix(g, "order_attempt:"):
				attempts++
			case strings.HasPrefix(g, "order_outcome:"):
				outcomes++
			}
		}
		if seen >= 4 && outcomes >= attempts {
			break
		}
	}

	seen := map[string]int{}
	for _, id := range attemptsJournaled(t, ce.dir) {
		seen[id]++
	}
	var dup []string
	for id, n := range seen {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s x%d", id, n))
		}
	}
	if len(dup) > 0 {
		t.Errorf("client order ids journaled in more than one order_attempt: %v (journal: %v)", dup, journalOf(t, ce.dir))
	}
	// The key's claim settles with the run's answer.
	res, err := ce.Submit(context.Background(), &messages.CancelAllCommand{User: ce.user, Args: messages.CancelAllArgs{Category: messages.CategoryLinear,
		Symbol: "BTCUSDT", IdempotencyKey: "runwait-k1"}}, agentOrigin)
	if err != nil && messages.CodeOf(err) == messages.CodeOutcomeUnknown {
		t.Errorf("a repeat of the key after the run ended still answers %v", err)
	}
	_ = res
}
