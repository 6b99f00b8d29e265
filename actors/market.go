package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// MarketSource is what the market-data actor needs from a venue: the public
// endpoints. The composition root serves it from a *venue.Client with
// instrument rules from a *venue.InstrumentCache.
//
// Implementations must be safe for concurrent use: the actor runs each
// request on its own goroutine so that no request blocks its mailbox.
type MarketSource interface {
	Ticker(ctx context.Context, cat messages.Category, symbol string) (*messages.Ticker, error)
	Orderbook(ctx context.Context, cat messages.Category, symbol string, limit int) (*messages.Orderbook, error)
	Klines(ctx context.Context, req messages.GetKlinesRequest) ([]messages.Kline, error)
	Instrument(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error)
}

// crashRequest makes an actor panic inside Receive. It is unexported, so only
// this package's tests can send it; it proves that supervision answers the
// crashing caller and restarts the actor.
type crashRequest struct{}

// marketAsk is a market read with the caller's context.
type marketAsk struct {
	ctx context.Context
	req any
}

// marketActor is the one path from the server to the venue's public
// endpoints. Each request is served on its own goroutine with the caller's
// context and a deadline; the reply goes straight to the requester.
type marketActor struct {
	source  MarketSource
	timeout time.Duration
	logger  *slog.Logger
}

func (m *marketActor) Receive(ctx actor.Context) {
	var parent context.Context
	msg := ctx.Message()
	if a, ok := msg.(*marketAsk); ok {
		parent, msg = a.ctx, a.req
	}
	switch req := msg.(type) {
	case *messages.GetTickerRequest:
		m.serve(ctx, parent, func(c context.Context) any {
			t, err := m.source.Ticker(c, req.Category, req.Symbol)
			return &messages.GetTickerResponse{Ticker: t, Err: messages.AsError(err)}
		})
	case *messages.GetOrderbookRequest:
		m.serve(ctx, parent, func(c context.Context) any {
			b, err := m.source.Orderbook(c, req.Category, req.Symbol, req.Limit)
			return &messages.GetOrderbookResponse{Book: b, Err: messages.AsError(err)}
		})
	case *messages.GetKlinesRequest:
		m.serve(ctx, parent, func(c context.Context) any {
			k, err := m.source.Klines(c, *req)
			return &messages.GetKlinesResponse{Klines: k, Err: messages.AsError(err)}
		})
	case *messages.GetInstrumentRequest:
		m.serve(ctx, parent, func(c context.Context) any {
			in, err := m.source.Instrument(c, req.Category, req.Symbol)
			return &messages.GetInstrumentResponse{Instrument: in, Err: messages.AsError(err)}
		})
	case *crashRequest:
		panic("market: crash requested by test")
	}
}

func (m *marketActor) serve(ctx actor.Context, parent context.Context, call func(context.Context) any) {
	if s := ctx.Sender(); s != nil {
		offMailbox(ctx, m.logger, parent, m.timeout, s, call, func(e *messages.Error) any { return e })
	}
}

// offMailbox runs call on its own goroutine, bounded by the caller's
// context (parent, may be nil) and timeout, and sends its result to to, so
// the actor's mailbox never waits on the network. A panic in call is
// logged and answered with onPanic(internal_error) instead of killing the
// process.
func offMailbox(ctx actor.Context, logger *slog.Logger, parent context.Context, timeout time.Duration, to *actor.PID, call func(context.Context) any, onPanic func(*messages.Error) any) {
	root := ctx.ActorSystem().Root
	go func() {
		var res any
		defer func() {
			if p := recover(); p != nil {
				logger.Error("venue request panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res = onPanic(messages.Internal(fmt.Errorf("venue request panicked")))
			}
			root.Send(to, res)
		}()
		c, cancel := venueTimeout(parent, timeout)
		defer cancel()
		res = call(c)
	}()
}
