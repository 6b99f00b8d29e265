package cli

import "context"

// ClusterStatusOptions are the flags of cluster status.
type ClusterStatusOptions struct {
	// Cluster is the cluster's name (serve --cluster).
	Cluster string
	// Etcd lists etcd's client endpoints (serve --cluster-etcd).
	Etcd []string
	// Data is the shared cluster data directory (serve --cluster-data),
	// read to count the users of each shard; empty: users unknown.
	Data string
	// Format is table or json.
	Format string
}

// ClusterCmd groups the cluster tools (docs/cluster.md).
type ClusterCmd struct {
	Status ClusterStatusCmd `cmd:"" help:"Members, shards per member, each shard's owner and epoch, users per shard: read from etcd (and --cluster-data), no server needed."`
}

// ClusterStatusCmd is `cluster status`.
type ClusterStatusCmd struct {
	Cluster string   `name:"cluster" required:"" help:"the cluster's name (serve --cluster)" placeholder:"NAME"`
	Etcd    []string `name:"cluster-etcd" required:"" sep:"," help:"etcd's client endpoints, comma-separated (serve --cluster-etcd)" placeholder:"URL"`
	Data    string   `name:"cluster-data" help:"the shared cluster data directory (serve --cluster-data), read-only, to count each shard's users; without it they are unknown" placeholder:"DIR"`
	Format  string   `default:"table" enum:"table,json" help:"table or json"`
}

// Run runs cluster status.
func (c *ClusterStatusCmd) Run(ctx context.Context, g *Globals, rt Runtime, io IO) error {
	return rt.ClusterStatus(ctx, g, ClusterStatusOptions{Cluster: c.Cluster, Etcd: c.Etcd, Data: c.Data, Format: c.Format}, io)
}
