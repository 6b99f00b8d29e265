package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// ClientFactory builds a signed REST client for one key on the process's
// venue. An empty key gives a public client.
type ClientFactory func(apiKey, apiSecret string) (*venue.Client, error)

// checkKeyRequest asks the venue actor what a key may do
// (/v5/user/query-api) as one step of the user actor's action. It is a
// step whose outcome is journaled, so the outcome goes back to the user
// actor as a *keyChecked event, never to the original caller.
type checkKeyRequest struct {
	action    uint64
	ctx       context.Context // the caller's: cancellation and deadline
	apiKey    string
	apiSecret messages.Secret
}

// keyChecked is the outcome of a checkKeyRequest, sent to the user actor.
type keyChecked struct {
	action uint64
	info   *messages.APIKeyInfo
	err    *messages.Error
}

// accountAsk is an account read with the caller's context. Reads answer the
// caller directly: they change nothing, so nothing is journaled.
type accountAsk struct {
	ctx context.Context
	req messages.AccountRequest
}

// rekey tells the venue actor that the user's stored key changed: it
// rebuilds its session from the committed state.
type rekey struct{}

// venueActor owns one user's venue session (one actor per user and venue,
// a sibling of the user actor under the user's supervisor). Each call runs
// on its own goroutine with the caller's context and the request timeout,
// so the mailbox never waits on the network. Outcomes of steps that are
// journaled (key checks now, orders later) go back to the user actor as
// events; reads answer the caller directly.
type venueActor struct {
	*userDeps
	snap    *committed
	session venue.Session   // nil until the user has a key
	keyErr  *messages.Error // why session is nil although a key is stored
	// stream is the user's private stream (venuestream.go); streamGen
	// numbers it so that events of a replaced stream are dropped.
	stream    *venue.Stream
	streamGen uint64
	// cache is the user's stream cache, shared with the user actor.
	cache *streamCache
	// updates holds the pushed order rows until the user actor journals
	// them (venueupdates.go).
	updates *venueUpdateBuffer
	// watches are the wait_for_update calls waiting on the stream (watch.go).
	watches map[uint64]*watchAsk
	// ids are the venue order ids applied so far: an order shown under a
	// known order id and another client order id is not applied
	// (orderids.go).
	ids *orderIDBook
	// sends counts this user's venue writes in flight (recovery.go).
	sends *sendClock
}

func (v *venueActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started, *rekey:
		v.openSession()
		v.openStream(ctx)
	case *actor.Stopping, *actor.Restarting:
		v.closeStream()
	case *streamReady:
		v.onStreamReady(ctx, m)
	case *orderWrite:
		v.write(ctx, m)
	case *marketFetch:
		v.fetchMarket(ctx, m)
	case *orderFetch:
		v.fetchOrder(ctx, m)
	case *openOrdersFetch:
		v.fetchOpenOrders(ctx, m)
	case *deadmanFetch:
		v.fetchAllOpenOrders(ctx, m)
	case *watchAsk:
		v.onWatch(ctx, m)
	case *unwatch:
		delete(v.watches, m.id)
	case *checkKeyRequest:
		userPID, factory, timeout := ctx.Sender(), v.factory, v.timeout
		if userPID == nil {
			return
		}
		offMailbox(ctx, v.logger, m.ctx, timeout, userPID, func(c context.Context) any {
			out := &keyChecked{action: m.action}
			client, err := factory(m.apiKey, m.apiSecret.Reveal())
			if err != nil {
				out.err = messages.AsError(err)
				return out
			}
			out.info, err = client.QueryAPIKey(c)
			out.err = messages.AsError(err)
			return out
		}, func(err *messages.Error) any { return &keyChecked{action: m.action, err: err} })
	case *accountAsk:
		v.read(ctx, m)
	case *lookupOrderRequest:
		v.lookup(ctx, m)
	case *posturePositions:
		v.pollPositions()
	case *venueWake:
	case *crashRequest:
		panic("venue: crash requested by test")
	}
}

// openSession builds the session from the user's committed key.
func (v *venueActor) openSession() {
	v.session, v.keyErr = nil, nil
	s := v.snap.load()
	c, ok := s.CredentialFor(v.env)
	if !ok {
		return
	}
	apiKey, secret, err := openCredential(v.masterKey, s.User, c)
	if err != nil {
		v.keyErr = err
		v.logger.Warn("stored key cannot be opened", "user", s.User, "credential_id", c.ID)
		return
	}
	client, cerr := v.factory(apiKey, secret)
	if cerr != nil {
		v.keyErr = messages.AsError(cerr)
		return
	}
	v.session = client
}

// read serves one account read; without a session (no key) it refuses.
func (v *venueActor) read(ctx actor.Context, m *accountAsk) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	if v.session == nil {
		if v.keyErr != nil {
			ctx.Respond(v.keyErr)
		} else {
			ctx.Respond(state.NoKeyError())
		}
		return
	}
	s := v.session
	call := func(c context.Context) (any, error) {
		switch r := m.req.(type) {
		case *messages.GetBalancesRequest:
			return s.WalletBalance(c)
		case *messages.GetPositionsRequest:
			p, err := s.Positions(c, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: r.Symbol, Limit: r.Limit, Cursor: r.Cursor})
			return &p, err
		case *messages.GetOpenOrdersRequest:
			p, err := s.OpenOrders(c, venue.OrderQuery{Category: r.Category, Symbol: r.Symbol, Limit: r.Limit, Cursor: r.Cursor})
			return &p, err
		case *messages.GetOrderHistoryRequest:
			p, err := s.OrderHistory(c, venue.HistoryQuery{Category: r.Category, Symbol: r.Symbol, Start: r.Start, End: r.End, Limit: r.Limit, Cursor: r.Cursor})
			return &p, err
		case *messages.GetTradesRequest:
			p, err := s.Executions(c, venue.HistoryQuery{Category: r.Category, Symbol: r.Symbol, Start: r.Start, End: r.End, Limit: r.Limit, Cursor: r.Cursor})
			return &p, err
		}
		return nil, messages.InvalidParams("type", "not an account read")
	}
	offMailbox(ctx, v.logger, m.ctx, v.timeout, sender, func(c context.Context) any {
		res, err := call(c)
		if err != nil {
			return messages.AsError(err)
		}
		return res
	}, func(err *messages.Error) any { return err })
}

// noSessionError is why the venue actor has no session: the stored key's
// error, or no key at all.
func (v *venueActor) noSessionError() *messages.Error {
	if v.keyErr != nil {
		return v.keyErr
	}
	return state.NoKeyError()
}

// venueTimeout bounds one venue call by the caller's context and timeout.
func venueTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, timeout)
}
