// Package actors hosts the server's state owners on protoactor-go: a root
// supervisor, the journal actor (the single writer of the WAL, with group
// commit) and the market-data actor (the one path to the venue's public
// endpoints). Later issues add one actor per user and one venue actor per
// (user, venue) under the same root.
//
// Rules every actor here keeps (docs/architecture.md):
//   - Each piece of state has exactly one owner; nothing outside an actor
//     holds a pointer into its state, and replies carry copies.
//   - No actor blocks its mailbox on the network or on fsync: slow work runs
//     on a goroutine and comes back as a message.
//   - A panic inside Receive is recovered by a receiver middleware that
//     answers the crashing request with internal_error, then re-panics so
//     the supervisor restarts the actor (protoactor otherwise loses the
//     message silently; see reference/deps.md §1.5).
//   - Nothing writes to stdout: protoactor's own logging goes to the slog
//     logger given in Config, which writes JSON to stderr.
package actors
