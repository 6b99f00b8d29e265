package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Once the venue actor runs, the user actor sends to it straight, not
// through their supervisor: with the supervisor's mailbox suspended, an
// order goes out (the market read and the write, each user actor → venue
// actor and back) and an account read answers. After a restart of the
// venue actor the user actor still reaches it: a restarted child keeps its
// PID.
func TestVenueCallsSkipTheUserSupervisor(t *testing.T) {
	te := newTradeEnv(t, t.TempDir())
	te.tradeReady(t, messages.PolicySettings{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ens, err := ask[*ensureUserResponse](ctx, te.System, te.users, &ensureUserRequest{user: te.user})
	if err != nil || ens.err != nil {
		t.Fatalf("start %s: %v %v", te.user, err, ens.err)
	}
	// The first venue call starts the venue actor (through the
	// supervisor, once).
	if _, err := te.Account(ctx, &messages.GetBalancesRequest{User: te.user}); err != nil {
		t.Fatal(err)
	}
	sup := ens.pid
	proc, ok := te.sys.ProcessRegistry.Get(sup)
	if !ok {
		t.Fatal("the user's supervisor is not running")
	}
	proc.SendSystemMessage(sup, &actor.SuspendMailbox{})
	defer proc.SendSystemMessage(sup, &actor.ResumeMailbox{})

	res, err := te.askUser(ctx, te.user, &tradingAsk{ctx: ctx, tool: placeOrderTool, args: limitArgs("0.001", "30000"), origin: agentOrigin})
	if err != nil {
		t.Fatalf("place_order with the supervisor's mailbox suspended: %v", err)
	}
	if ans, ok := res.(*messages.OrderAnswer); !ok || ans.Status != messages.AnswerAccepted {
		t.Fatalf("answer %T %+v", res, res)
	}
	if _, err := te.Account(ctx, &messages.GetBalancesRequest{User: te.user}); err != nil {
		t.Fatalf("an account read with the supervisor's mailbox suspended: %v", err)
	}

	venuePID := actor.NewPID(sup.Address, sup.Id+"/venue")
	if _, err := ask[any](ctx, te.System, venuePID, &crashRequest{}); messages.CodeOf(err) != messages.CodeInternalError {
		t.Fatalf("crash answered with %v", err)
	}
	if _, err := te.Account(ctx, &messages.GetBalancesRequest{User: te.user}); err != nil {
		t.Fatalf("a read after the venue actor restarted: %v", err)
	}
}

// The venue actor starts on the first venue call, not with the user
// actor: a user who only reads policy costs no venue actor. The call that
// starts it (here the key check of keys add) is served, and so are the
// calls after it.
func TestVenueActorStartsOnFirstUse(t *testing.T) {
	ke := newKeyEnv(t, t.TempDir(), randomKey(t))
	ke.must(t, &messages.CreateUserRequest{User: "vic"}, messages.ActorCLIAdmin)
	ke.must(t, &messages.ShowPolicyRequest{User: "vic"}, messages.ActorCLIUser)
	ctx := context.Background()
	ens, err := ask[*ensureUserResponse](ctx, ke.System, ke.users, &ensureUserRequest{user: "vic"})
	if err != nil || ens.err != nil {
		t.Fatalf("start vic: %v %v", err, ens.err)
	}
	venuePID := actor.NewPID(ens.pid.Address, ens.pid.Id+"/venue")
	if _, running := ke.sys.ProcessRegistry.Get(venuePID); running {
		t.Fatal("a venue actor runs for a user who only read policy")
	}
	if _, err := ke.add(t, "vic", ke.sim.DefaultKey(), false); err != nil {
		t.Fatalf("keys add, the first venue call: %v", err)
	}
	if _, running := ke.sys.ProcessRegistry.Get(venuePID); !running {
		t.Fatal("the first venue call did not start the venue actor")
	}
	if _, err := ke.Account(ctx, &messages.GetBalancesRequest{User: "vic"}); err != nil {
		t.Fatalf("a read after the venue actor started: %v", err)
	}
}
