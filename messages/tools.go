package messages

// ToolCalled is the event of one MCP tools/call reaching the server. A
// tool_call record is journaled for it before the call is handled: who
// called, which tool, and a digest of the arguments (never the values, which
// may be sensitive or hostile).
type ToolCalled struct {
	User    string `json:"user"`
	Profile string `json:"profile"`
	// Tool is the registry name, or "(unknown)" for a name not in the registry.
	Tool string `json:"tool"`
	// ArgsSHA256 is the hex SHA-256 of the raw arguments bytes.
	ArgsSHA256 string `json:"args_sha256"`
	// Admitted is false when the tool is hidden from the caller's profile or unknown.
	Admitted bool `json:"admitted"`
	// TokenID names the bearer token of a call over HTTP (never the token).
	TokenID string `json:"token_id,omitempty"`
}
