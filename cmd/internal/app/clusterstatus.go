package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/member"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/shard"
	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// clusterEtcdTimeout bounds how long cluster status waits for etcd: the
// dial and each read.
var clusterEtcdTimeout = 5 * time.Second

// The cluster's keys in etcd (docs/cluster.md): protoactor's etcd
// provider registers each member under membersPrefix, the shard count and
// the shard locks live under shardsPrefix.
func membersPrefix(name string) string { return member.KeyPrefix + "members/" + name + "/" }
func shardsPrefix(name string) string  { return member.KeyPrefix + name + "/shards/" }

// shardJournalDir is shard n's journal under --cluster-data.
func shardJournalDir(data string, n int) string {
	return filepath.Join(data, "shards", strconv.Itoa(n), "journal")
}

// clusterStatus is what `cluster status` prints (its JSON form).
type clusterStatus struct {
	Cluster string `json:"cluster"`
	// ShardCount is the cluster's fixed number of shards; null when etcd
	// does not hold it.
	ShardCount *int            `json:"shard_count"`
	Members    []clusterMember `json:"members"`
	Shards     []clusterShard  `json:"shards"`
}

// clusterMember is one member registered in etcd.
type clusterMember struct {
	// Address is the advertised HOST:PORT.
	Address string   `json:"address"`
	ID      string   `json:"id"`
	Kinds   []string `json:"kinds"`
	// Shards are the shards whose lock this member holds.
	Shards []int `json:"shards"`
}

// clusterShard is one shard: its lock's holder and the users its journal
// holds.
type clusterShard struct {
	Shard int `json:"shard"`
	// Owned: some member holds the shard's lock.
	Owned bool `json:"owned"`
	// Owner is the holder's advertised address; "" when unowned, or when
	// neither the lock key nor the journal names it.
	Owner string `json:"owner,omitempty"`
	// Epoch is the holder's epoch: its lock key's create revision.
	Epoch uint64 `json:"epoch,omitempty"`
	// Waiting counts the members queued for the lock behind the holder.
	Waiting int `json:"waiting"`
	// Users counts the users created in the shard's journal, Disabled
	// those of them disabled; null without --cluster-data or when the
	// journal could not be read (JournalError says why).
	Users        *int   `json:"users"`
	Disabled     *int   `json:"disabled_users"`
	JournalError string `json:"journal_error,omitempty"`
}

// ClusterStatus prints the cluster's members, shards, owners, epochs and
// users (docs/cluster.md "The pieces"). It reads etcd and, with
// --cluster-data, copies of the shard journals; it writes nothing.
func (r *Runtime) ClusterStatus(ctx context.Context, _ *cli.Globals, o cli.ClusterStatusOptions, out cli.IO) error {
	endpoints := slices.DeleteFunc(slices.Clone(o.Etcd), func(s string) bool { return strings.TrimSpace(s) == "" })
	if len(endpoints) == 0 {
		return cli.CannotStart("--cluster-etcd names no endpoint")
	}
	if !clusterNameRE.MatchString(o.Cluster) {
		return cli.CannotStart("--cluster %q: a cluster's name is 1 to 64 letters, digits, '.', '_' or '-'", o.Cluster)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: clusterEtcdTimeout, Logger: zap.NewNop()})
	if err != nil {
		return cli.CannotStart("etcd at %s: %v", strings.Join(endpoints, ","), err)
	}
	defer c.Close()
	st, err := readClusterStatus(ctx, c, o.Cluster, o.Data)
	if err != nil {
		if errors.Is(err, errUnknownCluster) {
			return cli.Refused("no cluster named %q in etcd at %s (no member registered, no shard count, no shard lock)", o.Cluster, strings.Join(endpoints, ","))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return cli.CannotStart("etcd at %s did not answer within %s: is it running and reachable?", strings.Join(endpoints, ","), clusterEtcdTimeout)
		}
		return cli.CannotStart("etcd at %s: %v", strings.Join(endpoints, ","), err)
	}
	if o.Format == "json" {
		enc := json.NewEncoder(out.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return writeClusterTable(out.Out, st)
}

var errUnknownCluster = errors.New("unknown cluster")

// clusterNameRE is what serve --cluster accepts: the name is a segment of
// the cluster's etcd keys.
var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// readClusterStatus reads the cluster name's members and shards from etcd
// and, when data is not empty, its shard journals.
func readClusterStatus(ctx context.Context, c *clientv3.Client, name, data string) (*clusterStatus, error) {
	rctx, cancel := context.WithTimeout(ctx, clusterEtcdTimeout)
	defer cancel()
	mresp, err := c.Get(rctx, membersPrefix(name), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	// The shard keys at the revision of the member read: one view.
	sresp, err := c.Get(rctx, shardsPrefix(name), clientv3.WithPrefix(), clientv3.WithRev(mresp.Header.Revision))
	if err != nil {
		return nil, err
	}
	if len(mresp.Kvs) == 0 && len(sresp.Kvs) == 0 {
		return nil, errUnknownCluster
	}
	st := &clusterStatus{Cluster: name, Members: []clusterMember{}, Shards: []clusterShard{}}
	for _, kv := range mresp.Kvs {
		n, err := etcd.NewNodeFromBytes(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("member key %s: %v", kv.Key, err)
		}
		host, port := n.GetAddress()
		kinds := n.Kinds
		if kinds == nil {
			kinds = []string{}
		}
		st.Members = append(st.Members, clusterMember{Address: net.JoinHostPort(host, strconv.Itoa(port)), ID: n.ID, Kinds: kinds, Shards: []int{}})
	}
	slices.SortFunc(st.Members, func(a, b clusterMember) int { return strings.Compare(a.Address, b.Address) })

	// Lock keys: <prefix><n>/lock/<lease>; the holder is the key with the
	// lowest create revision (etcd's concurrency.Mutex).
	shards := map[int]*clusterShard{}
	get := func(n int) *clusterShard {
		if shards[n] == nil {
			shards[n] = &clusterShard{Shard: n}
		}
		return shards[n]
	}
	holder := map[int]int64{}
	for _, kv := range sresp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), shardsPrefix(name))
		if rest == "count" {
			cnt, err := strconv.Atoi(strings.TrimSpace(string(kv.Value)))
			if err != nil || cnt < 1 {
				return nil, fmt.Errorf("shard count %q is not a positive number", kv.Value)
			}
			st.ShardCount = &cnt
			continue
		}
		num, tail, ok := strings.Cut(rest, "/")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 0 || !strings.HasPrefix(tail, "lock/") {
			continue // not a key of this layout
		}
		s := get(n)
		if !s.Owned {
			s.Owned = true
		} else {
			s.Waiting++
		}
		if rev, seen := holder[n]; !seen || kv.CreateRevision < rev {
			holder[n] = kv.CreateRevision
			s.Epoch = uint64(kv.CreateRevision)
			s.Owner = string(kv.Value)
		}
	}
	if st.ShardCount != nil {
		for n := range *st.ShardCount {
			get(n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(shards)) {
		s := shards[n]
		if data != "" {
			readShardJournal(s, shardJournalDir(data, n))
		}
		st.Shards = append(st.Shards, *s)
		if !s.Owned {
			continue
		}
		for i := range st.Members {
			if st.Members[i].Address == s.Owner {
				st.Members[i].Shards = append(st.Members[i].Shards, n)
			}
		}
	}
	return st, nil
}

// readShardJournal counts the users of the shard journal in dir, on a
// copy (a member may be writing it), and fills in the owner from the
// journal's shard_owner record of the lock's epoch when the lock key does
// not name it. A journal that does not exist holds no user yet.
func readShardJournal(s *clusterShard, dir string) {
	created, disabled := map[string]bool{}, map[string]bool{}
	count := func() {
		u, d := len(created), len(disabled)
		s.Users, s.Disabled = &u, &d
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		count()
		return
	}
	cp, cleanup, err := wal.Snapshot(dir)
	if err != nil {
		s.JournalError = err.Error()
		return
	}
	defer cleanup()
	owner := ""
	err = wal.Scan(cp, func(rec wal.Record) error {
		switch messages.RecordType(rec.Type) {
		case messages.RecordUserCreated:
			created[rec.User] = true
		case messages.RecordUserDisabled:
			if created[rec.User] {
				disabled[rec.User] = true
			}
		case messages.RecordShardOwner:
			var p shard.OwnerPayload
			if json.Unmarshal(rec.Payload, &p) == nil && s.Owned && p.Epoch == s.Epoch {
				owner = p.Member
			}
		}
		return nil
	})
	if err != nil {
		s.JournalError = err.Error()
		return
	}
	if s.Owned && s.Owner == "" {
		s.Owner = owner
	}
	count()
}

// writeClusterTable prints st for a human: a summary line, the members,
// the shards.
func writeClusterTable(w io.Writer, st *clusterStatus) error {
	var b bytes.Buffer
	count := "unknown"
	if st.ShardCount != nil {
		count = strconv.Itoa(*st.ShardCount)
	}
	owned := 0
	for _, s := range st.Shards {
		if s.Owned {
			owned++
		}
	}
	fmt.Fprintf(&b, "cluster %s: %d members, %s shards (%d owned)\n\n", st.Cluster, len(st.Members), count, owned)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tSHARDS\tOWNS\tID")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Address, len(m.Shards), intList(m.Shards), m.ID)
	}
	tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tOWNER\tEPOCH\tWAITING\tUSERS")
	for _, s := range st.Shards {
		owner, epoch := "unowned", "-"
		if s.Owned {
			owner, epoch = s.Owner, strconv.FormatUint(s.Epoch, 10)
			if owner == "" {
				owner = "unknown"
			} else if !slices.ContainsFunc(st.Members, func(m clusterMember) bool { return m.Address == s.Owner }) {
				owner += " (not a registered member)"
			}
		}
		users := "unknown"
		switch {
		case s.JournalError != "":
			users = "unknown (journal: " + s.JournalError + ")"
		case s.Users != nil && *s.Disabled > 0:
			users = fmt.Sprintf("%d (%d disabled)", *s.Users, *s.Disabled)
		case s.Users != nil:
			users = strconv.Itoa(*s.Users)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", s.Shard, owner, epoch, s.Waiting, users)
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

func intList(ns []int) string {
	if len(ns) == 0 {
		return "-"
	}
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
