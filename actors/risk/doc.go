// Package risk is the pure half of every trading tool: the risk gate and
// one descriptor per tool (Tool) with the checks of its arguments
// (Validate), their hash, the risk direction the first gate decides with,
// what the venue must read first (Needs) and the decision on the user's
// state and that read (Prepare, Decide), which returns a refusal or the
// planned answer with the write to send (Plan). The actors carry a
// decision out (package actors: the venue call, the journal records); the
// descriptor's carry-out half lives there (docs/architecture.md "Trading
// tools: descriptors and one driver"). It imports neither the actor
// library, the journal, the venue nor any network code
// (cmd/imports_test.go): everything here is a plain value or function,
// and each tool's decision table runs without actors.
package risk
