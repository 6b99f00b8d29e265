package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// ClientFactory builds a signed REST client for one key on the process's
// venue. An empty key gives a public client.
type ClientFactory func(apiKey, apiSecret string) (*venue.Client, error)

// checkKeyRequest asks the venue actor what a key may do
// (/v5/user/query-api). Answer: *checkKeyResponse.
type checkKeyRequest struct {
	apiKey    string
	apiSecret messages.Secret
}

type checkKeyResponse struct {
	info *messages.APIKeyInfo
	err  *messages.Error
}

// venueActor is the one path from a user to the venue with that user's
// key: it owns the signed REST client (one actor per user and venue, a
// child of the user actor). Each request runs on its own goroutine with a
// deadline and answers the original requester, so the mailbox never waits
// on the network.
type venueActor struct {
	client  *venue.Client   // nil until the user has a key
	keyErr  *messages.Error // why client is nil although a key is stored
	factory ClientFactory
	timeout time.Duration
	logger  *slog.Logger
}

func (v *venueActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *checkKeyRequest:
		v.serve(ctx, func(c context.Context) any {
			client, err := v.factory(m.apiKey, m.apiSecret.Reveal())
			if err != nil {
				return &checkKeyResponse{err: messages.AsError(err)}
			}
			info, err := client.QueryAPIKey(c)
			return &checkKeyResponse{info: info, err: messages.AsError(err)}
		})
	case *messages.GetBalancesRequest:
		v.serveRead(ctx, func(c context.Context) (any, error) { return v.client.WalletBalance(c) })
	case *messages.GetPositionsRequest:
		v.serveRead(ctx, func(c context.Context) (any, error) {
			p, err := v.client.Positions(c, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: m.Symbol, Limit: m.Limit, Cursor: m.Cursor})
			return &p, err
		})
	case *messages.GetOpenOrdersRequest:
		v.serveRead(ctx, func(c context.Context) (any, error) {
			p, err := v.client.OpenOrders(c, venue.OrderQuery{Category: m.Category, Symbol: m.Symbol, Limit: m.Limit, Cursor: m.Cursor})
			return &p, err
		})
	case *messages.GetOrderHistoryRequest:
		v.serveRead(ctx, func(c context.Context) (any, error) {
			p, err := v.client.OrderHistory(c, venue.HistoryQuery{Category: m.Category, Symbol: m.Symbol, Start: m.Start, End: m.End, Limit: m.Limit, Cursor: m.Cursor})
			return &p, err
		})
	case *messages.GetTradesRequest:
		v.serveRead(ctx, func(c context.Context) (any, error) {
			p, err := v.client.Executions(c, venue.HistoryQuery{Category: m.Category, Symbol: m.Symbol, Start: m.Start, End: m.End, Limit: m.Limit, Cursor: m.Cursor})
			return &p, err
		})
	}
}

// serveRead runs a signed read; without a client (no key) it refuses.
func (v *venueActor) serveRead(ctx actor.Context, call func(context.Context) (any, error)) {
	if v.client == nil {
		if s := ctx.Sender(); s != nil {
			if v.keyErr != nil {
				ctx.Respond(v.keyErr)
			} else {
				ctx.Respond(noKeyError())
			}
		}
		return
	}
	v.serve(ctx, func(c context.Context) any {
		res, err := call(c)
		if err != nil {
			return messages.AsError(err)
		}
		return res
	})
}

func (v *venueActor) serve(ctx actor.Context, call func(context.Context) any) {
	serveOffMailbox(ctx, v.logger, v.timeout, call)
}

func noKeyError() *messages.Error {
	return &messages.Error{
		Code:     messages.CodeExchangeCredentialsInvalid,
		Message:  "no exchange key is stored for this user and venue",
		NextStep: "add a key with `guarded-exchange keys add`, outside the chat",
	}
}
