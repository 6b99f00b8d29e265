package actors

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Start-up never waits on the network: with an open attempt to reconcile
// and a venue that accepts connections and never answers, the user's
// actors start at once, reads are served, and a trading call waits for
// the reconciliation only a bounded time, then is told so
// (exchange_unavailable, reason "reconciling", retry_after_s) with nothing
// journaled or sent. Once the lookup ends, calls go through again.
func TestTradingCallWaitsBoundedForRecovery(t *testing.T) {
	var hang atomic.Bool
	release := make(chan struct{})
	const wait = 300 * time.Millisecond
	ts := startStack(t, stack{SimOptions: hanging(funded, &hang, release), Users: []string{"rae"}, Configure: func(c *Config) {
		c.RequestTimeout, c.RecoveryWait = 20*time.Second, wait
	}})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	dir := ts.dir
	ts.addDefaultKey(t, "rae")
	ts.must(t, &messages.SetCeilingRequest{User: "rae", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT"),
		ConfirmActions: strs(), VenueCeiling: venueLevel(messages.VenuePaper)}}, messages.ActorCLIAdmin)
	now := time.Now().UTC()
	payload, _ := json.Marshal(messages.OrderAttemptEvent{ActionID: "gx-open", ClientOrderID: "gx-open", Environment: "paper", Tool: "place_order",
		Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: now, NotionalUSDT: decimal.NewFromInt(100), RiskIncreasing: true})
	if _, err := ts.log.Append([]wal.Entry{{Time: now, Type: uint16(messages.RecordOrderAttempt), User: "rae", Actor: messages.ActorAgent, Payload: payload}}); err != nil {
		t.Fatal(err)
	}
	ts.stop()

	hang.Store(true)
	ts2 := ts.restart(t)
	// A read is served while the lookup hangs.
	if v := ts2.must(t, &messages.ShowPolicyRequest{User: "rae"}, messages.ActorCLIUser); v.User != "rae" {
		t.Fatalf("policy %+v", v)
	}
	attempts := func() int { return countRecords(t, dir, messages.RecordOrderAttempt) }
	before := attempts()
	start := time.Now()
	order := limitArgs("0.01", "30000")
	_, err := ts2.Handle(context.Background(), &messages.PlaceOrderCommand{User: "rae", Args: order}, messages.ActorAgent)
	took := time.Since(start)
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodeExchangeUnavailable || e.Details["reason"] != "reconciling" || e.RetryAfterS < 1 {
		t.Fatalf("a trading call during a hung reconciliation: %v", err)
	}
	if took < wait {
		t.Fatalf("answered after %v, before the bound %v: it did not wait for the reconciliation", took, wait)
	}
	if attempts() != before {
		t.Fatal("an attempt was journaled while reconciling")
	}
	if _, err := ts2.Handle(context.Background(), &messages.TightenPolicyRequest{User: "rae", Settings: messages.PolicySettings{MaxPending: intp(2)}}, messages.ActorCLIUser); messages.CodeOf(err) != messages.CodeExchangeUnavailable {
		t.Fatalf("a policy change during a hung reconciliation: %v", err)
	}

	// The venue answers again: the lookup settles the attempt, and the
	// next call goes through the whole path.
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for countRecords(t, dir, messages.RecordOrderOutcome) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := ts2.Handle(context.Background(), &messages.TightenPolicyRequest{User: "rae", Settings: messages.PolicySettings{MaxPending: intp(2)}}, messages.ActorCLIUser); err != nil {
		t.Fatalf("after the reconciliation: %v", err)
	}
}

// A trading call waits for a key re-check in flight (the one at start may
// block trading), a bounded time: with the venue hanging it is told
// "checking_key", nothing sent; reads are served meanwhile; once the check
// is done, trading goes on.
func TestTradingCallWaitsBoundedForTheKeyCheck(t *testing.T) {
	var hang atomic.Bool
	release := make(chan struct{})
	const wait = 300 * time.Millisecond
	ts := startStack(t, stack{SimOptions: hanging(funded, &hang, release), Users: []string{"kit"}, Configure: func(c *Config) {
		c.RequestTimeout, c.RecoveryWait = 20*time.Second, wait
	}})
	ts.addDefaultKey(t, "kit")
	ts.must(t, &messages.SetCeilingRequest{User: "kit", Settings: messages.PolicySettings{Profile: prof(messages.ProfileTrade), Allow: strs("linear:BTCUSDT"),
		ConfirmActions: strs(), VenueCeiling: venueLevel(messages.VenuePaper)}}, messages.ActorCLIAdmin)

	hang.Store(true)
	checked := make(chan error, 1)
	go func() {
		_, err := ts.Handle(context.Background(), &messages.RecheckCredentialRequest{User: "kit", Environment: "paper"}, messages.ActorSystem)
		checked <- err
	}()
	time.Sleep(100 * time.Millisecond) // the check is on its way to the venue
	if v := ts.must(t, &messages.ShowPolicyRequest{User: "kit"}, messages.ActorCLIUser); v.User != "kit" {
		t.Fatalf("a read during the key check: %+v", v)
	}
	start := time.Now()
	_, err := ts.Handle(context.Background(), &messages.PlaceOrderCommand{User: "kit", Args: limitArgs("0.01", "30000")}, messages.ActorAgent)
	e := messages.AsError(err)
	if e == nil || e.Code != messages.CodeExchangeUnavailable || e.Details["reason"] != "checking_key" || time.Since(start) < wait {
		t.Fatalf("a trading call during a hung key check (after %v): %v", time.Since(start), err)
	}
	if countRecords(t, ts.dir, messages.RecordOrderAttempt) != 0 {
		t.Fatal("an attempt was journaled during the key check")
	}
	close(release)
	if err := <-checked; err != nil {
		t.Fatalf("the key check: %v", err)
	}
	res, err := ts.Handle(context.Background(), &messages.PlaceOrderCommand{User: "kit", Args: limitArgs("0.01", "30000")}, messages.ActorAgent)
	if err != nil {
		t.Fatalf("a trading call after the key check: %v", err)
	}
	if a, ok := res.(*messages.OrderAnswer); !ok || a.ClientOrderID == "" {
		t.Fatalf("answer %+v", res)
	}
}

// hanging is the simulator o with every request held, while hang is set,
// until release is closed or its caller gives up.
func hanging(o rig.SimOptions, hang *atomic.Bool, release <-chan struct{}) rig.SimOptions {
	o.Wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hang.Load() {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	return o
}
