// Package state is one user's state and the pure decisions on it: the
// events a user actor journals (Event, DecodeEvent), what a command would
// journal (User.Decide, User.DecideToken) or whether an action may go on
// (User.DecideAction), and the one Apply that changes the state, live or
// during replay (docs/architecture.md "A user actor"). It also holds
// who may cause each record (OriginAllowed) and the checks replay makes of
// every record. It imports neither the actor library, the journal, the
// venue nor any network code (cmd/imports_test.go): everything here is a
// plain synchronous value or function, tested without actors.
package state
