// Package testkit builds, for tests only, the real stack a test of the
// server runs against, in one call: the simulator on loopback HTTP (and its
// private WebSocket stream), a journal in a directory, the actor system
// replaying it, the users the test names, and an MCP client session over
// the SDK's in-memory transports.
//
// It imports messages, wal, venue and actors, never mcp: the mcp
// package's own tests use it, and a kit importing mcp would make an import
// cycle. No non-test package of the product may import it
// (cmd/imports_test.go enforces both). The actors package's own tests
// cannot use it either (it imports actors); they keep their helpers.
package testkit
