// Package mcp is the Model Context Protocol surface of guarded-exchange,
// built on github.com/modelcontextprotocol/go-sdk (imported as sdk).
//
// One registry (registry.go) lists every tool with its kind, the profiles
// that may see it, its input schema and its handler. tools/list and the
// admission of tools/call are both derived from that registry in one
// middleware, so the advertised set and the refused set cannot drift apart.
//
// Arguments are validated here, by hand, field by field (args.go): a bad
// argument becomes invalid_params with {field, reason} and never echoes the
// rejected value. Every result, success or refusal, goes through one
// function (result.go) that builds the docs/errors.md shape. A panicking handler
// becomes internal_error with a request_id and the session lives on.
//
// Tools: market reads (market_tools.go), get_my_policy and
// activate_kill_switch (safety_tools.go), account reads (account_tools.go)
// with opaque, HMAC-bound cursors (cursor.go) and exchange free text kept
// in one untrusted_text field (untrusted.go).
//
// The package never writes to stdout; the stdio transport owns it.
package mcp
