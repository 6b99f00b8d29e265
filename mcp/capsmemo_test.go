package mcp

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// canElicitForm keeps its answer for the last capabilities value seen in
// _meta; a different value (or the same map changed after the call) must
// get its own answer, the SDK's, never the kept one.
func TestCanElicitFormMemoFollowsTheValue(t *testing.T) {
	callWith := func(caps map[string]any) *call {
		return &call{req: &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{
			Meta: sdk.Meta{sdk.MetaKeyClientCapabilities: caps},
		}}}
	}
	form := func() map[string]any { return map[string]any{"elicitation": map[string]any{"form": map[string]any{}}} }
	urlOnly := func() map[string]any { return map[string]any{"elicitation": map[string]any{"url": map[string]any{}}} }
	cases := []struct {
		name string
		caps map[string]any
		want bool
	}{
		{"form", form(), true},
		{"form again", form(), true},
		{"url only", urlOnly(), false},
		{"url only again", urlOnly(), false},
		{"form after url", form(), true},
		{"no elicitation", map[string]any{"sampling": map[string]any{}}, false},
		{"elicitation that does not decode", map[string]any{"elicitation": "yes"}, false},
		{"empty elicitation", map[string]any{"elicitation": map[string]any{}}, true},
	}
	for _, c := range cases {
		if got := callWith(c.caps).canElicitForm(); got != c.want {
			t.Errorf("%s: canElicitForm %v, want %v", c.name, got, c.want)
		}
	}
	// The kept copy is the memo's own: changing the request's map after
	// the call changes nothing kept.
	m := form()
	if !callWith(m).canElicitForm() {
		t.Fatal("form: want true")
	}
	m["elicitation"] = map[string]any{"url": map[string]any{}}
	if callWith(urlOnly()).canElicitForm() {
		t.Fatal("url only after a changed map: want false")
	}
}
