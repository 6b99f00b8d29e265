package actors

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/internal/testkit/rig"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// While one action of a user waits 5 s on the venue (a simulator delay
// fault on the key check), the same user's kill switch and policy read are
// answered at once, and the delayed action completes afterwards, journaled
// after them.
func TestUserActorNeverWaitsOnTheVenue(t *testing.T) {
	sv := newSlowVenue(t, 5*time.Second)
	ctx := context.Background()
	pending := sv.recheck()
	time.Sleep(100 * time.Millisecond) // the re-check is at the venue now

	v, err := sv.Handle(ctx, &messages.SetKillSwitchRequest{User: "kim", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	if err != nil || !v.(*messages.PolicyView).Changed {
		t.Fatalf("kill switch: %v %+v", err, v)
	}
	pol, err := sv.Handle(ctx, &messages.ShowPolicyRequest{User: "kim"}, messages.ActorAgent)
	if err != nil || pol.(*messages.PolicyView).KillSwitch != messages.KillSwitchUser {
		t.Fatalf("policy: %v %+v", err, pol)
	}
	// Both were answered while the venue still holds the re-check.
	select {
	case err := <-pending:
		t.Fatalf("the delayed re-check finished before the kill switch was answered: %v", err)
	default:
	}
	select {
	case err := <-pending:
		if err != nil {
			t.Fatalf("the delayed re-check failed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the delayed re-check never completed")
	}
	var kinds []string
	for _, r := range sv.records(t) {
		kinds = append(kinds, messages.RecordType(r.Type).String())
	}
	if got := strings.Join(kinds, ","); got != "user_created,credential_added,kill_switch_on,posture_changed,credential_checked" {
		t.Fatalf("journal %s", got)
	}
}

// A key check in flight does not let a second keys add slip past the
// "already stored" rule: the outcome is checked against the state as it is
// when it comes back.
func TestConcurrentKeyAddsStoreOneKey(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "ivy"}, messages.ActorCLIAdmin)
	key := ke.sim.DefaultKey()
	errs := make(chan error, 4)
	for range 4 {
		go func() { _, err := ke.add(t, "ivy", key, false); errs <- err }()
	}
	ok := 0
	for range 4 {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case messages.CodeOf(err) != messages.CodeInvalidParams:
			t.Fatalf("unexpected refusal: %v", err)
		}
	}
	added := 0
	for _, r := range ke.records(t) {
		if messages.RecordType(r.Type) == messages.RecordCredentialAdded {
			added++
		}
	}
	if ok != 1 || added != 1 {
		t.Fatalf("%d adds acknowledged, %d journaled; want 1 and 1", ok, added)
	}
}

// A venue actor that panics is restarted alone: the user actor keeps its
// actions in flight and its state, and reads work again at once.
func TestVenueActorCrashKeepsUserState(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "jo"}, messages.ActorCLIAdmin)
	if _, err := ke.add(t, "jo", ke.sim.DefaultKey(), false); err != nil {
		t.Fatal(err)
	}
	ke.must(t, &messages.SetKillSwitchRequest{User: "jo", On: true, Level: messages.KillSwitchUser}, messages.ActorAgent)
	userPID := ke.registry.get("jo")
	if userPID == nil {
		t.Fatal("jo is not in the registry")
	}
	venuePID := actor.NewPID(userPID.Address, strings.TrimSuffix(userPID.Id, "/state")+"/venue")
	if _, err := ask[any](context.Background(), ke.System, venuePID, &crashRequest{}); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("crash answered with %v", err)
	}
	if _, err := ke.Account(context.Background(), &messages.GetBalancesRequest{User: "jo"}); err != nil {
		t.Fatalf("read after the venue actor restarted: %v", err)
	}
	if v := ke.must(t, &messages.ShowPolicyRequest{User: "jo"}, messages.ActorCLIUser); v.KillSwitch != messages.KillSwitchUser {
		t.Fatalf("user state lost: %+v", v)
	}
	if ke.registry.get("jo") != userPID {
		t.Fatal("the user actor was replaced")
	}
}

// The caller's context reaches the venue call: a read whose caller gives
// up is cancelled at the venue, long before the request timeout.
func TestCallerCancellationReachesTheVenue(t *testing.T) {
	var hang atomic.Bool
	ended := make(chan struct{}, 1)
	wrap := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hang.Load() && r.URL.Path == "/v5/account/wallet-balance" {
				<-r.Context().Done()
				ended <- struct{}{}
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	ts := startStack(t, stack{SimOptions: rig.SimOptions{Seed: 9, PublicRateLimit: true, Wrap: wrap}, Users: []string{"cal"},
		Configure: func(c *Config) { c.RequestTimeout = time.Minute }})
	ts.addDefaultKey(t, "cal")
	hang.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := ts.Account(ctx, &messages.GetBalancesRequest{User: "cal"}); err == nil {
		t.Fatal("a read against a venue that never answers succeeded")
	}
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the venue call was not cancelled when its caller gave up (the request timeout is a minute)")
	}
}
