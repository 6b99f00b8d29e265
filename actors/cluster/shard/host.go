package shard

// CONTRACT STUB (session plan): the shard virtual actor. Owned by the
// "host" work; bodies are filled in there. The signatures are shared with
// the "wire" and "serve" work: change them only by agreement.

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// KindName is the virtual actor kind of a shard; its identity is the
// shard's number in decimal.
const KindName = "shard"

// Running is one shard's running system, as the member's StartFunc built
// it on the shard's opened journal.
type Running struct {
	// Target serves the shard's calls.
	Target Target
	// Stop stops the system (its user actors, streams and journal
	// writer). The host closes the journal after it.
	Stop func()
}

// StartFunc builds a shard's system on its journal, opened (its records
// replayed into replay) and with the shard_owner record appended. slot is
// the shard (actors.Config.Shard), so that tokens are drawn to route home
// and users of other shards are refused. It reconciles open order
// attempts before it returns or in the background; the host serves calls
// as soon as it returns.
type StartFunc func(ctx context.Context, slot route.Slot, log *wal.Log, replay *actors.UserReplay) (*Running, error)

// HostConfig is what a member needs to host shards.
type HostConfig struct {
	// Cluster is the cluster's name (keys under member.KeyPrefix+Cluster).
	Cluster string
	// Count is the cluster's fixed number of shards.
	Count int
	// DataDir is --cluster-data: shard n's journal is
	// DataDir/shards/<n>/journal.
	DataDir string
	// Member is this member's advertised address (in shard_owner).
	Member string
	// Etcd is the client the shard locks are taken with.
	Etcd *clientv3.Client
	// LockTTL is the shard lock's lease TTL (default 5 s).
	LockTTL time.Duration
	// Start builds the shard's system.
	Start StartFunc
	// Logger receives the host's logs (nil: discarded).
	Logger *slog.Logger
}

// NewKind returns the shard kind to register with the member.
func NewKind(cfg HostConfig) *cluster.Kind {
	panic("shard.NewKind: not implemented yet")
}

// ClusterTransport carries calls to shards through c: the shard's
// activation is looked up by identity and asked directly, with the
// call's context deadline (default 2 minutes) and no automatic retry.
func ClusterTransport(c *cluster.Cluster) Transport {
	panic("shard.ClusterTransport: not implemented yet")
}
