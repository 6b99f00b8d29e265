package member

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
)

// gRPC's own logs are dropped, as protoactor's remote used to do at each
// start. grpclog.SetLoggerV2 may only be called before any gRPC code runs
// (an etcd client, another member), so it is called once, here, while the
// program initialises (docs/decisions.md D205).
func init() {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
}

// KeyPrefix is where the cluster's keys live in etcd: members under
// KeyPrefix+"members/NAME/", shard locks under KeyPrefix+"NAME/shards/".
const KeyPrefix = "/guarded-exchange/"

// Config says which cluster to join and how others reach this member.
type Config struct {
	// Name is the cluster's name; members with the same name and etcd
	// form one cluster.
	Name string
	// Etcd lists etcd's client endpoints (HOST:PORT or URLs).
	Etcd []string
	// Advertise is HOST:PORT the other members reach this one at; the
	// member's gRPC listener binds it.
	Advertise string
	// Kinds are the virtual actor kinds this member can host.
	Kinds []*cluster.Kind
	// Logger receives the actor system's logs (nil: discarded). stdout
	// is never written.
	Logger *slog.Logger
	// OnTopology, when set, is called after every topology the cluster
	// publishes, with the member that saw it (its IDs are that topology's
	// already), on the event stream's goroutine: it must not block.
	OnTopology func(m *Member)
}

// Member is a running cluster member.
type Member struct {
	sys     *actor.ActorSystem
	cluster *cluster.Cluster

	// members is the last topology the cluster published (protoactor's
	// MemberList is not safe to read from outside its actors).
	mu      sync.Mutex
	members []string
	ids     map[string]bool
	seen    bool
}

// Check validates cfg without starting anything: the name, at least one
// etcd endpoint, and HOST:PORT with a port in 1..65535.
func (cfg Config) Check() error {
	if cfg.Name == "" {
		return errors.New("member: the cluster name is empty")
	}
	if len(cfg.Etcd) == 0 {
		return errors.New("member: no etcd endpoint")
	}
	_, _, err := hostPort(cfg.Advertise)
	return err
}

func hostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("member: the advertised address must be HOST:PORT")
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("member: the advertised port must be 1..65535")
	}
	return host, port, nil
}

// Start joins the cluster: it starts remoting on cfg.Advertise, registers
// the member in etcd and waits for the cluster's first topology. It
// returns an error instead of protoactor's panics.
func Start(cfg Config) (m *Member, err error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	host, port, _ := hostPort(cfg.Advertise)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
		return slog.New(noMessages{logger.Handler()}).With("component", "cluster", "system", s.ID)
	}))
	provider, err := etcd.NewWithConfig(KeyPrefix+"members", clientv3.Config{
		Endpoints: cfg.Etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("member: etcd: %w", err)
	}
	cc := cluster.Configure(cfg.Name, provider, disthash.New(), remote.Configure(host, port),
		cluster.WithKinds(cfg.Kinds...))
	c := cluster.New(sys, cc)
	m = &Member{sys: sys, cluster: c}
	sys.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*cluster.ClusterTopology); ok {
			m.setMembers(cfg.Name, t.Members)
			if cfg.OnTopology != nil {
				cfg.OnTopology(m)
			}
		}
	})
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("member: start: %v", r)
		}
	}()
	c.StartMember()
	return m, nil
}

func (m *Member) setMembers(name string, ms []*cluster.Member) {
	out := make([]string, 0, len(ms))
	ids := make(map[string]bool, len(ms))
	for _, mem := range ms {
		out = append(out, net.JoinHostPort(mem.Host, strconv.Itoa(int(mem.Port))))
		// protoactor's etcd provider names a member NAME@ID, ID its actor
		// system's id.
		ids[strings.TrimPrefix(mem.Id, name+"@")] = true
	}
	slices.Sort(out)
	m.mu.Lock()
	m.members, m.ids, m.seen = out, ids, true
	m.mu.Unlock()
}

// ID returns the member's id: its actor system's id, new on every start,
// so a member that restarts on the same address is another member.
func (m *Member) ID() string { return m.sys.ID }

// Alive reports whether the member with id is in the last topology this
// member saw. known is false until the first topology came: then nobody
// is known to be gone.
func (m *Member) Alive(id string) (alive, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ids[id], m.seen
}

// Address returns the member's address, HOST:PORT.
func (m *Member) Address() string { return m.sys.Address() }

// Cluster returns the protoactor cluster, to call virtual actors.
func (m *Member) Cluster() *cluster.Cluster { return m.cluster }

// Members returns the addresses (HOST:PORT) of the members in the last
// topology this member saw, itself included, sorted.
func (m *Member) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.members)
}

// Stop leaves the cluster gracefully: the member deregisters from etcd and
// hands its activations over, then remoting stops.
func (m *Member) Stop() { m.cluster.Shutdown(true) }

// noMessages drops the messages protoactor puts in its log lines (a dead
// letter, a delivery to a member that is gone: attribute "message"): a
// shard call carries bearer tokens and exchange keys' secrets, and an
// answer a new token, and no secret is ever logged. Only the message's Go
// type is kept.
type noMessages struct{ slog.Handler }

func (h noMessages) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "message" {
			a = slog.String("message_type", fmt.Sprintf("%T", a.Value.Any()))
		}
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h noMessages) WithAttrs(as []slog.Attr) slog.Handler {
	return noMessages{h.Handler.WithAttrs(as)}
}

func (h noMessages) WithGroup(name string) slog.Handler {
	return noMessages{h.Handler.WithGroup(name)}
}
