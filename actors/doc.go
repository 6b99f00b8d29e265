// Package actors hosts the server's state owners on protoactor-go: a root
// supervisor; the users supervisor with, per user, a supervisor of two
// siblings: the user actor (policy, kill switch, sealed exchange keys, order
// state, pending confirmations (confirm.go) and the actions in flight;
// spawned on first use) and the venue
// actor (the user's venue session, every signed venue call). Public
// market reads hold no state and go through no actor: System makes them
// through the MarketSource it is given (market.go, decisions D131).
// Every record goes through the one journal writer, package actors/journal,
// which is not an actor.
//
// Every input is a typed message from package messages; System is the
// façade the MCP server, the control socket and the in-process CLI call.
//
// Rules every actor here keeps (docs/architecture.md):
//   - Each piece of state has exactly one owner; nothing outside an actor
//     holds a pointer into its state, and replies carry copies.
//   - No actor blocks its mailbox on the network or on fsync: slow work runs
//     on a goroutine and comes back as a message. A user's work that waits
//     on the venue is an action in the user actor's table (actions.go);
//     only journal writes keep their strict order.
//   - A panic inside Receive is recovered by a receiver middleware that
//     answers the crashing request with internal_error, then re-panics so
//     the supervisor restarts the actor (protoactor otherwise loses the
//     message silently; see docs/invariants.md "Libraries: what to keep in mind").
//   - Nothing writes to stdout: protoactor's own logging goes to the slog
//     logger given in Config, which writes JSON to stderr.
package actors
