// Package shard is a cluster shard's fenced journal: the shard's wal
// directory written only while this member holds the shard's lock
// (actors/cluster/fence), with the lock's epoch in every record and an
// owner record opening each owner's turn (docs/cluster.md "One writer per
// shard").
//
// Journal.Append checks the lock before each write and again after its
// fsync: once the lock is lost, nothing more is written and nothing is
// acknowledged, and every append answers ErrFenced (the stable error
// code internal_error with details.reason "shard_fenced").
package shard
