package member_test

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A call or an answer that reaches no actor (a shard activation that just
// stopped: the failover case the transport retries; an answer to a caller
// whose wait already ended) must not put its bytes in the member's log:
// a shard call carries bearer tokens and exchange API secrets, and an
// answer to admin.token.issue a new token. protoactor logs dead letters
// with the message at Info unless told not to.
func TestDeadLettersLogNoCallBytes(t *testing.T) {
	srv := etcdtest.Start(t)
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := member.Start(member.Config{Name: "test", Etcd: []string{srv.Endpoint()}, Advertise: freeAddr(t),
		Kinds: []*cluster.Kind{echoKind()}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	const secret = "gx_SECRETTOKENSECRETTOKENSECRETTOKEN"
	call := []byte(`{"method":"authenticate","token":"` + secret + `"}`)
	answer := []byte(`{"result":{"id":"tok_1","token":"` + secret + `","user":"alice"},"type":"*messages.TokenIssued"}`)
	root := m.Cluster().ActorSystem.Root
	gone := actor.NewPID(m.Address(), "shard/3$gone")
	// A request (with a sender), as ClusterTransport sends a call.
	_, _ = root.RequestFuture(gone, &wrapperspb.BytesValue{Value: call}, 2*time.Second).Result()
	// A send without a sender, as a shard answers a caller that left.
	root.Send(gone, &wrapperspb.BytesValue{Value: answer})
	time.Sleep(300 * time.Millisecond) // dead letters are logged by the event stream's subscriber
	out := logs.String()
	for _, form := range []string{secret, base64.StdEncoding.EncodeToString(call), base64.StdEncoding.EncodeToString(answer)} {
		if strings.Contains(out, form) {
			t.Fatalf("the member's log holds a dead letter's bytes (a bearer token):\n%s", out)
		}
	}
	if !strings.Contains(out, "DeadLetter") {
		t.Logf("no dead letter logged at all (fine):\n%s", out)
	}
}
