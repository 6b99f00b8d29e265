// Package etcdtest starts a real etcd server inside a test process
// (go.etcd.io/etcd/server/v3/embed) on loopback, with random ports and a
// temporary data directory, and a loopback TCP proxy in front of it that a
// test can cut to take a client off etcd without stopping the server.
//
// Nothing here reaches beyond 127.0.0.1: the server listens there and the
// proxy dials only the server's own address.
package etcdtest
