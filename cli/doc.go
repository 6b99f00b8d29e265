// Package cli is the command-line surface of guarded-exchange: the kong
// command tree, its flags and environment variables (docs/commands.md), and the
// exit-code rules. It parses and delegates; the work is done by a Runtime
// that the composition root (cmd/guarded-exchange) binds in, so this
// package imports nothing from the module but messages.
//
// Commands that change state send typed messages (package messages) to the
// running server over the control socket (control.go), or, with no server,
// the Runtime hosts the same actors in-process (docs/commands.md "One code path for a change").
package cli
