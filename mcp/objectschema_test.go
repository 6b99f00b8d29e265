package mcp

// objectSchema builds an input schema with additionalProperties false,
// for the tools the tests register themselves (the server's own tools
// generate theirs: schema.go).
func objectSchema(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}
