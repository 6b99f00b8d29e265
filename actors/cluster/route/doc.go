// Package route maps users, bearer tokens and token ids to the shards of a
// cluster (docs/cluster.md "Routing"). It keeps no state: a shard is a
// function of the name and the cluster's fixed shard count, so any member
// routes any call without asking anyone.
package route
