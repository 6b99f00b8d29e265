package member_test

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// echoKind is a virtual actor that answers a string with the address of
// the member hosting it, so a test sees where each identity was placed.
func echoKind() *cluster.Kind {
	return cluster.NewKind("echo", actor.PropsFromFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(*wrapperspb.StringValue); ok {
			ctx.Respond(wrapperspb.String(s.Value + "@" + ctx.ActorSystem().Address()))
		}
	}))
}

func start(t *testing.T, etcdAddr string) *member.Member {
	t.Helper()
	m, err := member.Start(member.Config{Name: "test", Etcd: []string{etcdAddr}, Advertise: freeAddr(t), Kinds: []*cluster.Kind{echoKind()}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func waitMembers(t *testing.T, m *member.Member, want []string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(15 * time.Second)
	for !slices.Equal(m.Members(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s sees members %v, want %v", m.Address(), m.Members(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two members on one embedded etcd see each other, place virtual actors
// on both, answer calls across remoting (gRPC on loopback), and one that
// leaves is gone from the other's membership.
func TestTwoMembersSeeEachOther(t *testing.T) {
	srv := etcdtest.Start(t)
	a := start(t, srv.Endpoint())
	b := start(t, srv.Endpoint())
	waitMembers(t, a, []string{a.Address(), b.Address()})
	waitMembers(t, b, []string{a.Address(), b.Address()})

	hosts := map[string]bool{}
	for i := range 20 {
		id := "user-" + strconv.Itoa(i)
		res, err := a.Cluster().Request(id, "echo", wrapperspb.String(id), cluster.WithTimeout(5*time.Second))
		if err != nil {
			t.Fatalf("call %s: %v", id, err)
		}
		s, ok := res.(*wrapperspb.StringValue)
		if !ok {
			t.Fatalf("call %s answered %T", id, res)
		}
		host := s.Value[len(id)+1:]
		if s.Value[:len(id)] != id || (host != a.Address() && host != b.Address()) {
			t.Fatalf("call %s answered %q", id, s.Value)
		}
		hosts[host] = true
	}
	if len(hosts) != 2 {
		t.Fatalf("20 identities were all placed on %v", hosts)
	}

	// Each knows the other by id (the front of its agent sessions,
	// docs/cluster.md "Sessions and the dead-man switch"), and ids differ.
	if a.ID() == b.ID() || a.ID() == "" {
		t.Fatalf("member ids %q and %q", a.ID(), b.ID())
	}
	for _, m := range []*member.Member{a, b} {
		for _, id := range []string{a.ID(), b.ID()} {
			if alive, known := m.Alive(id); !alive || !known {
				t.Fatalf("%s: member %s alive %v, topology known %v", m.Address(), id, alive, known)
			}
		}
		if alive, _ := m.Alive("no-such-member"); alive {
			t.Fatalf("%s: an unknown id is alive", m.Address())
		}
	}

	b.Stop()
	waitMembers(t, a, []string{a.Address()})
	if alive, known := a.Alive(b.ID()); alive || !known {
		t.Fatalf("a member that left: alive %v, topology known %v", alive, known)
	}
	a.Stop()
}
