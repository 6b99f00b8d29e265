// Package messages is the vocabulary of guarded-exchange: the typed messages
// that reach actors (tool calls, CLI commands, venue updates), the domain
// values they carry (tickers, books, instruments), the journal record types,
// and the stable error codes of docs/errors.md.
//
// It imports nothing from this module, so every other package may depend on
// it and it may depend on none of them.
//
// Naming (docs/invariants.md "Rules of the code"): commands are imperative, events past tense, and asks
// come in XxxRequest/XxxResponse pairs. Messages are sent as pointers and
// never mutated after sending.
package messages
