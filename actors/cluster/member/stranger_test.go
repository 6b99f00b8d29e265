package member_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/shard"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// recordingTarget is a shard's system that records every command it is
// handed; any other method panics (Serve answers serve_panic), so a call
// that reaches the target shows.
type recordingTarget struct {
	shard.Target
	mu   sync.Mutex
	cmds []string
}

func (r *recordingTarget) Submit(_ context.Context, cmd messages.Command, _ messages.Origin) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds = append(r.cmds, cmd.CommandName())
	return nil, nil
}

func (r *recordingTarget) served() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cmds...)
}

// TestStrangerCallsVirtualActors: a process that reaches a member's
// --cluster-advertise port but is no member (not in etcd, no cluster
// name, no master key) can still have protoactor activate the shard kind
// by identity (remoting takes any caller), but every call it sends the
// activation is refused with call_not_authenticated and reaches no
// shard: unsealed, or sealed with another key (docs/cluster.md
// "Security"). A member's Client, holding the call key, is served.
func TestStrangerCallsVirtualActors(t *testing.T) {
	srv := etcdtest.Start(t)
	key := bytes.Repeat([]byte{5}, shard.MinCallKeySize)
	target := &recordingTarget{}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	addr := freeAddr(t)
	kind := shard.NewKind(shard.HostConfig{Cluster: "test", Count: 1, DataDir: t.TempDir(), Member: addr, Etcd: etcd, CallKey: key,
		Start: func(context.Context, route.Slot, *wal.Log, *actors.UserReplay) (*shard.Running, error) {
			return &shard.Running{Target: target, Stop: func() {}}, nil
		}})
	m, err := member.Start(member.Config{Name: "test", Etcd: []string{srv.Endpoint()}, Advertise: addr, Kinds: []*cluster.Kind{kind}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	waitMembers(t, m, []string{m.Address()})

	host, port := freeHostPort(t)
	sys := actor.NewActorSystem()
	r := remote.NewRemote(sys, remote.Configure(host, port))
	r.Start()
	defer r.Shutdown(false)

	act := actor.NewPID(m.Address(), disthash.PartitionActivatorActorName)
	res, err := sys.Root.RequestFuture(act, &cluster.ActivationRequest{
		ClusterIdentity: &cluster.ClusterIdentity{Identity: "0", Kind: shard.KindName}, RequestId: "x",
	}, 5*time.Second).Result()
	if err != nil {
		t.Fatalf("activation request: %v", err)
	}
	ar, ok := res.(*cluster.ActivationResponse)
	if !ok || ar.Pid == nil {
		t.Fatalf("activation answered %T %+v", res, res)
	}
	// The admin turning carol's kill switch off: what a stranger would
	// send with the origin the shard used to trust.
	body, _ := json.Marshal(&messages.SetKillSwitchRequest{User: "carol", On: false, Level: messages.KillSwitchUser})
	origin := messages.Origin{Role: messages.RoleAdmin, Channel: messages.ChannelSocket, PeerUID: 0, PeerPID: 1}
	call, _ := json.Marshal(map[string]any{"method": "submit", "type": "kill_switch.set", "body": json.RawMessage(body), "origin": origin})
	for name, b := range map[string][]byte{
		"unsealed":    call,
		"another key": shard.SealCall(bytes.Repeat([]byte{6}, shard.MinCallKeySize), 0, call),
	} {
		out, err := sys.Root.RequestFuture(ar.Pid, &wrapperspb.BytesValue{Value: b}, 10*time.Second).Result()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bv, ok := out.(*wrapperspb.BytesValue)
		if !ok {
			t.Fatalf("%s: answered %T", name, out)
		}
		var a struct{ Error *messages.Error }
		if json.Unmarshal(bv.Value, &a) != nil || a.Error == nil || a.Error.Code != messages.CodePermissionDenied ||
			a.Error.Details["reason"] != shard.ReasonCallNotAuthenticated {
			t.Fatalf("%s: a process that is no member was answered %s", name, bv.Value)
		}
		if bytes.Contains(bv.Value, []byte("carol")) {
			t.Fatalf("%s: the refusal echoes the call: %s", name, bv.Value)
		}
	}
	if got := target.served(); len(got) != 0 {
		t.Fatalf("a stranger's calls reached the shard: %v", got)
	}

	// The member's own Client, holding the key, is served.
	cl := shard.NewClient(1, shard.ClusterTransport(m.Cluster()), shard.WithCallKey(key))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cl.Submit(ctx, &messages.SetKillSwitchRequest{User: "carol", On: true, Level: messages.KillSwitchUser}, origin); err != nil {
		t.Fatalf("the member's own call: %v", err)
	}
	if got := target.served(); len(got) != 1 || got[0] != "kill_switch.set" {
		t.Fatalf("the shard served %v, want the member's one call", got)
	}
}

func freeHostPort(t *testing.T) (string, int) {
	t.Helper()
	h, p, _ := net.SplitHostPort(freeAddr(t))
	n, _ := strconv.Atoi(p)
	return h, n
}
