package mcp

import (
	"context"
	"encoding/json"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind says what a tool does to the world; annotations and visibility
// follow from it.
type Kind int

const (
	// KindRead tools only read (market data, account reads).
	KindRead Kind = iota + 1
	// KindSafety tools are offered to every profile and can only make
	// things safer or report (get_my_policy, activate_kill_switch).
	KindSafety
	// KindTrade tools change exchange state; only the trade profile sees them.
	KindTrade
)

// Profiles of docs/policy.md.
const (
	ProfileReadOnly = "read_only"
	ProfileTrade    = "trade"
)

// Principal is who is calling: the user and the profile of their effective
// policy. On stdio there is one principal per process.
type Principal struct {
	User    string
	Profile string
	// TokenID names the bearer token of an HTTP request; empty on stdio.
	TokenID string
}

// call is one admitted tool call as a handler sees it.
type call struct {
	principal Principal
	args      *args
	requestID string
	// req is the request itself: its session (to ask the human through
	// elicitation, on clients that declared it), the client's
	// capabilities, and on a repeated call the input responses and the
	// request state of an earlier input_required answer.
	req *sdk.CallToolRequest
}

// canElicitForm reports whether the calling client declared form
// elicitation, so a handler may ask the human through it.
func (c *call) canElicitForm() bool {
	if c.req == nil {
		return false
	}
	caps := c.req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
}

// inputResponse returns the response to the input request named key of an
// earlier input_required answer, and the request state it carried.
func (c *call) inputResponse(key string) (sdk.InputResponse, string, bool) {
	if c.req == nil || c.req.Params == nil {
		return nil, "", false
	}
	r, ok := c.req.Params.InputResponses[key]
	return r, c.req.Params.RequestState, ok
}

// handler runs one tool. It returns the payload to put in
// structuredContent, or a finished result (pendingResult,
// inputRequiredResult), or an error (a *messages.Error for refusals).
type handler func(ctx context.Context, c *call) (any, error)

// tool is one registry entry.
type tool struct {
	name        string
	title       string
	description string
	kind        Kind
	// schema is the JSON Schema of the arguments, advertised in tools/list.
	// Validation is done by the handler through args, not by the schema.
	schema map[string]any
	handle handler
}

// visibleTo reports whether the principal's profile may see and call t.
func (t *tool) visibleTo(p Principal) bool {
	switch t.kind {
	case KindRead, KindSafety:
		return p.Profile == ProfileReadOnly || p.Profile == ProfileTrade
	case KindTrade:
		return p.Profile == ProfileTrade
	}
	return false
}

// annotations derives the MCP hints from the kind: read and safety tools
// are read-only or non-destructive, trading tools are destructive. The
// title is the entry's own (not repeated here: tools/list stays lean).
func (t *tool) annotations() *sdk.ToolAnnotations {
	// openWorldHint is left out where it is true (the MCP default).
	yes, no := true, false
	switch t.kind {
	case KindRead:
		return &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no}
	case KindSafety:
		return &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}
	default:
		return &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &yes}
	}
}

// sdkTool is the tools/list entry.
func (t *tool) sdkTool() *sdk.Tool {
	return &sdk.Tool{
		Name:        t.name,
		Title:       t.title,
		Description: t.description,
		InputSchema: schemaJSON(t.schema),
		Annotations: t.annotations(),
	}
}

// registry is the one list of tools. It is built once and never changed
// while serving, so it needs no lock.
type registry struct {
	tools map[string]*tool
}

func newRegistry(tools ...*tool) *registry {
	r := &registry{tools: map[string]*tool{}}
	for _, t := range tools {
		if !toolNamePattern.MatchString(t.name) {
			panic("mcp: bad tool name " + t.name)
		}
		if _, dup := r.tools[t.name]; dup {
			panic("mcp: duplicate tool " + t.name)
		}
		r.tools[t.name] = t
	}
	return r
}

// lookup returns the tool named name.
func (r *registry) lookup(name string) (*tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// names lists the tool names, sorted.
func (r *registry) names() []string {
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// visible lists, sorted by name, the tools p may see.
func (r *registry) visible(p Principal) []*tool {
	var out []*tool
	for _, t := range r.tools {
		if t.visibleTo(p) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *tool) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return out
}

// mustJSON is for values that cannot fail to marshal (built by this package).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
