package shard

// CONTRACT STUB (session plan): the wire between a member's front and a
// shard. Owned by the "wire" work; bodies are filled in there. The
// signatures are shared with the "host" and "serve" work: change them only
// by agreement.

import (
	"context"
	"errors"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Target is what a shard serves to the other members: the calls of a
// member's HTTP front (mcp.Backend's user calls), its control socket
// (control.Backend) and its authentication. *actors.System is one.
type Target interface {
	Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error)
	Authenticate(token string) (user, tokenID string, err error)
	CallerProfile(user string) (messages.Profile, error)
	ToolCalled(ctx context.Context, call *messages.ToolCalled, durable bool) (wait func(context.Context) error, err error)
	Account(ctx context.Context, req messages.AccountRequest) (any, error)
	MyJournal(user string, before uint64, limit int) messages.JournalPage
	SessionEvent(ctx context.Context, user string, kind messages.SessionEventKind)
	WaitForUpdate(ctx context.Context, r *messages.WaitForUpdateRequest) (*messages.UpdateAnswer, error)
	CallsRateLimited(ev *messages.CallsRateLimitedEvent) error
}

// Transport carries one encoded call to shard number shard and returns
// the shard's encoded answer. An error is a transport failure (no answer
// came); the call's own errors travel inside the answer.
type Transport func(ctx context.Context, shard int, call []byte) ([]byte, error)

// Serve decodes one call, runs it on t and encodes its answer. It never
// panics on bad bytes: they are answered with an internal_error.
func Serve(ctx context.Context, t Target, call []byte) []byte {
	panic("shard.Serve: not implemented yet")
}

// Client is a member's handle on every shard of the cluster: each call is
// routed by its user (or token, or token id) to its shard (package
// route) and carried by the Transport. Its methods mirror Target's.
type Client struct {
	count int
	tr    Transport
}

// NewClient returns a Client for a cluster of count shards.
func NewClient(count int, tr Transport) *Client { return &Client{count: count, tr: tr} }

var errNotYet = errors.New("shard: wire not implemented yet")
