// Package fence is a shard's single-writer lock: a lease-backed mutex in
// etcd (go.etcd.io/etcd/client/v3/concurrency) with the epoch that fences
// its journal (docs/cluster.md "One writer per shard").
//
// Acquire waits until the caller owns the shard's lock. The lock's epoch is
// the create revision of the owner's key under the shard's prefix: etcd's
// revisions only grow, so every later owner of the shard has a strictly
// greater epoch than every earlier one.
//
// Lost closes the moment the lock can no longer be trusted: the lease was
// not renewed in time, etcd says it is gone, or the lock was released.
// The timing is the point of the package. Each renewal is a KeepAliveOnce
// whose send time t is taken before the request leaves; etcd resets the
// lease's expiry to (the moment it handles the request) + TTL, which is
// after t + TTL. So the lease cannot expire on the server before t + TTL,
// and no other member can own the key before then. The lock counts itself
// held only until t + TTL - Margin (Held compares the clock itself, Lost
// is closed by a timer at that instant): a holder that cannot reach etcd
// stops at least Margin before anyone can take over, as long as its
// process runs. A process that is paused past that point cannot see its
// own clock: docs/cluster.md "Failure model" says what the epoch in the
// journal does about it.
package fence
