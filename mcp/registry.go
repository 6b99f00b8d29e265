package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sync"

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
	// From the 2026-07-28 protocol on, a client sends its capabilities in
	// every request's _meta, and the SDK decodes them again for each call
	// (a marshal and a decode with a 32 KB buffer). A client sends the same
	// value call after call: the answer for the last value seen is kept and
	// reused while the value is equal (docs/decisions.md D181). When the
	// value does not decode, the SDK answers from the session's initialize
	// parameters: the kept answer then holds only for the same session.
	var raw map[string]any
	var sess *sdk.ServerSession
	if p := c.req.Params; p != nil {
		raw, _ = p.GetMeta()[sdk.MetaKeyClientCapabilities].(map[string]any)
		if c.req.Session != nil && c.req.Session.InitializeParams() != nil {
			sess = c.req.Session
		}
	}
	if raw != nil {
		if ok, hit := formCaps.get(sess, raw); hit {
			return ok
		}
	}
	caps := c.req.ClientCapabilities()
	ok := caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
	if raw != nil {
		formCaps.put(sess, raw, ok)
	}
	return ok
}

// formCaps is canElicitForm's answer for the last capabilities value seen
// in a request's _meta.
var formCaps capsMemo

// capsMemo keeps one decoded JSON value (a copy of its own), the session
// it came from when that session has initialize parameters, and the answer
// computed from them.
type capsMemo struct {
	mu     sync.Mutex
	sess   *sdk.ServerSession
	raw    map[string]any
	answer bool
}

// get returns the kept answer when sess is the kept session and raw equals
// the kept value.
func (m *capsMemo) get(sess *sdk.ServerSession, raw map[string]any) (answer, hit bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.raw == nil || m.sess != sess || !reflect.DeepEqual(m.raw, raw) {
		return false, false
	}
	return m.answer, true
}

// put keeps a copy of raw (the request's own map stays the request's),
// sess and the answer.
func (m *capsMemo) put(sess *sdk.ServerSession, raw map[string]any, answer bool) {
	cp, _ := copyJSONValue(raw).(map[string]any)
	m.mu.Lock()
	m.sess, m.raw, m.answer = sess, cp, answer
	m.mu.Unlock()
}

// copyJSONValue deep-copies a value decoded from JSON into any (maps,
// slices and scalars).
func copyJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyJSONValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyJSONValue(e)
		}
		return out
	default:
		return v
	}
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
