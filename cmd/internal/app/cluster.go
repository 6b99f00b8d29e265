package app

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/shard"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/control"
	"github.com/guarded-exchange/guarded-exchange/mcp"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// Bounds of a member's start-up on etcd: it waits on the network only
// as long as joining needs (docs/cluster.md "Running a member").
const (
	clusterEtcdDialTimeout = 5 * time.Second
	clusterEtcdOpTimeout   = 10 * time.Second
	// shardUserStarts is how many of a new shard owner's users are started
	// (their key re-checked, their private stream opened) at once.
	shardUserStarts = 4
)

// The cluster's own keys under member.KeyPrefix+NAME (docs/cluster.md
// "Running a member"): the shard count and the master key's id, each
// written once by the member that creates the cluster; the claim on the
// data directory's initialisation (a leased key, held by one member at
// a time) and the data directory's id, written once cluster.json is in
// place (D201).
func clusterCountKey(name string) string { return member.KeyPrefix + name + "/shards/count" }
func clusterKeyIDKey(name string) string { return member.KeyPrefix + name + "/master-key-id" }
func clusterDataClaimKey(name string) string {
	return member.KeyPrefix + name + "/data-initialising"
}
func clusterDataInitKey(name string) string { return member.KeyPrefix + name + "/data-initialised" }

// clusterFileName is the cluster's identity in --cluster-data: its name,
// shard count, master key id, etcd's cluster id and the directory's own
// id, written by the one member that initialises the directory and
// compared by every later one, so that a data directory never serves a
// cluster of another count, another etcd or another initialisation
// (D172, D201, D202).
const clusterFileName = "cluster.json"

// Bounds of the data directory's initialisation (D201): the claim's
// lease, after which a member that died holding it no longer blocks the
// others, and how long a member waits for another's initialisation.
var (
	clusterDataClaimTTL = int64(10) // seconds
	clusterDataWait     = 30 * time.Second
)

// clusterIdentity is what clusterFileName holds. DataID is random,
// chosen by the member that writes the file, and also stored in etcd
// under clusterDataInitKey: it ties the one initialised directory to the
// cluster's etcd keys.
type clusterIdentity struct {
	Name          string `json:"name"`
	Shards        int    `json:"shards"`
	MasterKeyID   string `json:"master_key_id"`
	EtcdClusterID string `json:"etcd_cluster_id"`
	DataID        string `json:"data_id,omitempty"`
}

// clusterJoin is what a member learns from the transaction that creates
// or reads the cluster.
type clusterJoin struct {
	// Count is the cluster's shard count.
	Count int
	// EtcdClusterID is etcd's own cluster id (from the response header),
	// in hex.
	EtcdClusterID string
	// Claim is the lease of the data directory's initialisation claim when
	// this member's transaction created the cluster (and so took the
	// claim), else clientv3.NoLease.
	Claim clientv3.LeaseID
}

// serveCluster runs remote mode as a member of a cluster: the HTTP front
// and the control socket route every user call to the user's shard
// through the cluster; the shards placed on this member run here, each on
// its own fenced journal under --cluster-data. serveHTTP's local path is
// untouched.
func (r *Runtime) serveCluster(ctx context.Context, g *cli.Globals, o cli.ServeOptions) error {
	co := o.Cluster
	rs, err := r.remoteSettings(g)
	if err != nil {
		return err
	}
	p, key, vc, layout := rs.paths, rs.key, rs.venue, rs.layout
	if vc.Paper {
		return cli.CannotStart("the paper venue runs inside one process, so the members of a cluster cannot share it; run a cluster on a Bybit venue (--venue bybit-demo, bybit-testnet or bybit-live)")
	}
	if fi, err := os.Stat(co.DataDir); err != nil || !fi.IsDir() {
		return cli.CannotStart("--cluster-data %s is not a directory: the members share it (a shared volume); mount or create it first", co.DataDir)
	}
	cursorKey, err := clusterCursorKey(key)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	callKey, err := clusterCallKey(key)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	lock, err := lockHome(p)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer lock.release()
	logger := r.logger().With("cluster", co.Name)
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return cli.CannotStart("listen on %s: %v", o.Listen, err)
	}
	defer ln.Close()

	etcd, err := clientv3.New(clientv3.Config{Endpoints: co.Etcd, DialTimeout: clusterEtcdDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return cli.CannotStart("etcd: %v", err)
	}
	defer etcd.Close()
	join, err := clusterShardCount(ctx, etcd, co, masterKeyID(key))
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	count := join.Count
	if err := initClusterData(ctx, etcd, co.Name, co.DataDir, clusterIdentity{Name: co.Name, Shards: count, MasterKeyID: masterKeyID(key)}, join); err != nil {
		return cli.CannotStart("%v", err)
	}

	ms, err := startMemberStack(ctx, p, vc, key, logger, r.Release, co, count)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer ms.close()
	if err := ms.started(ctx); err != nil {
		return cli.CannotStart("%v", err)
	}
	kind := shard.NewKind(shard.HostConfig{
		Cluster: co.Name, Count: count, DataDir: co.DataDir, Member: co.Advertise, Etcd: etcd,
		LockTTL: co.LockTTL, CallKey: callKey, Start: ms.startShard, Logger: logger.With("component", "shard"),
	})
	follow := ms.followTopology(count)
	m, err := member.Start(member.Config{Name: co.Name, Etcd: co.Etcd, Advertise: co.Advertise, Kinds: []*cluster.Kind{kind}, Logger: logger.With("component", "member"),
		OnTopology: ms.topologyChanged})
	if err != nil {
		follow()
		return cli.CannotStart("%v", err)
	}
	left := false
	leave := func() {
		if !left {
			left = true
			follow()
			m.Stop() // hands this member's shards over; each one's system stops
		}
	}
	defer leave()
	calls := shard.NewClient(count, shard.ClusterTransport(m.Cluster()), shard.WithCallKey(callKey)).WithFront(m.ID())

	ctl, err := control.Listen(layout, clusterControl{calls: calls, local: ms.sys}, logger.With("component", "control"), control.Limits{})
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer ctl.Close()
	srv, err := mcp.NewServer(mcp.Options{
		Backend: mcp.HTTPBackend(clusterBackend{calls: calls, local: ms.sys}, calls.Submit),
		Principal: mcp.HTTPPrincipal(func(_ context.Context, user string) (string, error) {
			profile, err := calls.CallerProfile(user)
			return string(profile), err
		}),
		Venue:     vc.Name,
		Version:   r.Release,
		Logger:    logger.With("component", "mcp"),
		DenyTools: o.DenyTools,
		Presence:  mcp.NewPresence(),
		StateKey:  ms.stateKey,
		CursorKey: cursorKey,
	})
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	serveErr := runHTTPFront(ctx, ln, o.Listen, srv, mcp.HTTPOptions{
		Authenticate: calls.Authenticate, AllowedHosts: rs.hosts, AllowedOrigins: rs.origins,
		SessionsRefused: ms.sys.SessionsRefused,
	}, logger, "serving MCP over HTTP as a cluster member", "venue", vc.Name, "member", m.Address(), "shards", count)
	// No call comes in any more: close the socket, then leave the cluster
	// (the shards move to the other members) before the member's own
	// system and the venue's feed stop.
	ctl.Close()
	logger.Info("leaving the cluster", "member", m.Address())
	leave()
	logger.Info("left the cluster", "member", m.Address())
	return serveErr
}

// clusterShardCount returns the cluster's shard count, creating it (and
// the master key's id) when this member is the first: one etcd
// transaction, create if absent, which also gives the creator the claim
// on the data directory's initialisation (D201). A member given
// --cluster-shards that differs from the cluster's count refuses to
// start, as does one whose master key is not the cluster's.
func clusterShardCount(ctx context.Context, etcd *clientv3.Client, co *cli.ClusterOptions, keyID string) (clusterJoin, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterEtcdOpTimeout)
	defer cancel()
	countKey, idKey := clusterCountKey(co.Name), clusterKeyIDKey(co.Name)
	lease, err := etcd.Grant(ctx, clusterDataClaimTTL)
	if err != nil {
		return clusterJoin{}, fmt.Errorf("etcd %v: %w", co.Etcd, err)
	}
	resp, err := etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(countKey), "=", 0)).
		Then(clientv3.OpPut(countKey, strconv.Itoa(co.Shards)), clientv3.OpPut(idKey, keyID),
			clientv3.OpPut(clusterDataClaimKey(co.Name), "creator", clientv3.WithLease(lease.ID))).
		Else(clientv3.OpGet(countKey), clientv3.OpGet(idKey)).
		Commit()
	if err != nil {
		revokeClaim(etcd, lease.ID)
		return clusterJoin{}, fmt.Errorf("etcd %v: %w", co.Etcd, err)
	}
	join := clusterJoin{EtcdClusterID: etcdClusterID(resp.Header)}
	if resp.Succeeded {
		join.Count, join.Claim = co.Shards, lease.ID
		return join, nil
	}
	revokeClaim(etcd, lease.ID)
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 {
		return clusterJoin{}, fmt.Errorf("etcd: %s vanished while it was read", countKey)
	}
	count, err := strconv.Atoi(string(kvs[0].Value))
	if err != nil || count < 1 || count > cli.MaxClusterShards {
		return clusterJoin{}, fmt.Errorf("etcd: %s holds %q, not a shard count 1..%d", countKey, kvs[0].Value, cli.MaxClusterShards)
	}
	if co.ShardsGiven && co.Shards != count {
		return clusterJoin{}, fmt.Errorf("cluster %q has %d shards, not the %d of --cluster-shards: the count is fixed when the cluster is created; leave --cluster-shards out to join it", co.Name, count, co.Shards)
	}
	join.Count = count
	ids := resp.Responses[1].GetResponseRange().GetKvs()
	if len(ids) == 0 {
		// A cluster created without the id: the first member that knows
		// it writes it, once.
		r2, err := etcd.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(idKey), "=", 0)).
			Then(clientv3.OpPut(idKey, keyID)).Else(clientv3.OpGet(idKey)).Commit()
		if err != nil {
			return clusterJoin{}, fmt.Errorf("etcd %v: %w", co.Etcd, err)
		}
		if r2.Succeeded {
			return join, nil
		}
		ids = r2.Responses[0].GetResponseRange().GetKvs()
	}
	if len(ids) != 1 || string(ids[0].Value) != keyID {
		return clusterJoin{}, fmt.Errorf("this home's master key is not the one cluster %q was created with (master key id %s here); every member must hold the same master key", co.Name, keyID)
	}
	return join, nil
}

// etcdClusterID is etcd's cluster id from a response header, in hex.
func etcdClusterID(h *etcdserverpb.ResponseHeader) string {
	if h == nil || h.ClusterId == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", h.ClusterId)
}

// revokeClaim gives a claim's lease back (best effort: it expires anyway).
func revokeClaim(etcd *clientv3.Client, lease clientv3.LeaseID) {
	if lease == clientv3.NoLease {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterEtcdOpTimeout)
	defer cancel()
	_, _ = etcd.Revoke(ctx, lease)
}

// initClusterData makes sure --cluster-data is the cluster's one data
// directory (D201, D202). Once etcd holds the data id (clusterDataInitKey)
// the directory must hold a cluster.json with that id and this identity:
// a joining member whose directory has none (a shared volume not
// mounted) refuses to start. While etcd holds no data id, the member
// holding the claim (the creator, or after the creator's lease expired
// the first member that takes it, create if absent) writes cluster.json
// (or adopts the one a crashed claimant left) and then the data id;
// every other member waits for it.
func initClusterData(ctx context.Context, etcd *clientv3.Client, name, dir string, want clusterIdentity, join clusterJoin) error {
	if join.EtcdClusterID == "" {
		revokeClaim(etcd, join.Claim)
		return fmt.Errorf("etcd: no cluster id in its answer")
	}
	want.EtcdClusterID, want.DataID = join.EtcdClusterID, ""
	claimKey, initKey := clusterDataClaimKey(name), clusterDataInitKey(name)
	ctx, cancel := context.WithTimeout(ctx, clusterDataWait)
	defer cancel()
	lease := join.Claim
	defer func() { revokeClaim(etcd, lease) }()
	for {
		if lease == clientv3.NoLease {
			l, err := etcd.Grant(ctx, clusterDataClaimTTL)
			if err != nil {
				return clusterDataWaitErr(ctx, dir, err)
			}
			resp, err := etcd.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(initKey), "=", 0), clientv3.Compare(clientv3.CreateRevision(claimKey), "=", 0)).
				Then(clientv3.OpPut(claimKey, "recovery", clientv3.WithLease(l.ID))).
				Else(clientv3.OpGet(initKey)).Commit()
			if err != nil {
				revokeClaim(etcd, l.ID)
				return clusterDataWaitErr(ctx, dir, err)
			}
			if resp.Succeeded {
				lease = l.ID
				continue
			}
			revokeClaim(etcd, l.ID)
			if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 {
				return checkClusterData(dir, want, string(kvs[0].Value))
			}
			// Another member holds the claim: wait for its data id, or for
			// its lease to expire.
			select {
			case <-ctx.Done():
				return clusterDataWaitErr(ctx, dir, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		dataID, err := writeClusterData(dir, want)
		if err != nil {
			return err
		}
		resp, err := etcd.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(initKey), "=", 0), clientv3.Compare(clientv3.LeaseValue(claimKey), "=", lease)).
			Then(clientv3.OpPut(initKey, dataID), clientv3.OpDelete(claimKey)).
			Else(clientv3.OpGet(initKey)).Commit()
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		if resp.Succeeded {
			return nil
		}
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 {
			return checkClusterData(dir, want, string(kvs[0].Value))
		}
		return fmt.Errorf("--cluster-data %s: the claim on initialising cluster %q's data expired before it was done; start the member again", dir, name)
	}
}

// clusterDataWaitErr says why a member gave up waiting for the data
// directory's initialisation.
func clusterDataWaitErr(ctx context.Context, dir string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("--cluster-data %s: another member is initialising the cluster's data and did not finish within %v; start the member again (%v)", dir, clusterDataWait, err)
	}
	return fmt.Errorf("etcd: %w", err)
}

// readClusterData reads dir's cluster.json; ok is false when there is none.
func readClusterData(dir string) (got clusterIdentity, ok bool, err error) {
	path := filepath.Join(dir, clusterFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return got, false, nil
	}
	if err != nil {
		return got, false, fmt.Errorf("--cluster-data: %w", err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		return got, false, fmt.Errorf("--cluster-data: %s is not a cluster identity: %v", path, err)
	}
	return got, true, nil
}

// sameCluster refuses an identity read from dir that is not want's
// (DataID aside).
func sameCluster(dir string, got, want clusterIdentity) error {
	if got.EtcdClusterID != want.EtcdClusterID && got.Name == want.Name && got.Shards == want.Shards && got.MasterKeyID == want.MasterKeyID {
		return fmt.Errorf("--cluster-data %s was initialised under etcd cluster %s, but this member's etcd is cluster %s: two etcd clusters (or an etcd restored from a backup, or emptied) behind one data directory would each hand out its shards; a data directory serves one cluster on one etcd",
			dir, orNone(got.EtcdClusterID), want.EtcdClusterID)
	}
	if got.Name != want.Name || got.Shards != want.Shards || got.MasterKeyID != want.MasterKeyID || got.EtcdClusterID != want.EtcdClusterID {
		return fmt.Errorf("--cluster-data %s belongs to cluster %q with %d shards (master key id %s, etcd cluster %s), not to cluster %q with %d shards (master key id %s, etcd cluster %s); a data directory serves one cluster",
			dir, got.Name, got.Shards, got.MasterKeyID, orNone(got.EtcdClusterID), want.Name, want.Shards, want.MasterKeyID, want.EtcdClusterID)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// checkClusterData is a joining member's check: dir must hold the
// cluster.json of this cluster whose data id etcd holds.
func checkClusterData(dir string, want clusterIdentity, dataID string) error {
	got, ok, err := readClusterData(dir)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("--cluster-data %s has no %s, but cluster %q's data directory was initialised already: this is not the cluster's shared volume (not mounted, or another path); mount it and start again. A member never starts the shards on an empty directory",
			dir, clusterFileName, want.Name)
	}
	if err := sameCluster(dir, got, want); err != nil {
		return err
	}
	if got.DataID != dataID {
		return fmt.Errorf("--cluster-data %s holds data id %s, but cluster %q's data directory is %s (etcd %s): this is another directory than the one the cluster was initialised on; mount the cluster's shared volume",
			dir, orNone(got.DataID), want.Name, dataID, clusterDataInitKey(want.Name))
	}
	return nil
}

// writeClusterData is the claimant's step: it writes want with a new
// data id into dir when dir has no cluster.json, or adopts the one a
// claimant before it wrote (it died before etcd held the id), and returns
// the data id the file holds.
func writeClusterData(dir string, want clusterIdentity) (string, error) {
	got, ok, err := readClusterData(dir)
	if err != nil {
		return "", err
	}
	if !ok {
		var r [16]byte
		if _, err := rand.Read(r[:]); err != nil {
			return "", err
		}
		want.DataID = hex.EncodeToString(r[:])
		b, err := json.Marshal(want)
		if err != nil {
			return "", err
		}
		if err := linkNewFile(dir, clusterFileName, append(b, '\n')); err != nil {
			return "", fmt.Errorf("--cluster-data: %w", err)
		}
		if got, ok, err = readClusterData(dir); err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("--cluster-data %s: %s vanished after it was written", dir, clusterFileName)
		}
	}
	if err := sameCluster(dir, got, want); err != nil {
		return "", err
	}
	if got.DataID == "" {
		return "", fmt.Errorf("--cluster-data %s: %s holds no data id", dir, clusterFileName)
	}
	return got.DataID, nil
}

// linkNewFile writes b durably to dir/name unless name exists: a
// temporary file synced and linked into place (of two writers one wins),
// then the directory synced.
func linkNewFile(dir, name string, b []byte) error {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// clusterCursorKey signs the account tools' cursors: a sub-key of the
// master key, so a cursor one member hands out is honoured by every other.
func clusterCursorKey(masterKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, masterKey, nil, "guarded-exchange cluster cursor key v1", 32)
}

// clusterCallKey seals the calls between members and their answers
// (docs/cluster.md "Security"): a sub-key of the master key with its own
// label, so only a holder of the master key can make a call a shard
// serves.
func clusterCallKey(masterKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, masterKey, nil, "guarded-exchange cluster call key v1", 32)
}

// memberStack is what one member shares between its front and the shards
// it hosts: the member's own journal in its home (server_started, control
// refusals, refused sessions), a market-only actor system on it (the
// market reads and Validate), and the venue's market source, feed and
// client and stream factories, which every hosted shard's system uses.
type memberStack struct {
	log      *wal.Log
	sys      *actors.System
	venue    venueConfig
	feed     *venue.MarketFeed
	market   actors.MarketSource
	clients  actors.ClientFactory
	streams  actors.StreamFactory
	key      []byte
	stateKey []byte
	margin   uint64
	started  func(context.Context) error
	logger   *slog.Logger
	dataDir  string

	// The member once it joined, and the shard systems running here: a
	// topology change ends the agent sessions of members that left
	// (sessionfronts, docs/cluster.md "Sessions and the dead-man switch").
	mu       sync.Mutex
	member   *member.Member
	shards   map[*actors.System]bool
	topology chan struct{} // a change to follow (buffer 1: coalesced)
}

// startMemberStack opens the member's home journal and the venue and
// starts the market-only system; it queues server_started.
func startMemberStack(ctx context.Context, p paths, vc venueConfig, masterKey []byte, logger *slog.Logger, version string, co *cli.ClusterOptions, count int) (*memberStack, error) {
	stateKey, err := mcp.RequestStateKey(masterKey)
	if err != nil {
		return nil, err
	}
	margin, err := diskMargin()
	if err != nil {
		return nil, err
	}
	l, rec, err := wal.Open(p.journal(), wal.Options{})
	if err != nil {
		return nil, fmt.Errorf("journal: %w; inspect it with `guarded-exchange journal verify --dir %s`", err, p.journal())
	}
	ms := &memberStack{log: l, venue: vc, key: masterKey, stateKey: stateKey, margin: margin, logger: logger, dataDir: co.DataDir}
	// The venue pieces are built as startStack builds them (stack.go).
	st := &stack{venue: vc}
	client, err := st.venueClient(vc, p, logger)
	if err != nil {
		ms.close()
		return nil, err
	}
	cache := venue.NewInstrumentCache(client, instrumentTTL, nil)
	ms.market = marketSource{Client: client, cache: cache}
	if ms.feed, err = st.marketFeed(vc, client, cache, logger); err != nil {
		ms.close()
		return nil, err
	}
	ms.clients, ms.streams = st.clientFactory(logger), st.streamFactory(logger)
	ms.sys, err = actors.Start(actors.Config{
		Journal: l, Market: ms.market, Logger: logger, Venue: vc.level(), Environment: vc.Name,
		JournalDir: p.journal(), DiskMarginBytes: margin,
	})
	if err != nil {
		ms.close()
		return nil, err
	}
	if rec != nil && rec.TornTail {
		logger.Warn("journal: cut a torn last record", "segment", rec.Segment, "dropped_bytes", rec.DroppedBytes, "last_good_seq", rec.LastGoodSeq)
		if _, err := ms.sys.JournalJSON(ctx, messages.RecordRecoveredTornTail, "", messages.ActorSystem, map[string]any{
			"segment": rec.Segment, "dropped_bytes": rec.DroppedBytes, "last_good_seq": rec.LastGoodSeq, "broken_copy": rec.BrokenCopy,
		}); err != nil {
			ms.close()
			return nil, err
		}
	}
	ms.started, err = ms.sys.JournalJSONQueued(messages.RecordServerStarted, map[string]any{
		"pid": os.Getpid(), "version": version, "venue": vc.Name,
		"cluster": co.Name, "member": co.Advertise, "shards": count,
	})
	if err != nil {
		ms.close()
		return nil, err
	}
	return ms, nil
}

// startShard is the member's shard.StartFunc: an actor system for the
// shard on its fenced journal, with this member's venue pieces. Users
// with an open attempt, a live confirmation or a heartbeat start at once
// (actors.Start's recovery phase); every user with a stored key for this
// venue is then started in the background as serve starts its user
// (recheckAtStart): its key re-checked, its venue actor and private
// stream running, so orders placed elsewhere and pushes keep flowing
// after a move.
func (ms *memberStack) startShard(_ context.Context, slot route.Slot, log *wal.Log, replay *actors.UserReplay) (*shard.Running, error) {
	var users []string
	if _, err := replay.OpenStoredKeys(ms.key, ms.venue.Name, func(user, _ string, _ messages.Secret) {
		users = append(users, user)
	}); err != nil {
		return nil, err
	}
	logger := ms.logger.With("shard", slot.Index)
	sys, err := actors.Start(ms.shardConfig(slot, log, replay, logger))
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	next := make(chan string)
	for range min(shardUserStarts, len(users)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				recheckUser(bctx, sys, u, ms.venue.Name, logger)
			}
		}()
	}
	go func() {
		defer close(next)
		for _, u := range users {
			select {
			case next <- u:
			case <-bctx.Done():
				return
			}
		}
	}()
	logger.Info("shard started", "users_with_keys", len(users))
	ms.hostShard(sys, logger)
	return &shard.Running{Target: sys, Stop: func() {
		ms.mu.Lock()
		delete(ms.shards, sys)
		ms.mu.Unlock()
		cancel()
		wg.Wait()
		sys.Stop()
	}}, nil
}

// hostShard restores the agent sessions the shard's journal counts open
// and ends those of members no longer in the topology (D192); later
// topology changes end the sessions of members that leave.
func (ms *memberStack) hostShard(sys *actors.System, logger *slog.Logger) {
	restored := sys.RestoreSessions()
	ms.mu.Lock()
	if ms.shards == nil {
		ms.shards = map[*actors.System]bool{}
	}
	ms.shards[sys] = true
	m := ms.member
	ms.mu.Unlock()
	ended := 0
	if m != nil {
		ended = sys.EndSessionsOf(context.Background(), frontAlive(m))
	}
	if restored > 0 {
		logger.Info("shard: agent sessions restored from the journal", "open", restored, "ended_gone_fronts", ended)
	}
}

// frontAlive reports whether a session's front is a member of m's last
// topology; before the first topology no front is known to be gone.
func frontAlive(m *member.Member) func(front string) bool {
	return func(front string) bool {
		alive, known := m.Alive(front)
		return alive || !known
	}
}

// topologyChanged is the member's topology callback: it must not block,
// so it only marks a change for followTopology's loop.
func (ms *memberStack) topologyChanged(m *member.Member) {
	ms.mu.Lock()
	ms.member = m
	ch := ms.topology
	ms.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

// followTopology starts the loop that follows topology changes and
// returns its stop. On each change the shards this member runs end the
// agent sessions of members that left, and every shard that has a
// journal is looked up, which activates it on its owner: a shard whose
// owner died starts on its new owner without waiting for a user's call,
// so its users' venue actors, private streams and dead-man switches run
// again (docs/cluster.md "Sessions and the dead-man switch").
func (ms *memberStack) followTopology(count int) (stop func()) {
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	ms.mu.Lock()
	ms.topology = ch
	ms.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-ch:
			}
			ms.mu.Lock()
			m := ms.member
			systems := make([]*actors.System, 0, len(ms.shards))
			for sys := range ms.shards {
				systems = append(systems, sys)
			}
			ms.mu.Unlock()
			if m == nil {
				continue
			}
			for _, sys := range systems {
				if n := sys.EndSessionsOf(context.Background(), frontAlive(m)); n > 0 {
					ms.logger.Info("ending the agent sessions of members that left the cluster", "sessions", n)
				}
			}
			for n := range count {
				select {
				case <-done:
					return
				default:
				}
				if _, err := os.Stat(shard.JournalDir(ms.dataDir, n)); err == nil {
					m.Cluster().Get(strconv.Itoa(n), shard.KindName)
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}

// shardConfig is the actors.Config of shard slot's system.
func (ms *memberStack) shardConfig(slot route.Slot, log *wal.Log, replay *actors.UserReplay, logger *slog.Logger) actors.Config {
	return actors.Config{
		Journal: log, Market: ms.market, Logger: logger, Users: replay, Venue: ms.venue.level(),
		Environment: ms.venue.Name, MasterKey: ms.key, Clients: ms.clients, Streams: ms.streams, Feed: ms.feed,
		JournalDir: shard.JournalDir(ms.dataDir, slot.Index), DiskMarginBytes: ms.margin, Shard: slot,
		ConfirmCLI: envBool(os.Getenv, "GX_CONFIRM_CLI_ENABLED"),
		// No venue write leaves once the shard's lock may be lost (D198).
		Fence: log.Owned,
	}
}

// close stops the member's system, the feed and the journal.
func (ms *memberStack) close() {
	if ms.sys != nil {
		ms.sys.Stop()
		ms.sys = nil
	}
	if ms.feed != nil {
		ms.feed.Close()
		ms.feed = nil
	}
	if ms.log != nil {
		_ = ms.log.Close()
		ms.log = nil
	}
}

// clusterBackend is the member's mcp.Backend: the market reads and
// Validate are answered here, every user call goes to the user's shard.
// Its Handle is never used: mcp.HTTPBackend sends commands with the
// call's token through calls.Submit.
type clusterBackend struct {
	calls *shard.Client
	local *actors.System
}

func (b clusterBackend) Ticker(ctx context.Context, req *messages.GetTickerRequest) (*messages.Ticker, error) {
	return b.local.Ticker(ctx, req)
}
func (b clusterBackend) Orderbook(ctx context.Context, req *messages.GetOrderbookRequest) (*messages.Orderbook, error) {
	return b.local.Orderbook(ctx, req)
}
func (b clusterBackend) Klines(ctx context.Context, req *messages.GetKlinesRequest) ([]messages.Kline, error) {
	return b.local.Klines(ctx, req)
}
func (b clusterBackend) Instrument(ctx context.Context, req *messages.GetInstrumentRequest) (*messages.Instrument, error) {
	return b.local.Instrument(ctx, req)
}
func (b clusterBackend) Validate(cmd messages.Command) error { return b.local.Validate(cmd) }
func (b clusterBackend) ToolCalled(ctx context.Context, call *messages.ToolCalled, durable bool) (func(context.Context) error, error) {
	return b.calls.ToolCalled(ctx, call, durable)
}
func (b clusterBackend) Handle(context.Context, messages.Command, string) (any, error) {
	return nil, messages.Internal(errors.New("cluster: a command without its call's origin"))
}
func (b clusterBackend) Account(ctx context.Context, req messages.AccountRequest) (any, error) {
	return b.calls.Account(ctx, req)
}
func (b clusterBackend) MyJournal(user string, before uint64, limit int) messages.JournalPage {
	return b.calls.MyJournal(user, before, limit)
}
func (b clusterBackend) SessionEvent(ctx context.Context, user string, kind messages.SessionEventKind) {
	b.calls.SessionEvent(ctx, user, kind)
}
func (b clusterBackend) WaitForUpdate(ctx context.Context, r *messages.WaitForUpdateRequest) (*messages.UpdateAnswer, error) {
	return b.calls.WaitForUpdate(ctx, r)
}
func (b clusterBackend) CallsRateLimited(ev *messages.CallsRateLimitedEvent) error {
	return b.calls.CallsRateLimited(ev)
}

// clusterControl is the member's control.Backend: commands go to their
// shard, the socket's own records (control refusals) to the member's
// journal.
type clusterControl struct {
	calls *shard.Client
	local *actors.System
}

func (c clusterControl) Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error) {
	return c.calls.Submit(ctx, cmd, origin)
}
func (c clusterControl) JournalJSON(ctx context.Context, typ messages.RecordType, user, actorName string, v any) (wal.Record, error) {
	return c.local.JournalJSON(ctx, typ, user, actorName, v)
}
