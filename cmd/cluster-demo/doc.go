// Command cluster-demo runs a whole cluster on loopback for a look around
// (`make cluster-demo`, docs/cluster.md): an embedded etcd, the Bybit
// simulator (`guarded-exchange sim`) and three `guarded-exchange serve
// --transport http --cluster demo` members sharing one --cluster-data
// directory and one master key, each with its own home, all under one
// temporary directory. It creates a user with the simulator's key and a
// bearer token through one member's CLI, prints the three MCP URLs, the
// token, a client line and a curl line, and on Ctrl-C (SIGINT or SIGTERM)
// stops the members, the simulator and etcd and removes the directory.
package main
