// Package member starts this process as a member of a protoactor cluster:
// an actor system with gRPC remoting on the advertised address, membership
// through protoactor's etcd provider, and placement of virtual actors by
// identity (disthash). It is the cluster's engine, not a protocol of our
// own (docs/cluster.md "The pieces").
package member
