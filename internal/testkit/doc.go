// Package testkit builds, for tests only, the real stack a test of the
// server runs against, in one call: the simulator on loopback HTTP (and its
// private WebSocket stream), a journal in a directory, the actor system
// replaying it, the users the test names, and an MCP client session over
// the SDK's in-memory transports.
//
// The parts under the actor system (simulator, venue clients, master key,
// journal) come from its subpackage rig; this package adds the actor
// system, the users and the MCP session. It imports messages, wal, venue
// and actors, never mcp: the mcp package's own tests use it, and a kit
// importing mcp would make an import cycle. The actors package's own tests
// cannot use it either (it imports actors); they build their System on
// rig, which imports no actors (docs/decisions.md D142). No non-test
// package of the product may import either (cmd/imports_test.go enforces
// all three rules).
package testkit
