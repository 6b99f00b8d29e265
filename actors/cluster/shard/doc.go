// Package shard is a cluster shard: its fenced journal and the shard
// virtual actor that hosts it (docs/cluster.md "One writer per shard",
// "A shard's activation").
//
// Open opens the shard's wal directory for the holder of the shard's lock
// (actors/cluster/fence), with the lock's epoch in every record and an
// owner record opening each owner's turn. The log it returns checks the
// lock before each write and again after its fsync (wal.Options.Fence):
// once the lock is lost, nothing more is written and nothing is
// acknowledged, and the shard's System answers every write shard_fenced
// (internal_error with details.reason "shard_fenced").
//
// NewKind is the shard kind a member hosts: an activation takes the
// lock, opens the journal, starts the shard's System and serves calls;
// ClusterTransport carries calls to it from any member.
package shard
