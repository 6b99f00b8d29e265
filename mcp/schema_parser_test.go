package mcp

import (
	"context"
	"maps"
	"slices"
	"testing"
)

// Every property a tool advertises in its inputSchema is read by that
// tool's argument parser, and every argument the parser reads is
// advertised: the parser runs in probe mode (every read goes on, done
// refuses) and the names it read are compared with the schema's
// properties.
func TestEveryAdvertisedArgumentIsParsed(t *testing.T) {
	s := &server{}
	tools := newRegistry(s.allTools()...).tools
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		tl := tools[name]
		advertised, _ := tl.schema["properties"].(map[string]any)
		c := &call{principal: Principal{User: "probe", Profile: ProfileTrade}, args: parseArgs(nil)}
		c.args.probe = true
		if _, err := tl.handle(context.Background(), c); err != errProbed {
			t.Errorf("%s: the parser did not reach done: %v", name, err)
			continue
		}
		for p := range advertised {
			if !c.args.used[p] {
				t.Errorf("%s: advertises %q, which its parser never reads", name, p)
			}
		}
		for p := range c.args.used {
			if _, ok := advertised[p]; !ok {
				t.Errorf("%s: its parser reads %q, which its schema does not advertise", name, p)
			}
		}
	}
}
