package testkit

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client says how Connect's client session presents itself.
type Client struct {
	// Name is what the client claims to be (empty: "test").
	Name string
	// Era is the protocol version to ask for (empty: the newest).
	Era string
	// Options are the client's options (nil: none), e.g. an elicitation
	// handler.
	Options *sdk.ClientOptions
}

// Connect serves srv over the SDK's in-memory transports and returns a
// client session; both ends close when the test ends.
func Connect(t testing.TB, srv *sdk.Server, c Client) *sdk.ClientSession {
	t.Helper()
	if c.Name == "" {
		c.Name = "test"
	}
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: c.Name}, c.Options).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: c.Era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
