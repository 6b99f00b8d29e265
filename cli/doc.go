// Package cli is the command-line surface of guarded-exchange: the kong
// command tree, its flags and environment variables (SPEC §2, §3), and the
// exit-code rules. It parses and delegates; the work is done by a Runtime
// that the composition root (cmd/guarded-exchange) binds in, so this
// package imports nothing from the module but messages.
//
// Commands that change state will speak to a running server over the
// control socket with the typed messages of package messages (SPEC §7).
package cli
